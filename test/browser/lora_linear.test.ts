// Chromium suite: LoRA linear cases on SwiftShader (W stays f32 there: no shader-f16).
import { it } from 'vitest';
import { loraLinearCases } from '../shared/cases/lora_linear.ts';
import { reportErrors } from '../shared/cases/helpers.ts';
import { registerCases } from '../shared/register.ts';

registerCases(loraLinearCases, it);
it('lora_linear: largest errors (report)', async () => reportErrors('lora_linear (chromium)'));
