// Deno suite: matmul cases on Deno's WebGPU (Mesa llvmpipe here, with shader-f16).
import { matmulCases } from '../shared/cases/matmul.ts';
import { reportErrors } from '../shared/cases/helpers.ts';
import { registerCases } from '../shared/register.ts';

registerCases(matmulCases);
Deno.test({ name: 'matmul: largest errors (report)', sanitizeOps: false, sanitizeResources: false, fn: () => reportErrors('matmul (deno)') });
