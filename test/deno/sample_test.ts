// Deno suite: GPU sampler cases on Deno's WebGPU (Mesa llvmpipe here).
import { sampleCases } from '../shared/cases/sample.ts';
import { registerCases } from '../shared/register.ts';

registerCases(sampleCases);
