// Deno suite: residual add-and-scale cases on Deno's WebGPU (Mesa llvmpipe here).
import { residualCases } from '../shared/cases/residual.ts';
import { registerCases } from '../shared/register.ts';

registerCases(residualCases);
