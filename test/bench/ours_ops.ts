/**
 * Our side of each benchmark: an adapter per op from src/ops/, added as each op lands.
 * A benchmark without an entry is reported as "op not implemented yet".
 *
 * Every adapter uploads the inputs and allocates every output and scratch tensor once; an
 * iteration only records the op's dispatches.
 */
import type { GpuContext } from '../../src/gpu/device.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../../src/gpu/tensor.ts';
import { attentionBackward, attentionForward } from '../../src/ops/attention.ts';
import { loraLinearBackward, loraLinearForward } from '../../src/ops/lora_linear.ts';
import { matmul } from '../../src/ops/matmul.ts';
import { POLICY_STATS, POLICY_STATS_SIZE, policyLoss, policyLossScratchSize } from '../../src/ops/policy_loss.ts';
import type { BenchCase, BenchName, Inputs } from './cases.ts';
import type { OurAdapter, OurCase } from './ours.ts';

const OWNER = 'bench';

/** Upload and allocate through one list, so dispose() frees everything. */
function allocator(ctx: GpuContext) {
  const held: Tensor[] = [];
  const keep = (t: Tensor) => (held.push(t), t);
  return {
    held,
    up: (data: Float32Array | Int32Array, shape: number[], label: string) => keep(tensorFrom(ctx, data, shape, { owner: OWNER, label })),
    empty: (shape: number[], label: string) => keep(emptyTensor(ctx, shape, 'f32', { owner: OWNER, label })),
  };
}

type Case<N extends BenchName> = Extract<BenchCase, { name: N }>;

/** C = A·B, f32, written (=). */
function matmulAdapter(ctx: GpuContext, c: BenchCase, inp: Inputs): OurCase {
  const { M, K, N } = (c as Case<'matmul'>).dims;
  const m = allocator(ctx);
  const a = m.up(inp.a, [M, K], 'a');
  const b = m.up(inp.b, [K, N], 'b');
  const out = m.empty([M, N], 'c');
  return { record: (rec) => matmul(rec, out, a, b), outputs: { c: out }, held: m.held };
}

/** LoRA linear forward (saving u = x·Aᵀ) and backward to dx, dA, dB with W frozen (no dW, db), all written (=). */
function loraAdapter(ctx: GpuContext, c: BenchCase, inp: Inputs): OurCase {
  const { N, Cin, Cout, R, alpha } = (c as Case<'lora_linear_fwd_bwd'>).dims;
  const m = allocator(ctx);
  const x = m.up(inp.x, [N, Cin], 'x');
  const w = m.up(inp.w, [Cout, Cin], 'w');
  const a = m.up(inp.a, [R, Cin], 'A');
  const b = m.up(inp.b, [Cout, R], 'B');
  const dy = m.up(inp.dy, [N, Cout], 'dy');
  const y = m.empty([N, Cout], 'y');
  const u = m.empty([N, R], 'u');
  const dx = m.empty([N, Cin], 'dx');
  const dA = m.empty([R, Cin], 'dA');
  const dB = m.empty([Cout, R], 'dB');
  return {
    record: (rec) => {
      loraLinearForward(rec, y, u, x, w, a, b, { alpha });
      loraLinearBackward(rec, dx, dA, dB, null, null, dy, x, u, w, a, b, { alpha });
    },
    outputs: { y, dx, dA, dB },
    held: m.held,
  };
}

/** Causal MHA forward (saving the LSE) then backward, flash style: no T×T tensor anywhere. */
function attentionAdapter(ctx: GpuContext, c: BenchCase, inp: Inputs): OurCase {
  const { B, T, H, D } = (c as Case<'attention_fwd_bwd'>).dims;
  const m = allocator(ctx);
  const shape = [B, T, H, D];
  const q = m.up(inp.q, shape, 'q');
  const k = m.up(inp.k, shape, 'k');
  const v = m.up(inp.v, shape, 'v');
  const dout = m.up(inp.dout, shape, 'dout');
  const out = m.empty(shape, 'out');
  const lse = m.empty([B, H, T], 'lse');
  const dq = m.empty(shape, 'dq');
  const dk = m.empty(shape, 'dk');
  const dv = m.empty(shape, 'dv');
  const work = m.empty([B, H, T, 2], 'work');
  return {
    record: (rec) => {
      attentionForward(rec, out, lse, q, k, v);
      attentionBackward(rec, dq, dk, dv, work, dout, q, k, v, out, lse);
    },
    outputs: { out, dq, dk, dv },
    held: m.held,
  };
}

/** PPO clipped surrogate, token mean, through the fused policy loss (which also writes log-probs, entropy and stats). */
function policyLossAdapter(ctx: GpuContext, c: BenchCase, inp: Inputs): OurCase {
  const { N, V, eps } = (c as Case<'policy_loss_fwd_bwd'>).dims;
  const m = allocator(ctx);
  const inputs = {
    logits: m.up(inp.logits, [N, V], 'logits'),
    targets: m.up(inp.targets, [N], 'targets'),
    weights: m.up(new Float32Array(N).fill(1), [N], 'weights'),
    oldLogprobs: m.up(inp.oldLogprobs, [N], 'oldLogprobs'),
    advantages: m.up(inp.advantages, [N], 'advantages'),
  };
  const out = {
    dlogits: m.empty([N, V], 'dlogits'),
    logprobs: m.empty([N], 'logprobs'),
    entropy: m.empty([N], 'entropy'),
    loss: m.empty([N], 'loss'),
    stats: m.empty([POLICY_STATS_SIZE], 'stats'),
    scratch: m.empty([policyLossScratchSize(N)], 'scratch'),
  };
  return {
    record: (rec) => policyLoss(rec, out, inputs, { kind: 'ppo', aggregation: 'token_mean', clipLow: eps, clipHigh: eps }),
    outputs: { loss: out.stats, dlogits: out.dlogits },
    select: { loss: (a) => a.slice(POLICY_STATS.loss, POLICY_STATS.loss + 1) },
    held: m.held,
  };
}

export const OUR_OPS: Partial<Record<BenchName, OurAdapter>> = {
  matmul: matmulAdapter,
  lora_linear_fwd_bwd: loraAdapter,
  attention_fwd_bwd: attentionAdapter,
  policy_loss_fwd_bwd: policyLossAdapter,
};
