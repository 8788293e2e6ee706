// Chromium suite: row softmax, reductions (sums, global L2 norm) and fused AdamW on SwiftShader.
import { it } from 'vitest';
import { adamwCases } from '../shared/cases/adamw.ts';
import { softmaxReduceCases } from '../shared/cases/softmax_reduce.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...softmaxReduceCases, ...adamwCases], it);
