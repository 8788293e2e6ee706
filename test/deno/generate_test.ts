// Deno suite: generation cases (prefill, KV-cache decode, sampler, stops, SampleFn; f16 weights) on Deno's WebGPU (Mesa llvmpipe here).
import { generateCases, generateF16Cases, generateReportCase } from '../shared/cases/generate.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...generateCases, ...generateF16Cases, generateReportCase]);
