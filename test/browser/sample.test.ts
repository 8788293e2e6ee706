// Chromium suite: GPU sampler cases on SwiftShader, and the large-vocabulary ones.
import { it } from 'vitest';
import { largeVocabSampleCases } from '../shared/cases/large_vocab.ts';
import { sampleCases } from '../shared/cases/sample.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...sampleCases, ...largeVocabSampleCases], it);
