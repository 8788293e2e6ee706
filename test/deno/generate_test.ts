// Deno suite: generation cases (prefill, KV-cache decode, sampler, stops, SampleFn) on Deno's WebGPU (Mesa llvmpipe here).
import { generateCases } from '../shared/cases/generate.ts';
import { registerCases } from '../shared/register.ts';

registerCases(generateCases);
