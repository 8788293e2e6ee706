// Chromium suite: the engine's training path vs the tfjs reference model (SwiftShader).
import { it } from 'vitest';
import { modelParityCases } from '../shared/cases/model_parity.ts';
import { registerCases } from '../shared/register.ts';

registerCases(modelParityCases, it);
