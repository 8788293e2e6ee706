// Chromium suite: estimateTrainingMemory within 10% of a Qwen2.5-shaped LoRA step's measured peak, on SwiftShader.
import { it } from 'vitest';
import { memoryFitCases } from '../shared/cases/memory_fit.ts';
import { registerCases } from '../shared/register.ts';

registerCases(memoryFitCases, it);
