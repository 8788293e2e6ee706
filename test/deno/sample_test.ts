// Deno suite: GPU sampler cases on Deno's WebGPU (Mesa llvmpipe here), and the large-vocabulary ones.
import { largeVocabSampleCases } from '../shared/cases/large_vocab.ts';
import { sampleCases } from '../shared/cases/sample.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...sampleCases, ...largeVocabSampleCases]);
