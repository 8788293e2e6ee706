// Deno suite: LayerNorm and RMSNorm cases on Deno's WebGPU (Mesa llvmpipe here).
import { normCases } from '../shared/cases/norm.ts';
import { registerCases } from '../shared/register.ts';

registerCases(normCases);
