// Chromium suite: the Trainer (training steps, determinism, resume, skipped steps, memory) on SwiftShader.
import { it } from 'vitest';
import { trainerCases } from '../shared/cases/trainer.ts';
import { registerCases } from '../shared/register.ts';

registerCases(trainerCases, it);
