// Deno suite: LoRA linear cases on Deno's WebGPU (Mesa llvmpipe here, with shader-f16).
import { loraLinearCases } from '../shared/cases/lora_linear.ts';
import { reportErrors } from '../shared/cases/helpers.ts';
import { registerCases } from '../shared/register.ts';

registerCases(loraLinearCases);
Deno.test({ name: 'lora_linear: largest errors (report)', sanitizeOps: false, sanitizeResources: false, fn: () => reportErrors('lora_linear (deno)') });
