// Deno suite: the engine against the Hugging Face transformers goldens (test/goldens/; Mesa llvmpipe here).
import { goldenCases } from '../shared/cases/goldens.ts';
import { registerCases } from '../shared/register.ts';

registerCases(goldenCases);
