// Deno suite: the Trainer (training steps, determinism, resume, skipped steps, memory) on Mesa llvmpipe.
import { trainerCases } from '../shared/cases/trainer.ts';
import { registerCases } from '../shared/register.ts';

registerCases(trainerCases);
