// Deno suite: the sampler's vocabulary mask (kernel and generate's vocabMask) on Deno's WebGPU.
import { vocabMaskCases } from '../shared/cases/vocab_mask.ts';
import { registerCases } from '../shared/register.ts';

registerCases(vocabMaskCases);
