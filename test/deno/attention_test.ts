// Deno suite: attention (forward, backward, decode) and RoPE cases on Deno's WebGPU.
import { attentionCases } from '../shared/cases/attention.ts';
import { ropeCases } from '../shared/cases/rope.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...attentionCases, ...ropeCases]);
