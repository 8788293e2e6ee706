// Chromium suite: generation cases (prefill, KV-cache decode, sampler, stops, SampleFn) on SwiftShader (no shader-f16).
import { it } from 'vitest';
import { generateCases, generateReportCase } from '../shared/cases/generate.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...generateCases, generateReportCase], it);
