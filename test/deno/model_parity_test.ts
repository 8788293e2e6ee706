// Deno suite: the engine's training path vs the tfjs reference model (Mesa llvmpipe here).
import { modelParityCases } from '../shared/cases/model_parity.ts';
import { registerCases } from '../shared/register.ts';

registerCases(modelParityCases);
