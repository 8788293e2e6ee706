// Deno suite: embedding lookup and scatter-add backward cases on Deno's WebGPU (Mesa llvmpipe here).
import { embeddingCases } from '../shared/cases/embedding.ts';
import { registerCases } from '../shared/register.ts';

registerCases(embeddingCases);
