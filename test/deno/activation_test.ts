// Deno suite: GELU and SwiGLU cases on Deno's WebGPU (Mesa llvmpipe here).
import { activationCases } from '../shared/cases/activation.ts';
import { registerCases } from '../shared/register.ts';

registerCases(activationCases);
