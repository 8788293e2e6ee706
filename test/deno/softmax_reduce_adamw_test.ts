// Deno suite: row softmax, reductions (sums, global L2 norm) and fused AdamW on Deno's WebGPU.
import { adamwCases } from '../shared/cases/adamw.ts';
import { softmaxReduceCases } from '../shared/cases/softmax_reduce.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...softmaxReduceCases, ...adamwCases]);
