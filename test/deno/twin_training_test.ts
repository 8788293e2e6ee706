// Deno suite: pretrained-layout twins (llama32, qwen3, gemma3) load and train LoRA steps (Mesa llvmpipe here).
import { twinTrainingCases } from '../shared/cases/twin_training.ts';
import { registerCases } from '../shared/register.ts';

registerCases(twinTrainingCases);
