// Chromium suite: GPU sampler cases on SwiftShader.
import { it } from 'vitest';
import { sampleCases } from '../shared/cases/sample.ts';
import { registerCases } from '../shared/register.ts';

registerCases(sampleCases, it);
