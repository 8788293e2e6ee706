// Chromium suite: generation cases (prefill, KV-cache decode, sampler, stops, SampleFn) on SwiftShader.
import { it } from 'vitest';
import { generateCases } from '../shared/cases/generate.ts';
import { registerCases } from '../shared/register.ts';

registerCases(generateCases, it);
