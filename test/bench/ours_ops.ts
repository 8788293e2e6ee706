/**
 * Our side of each benchmark: an adapter per op from src/ops/, added as each op lands.
 * A benchmark without an entry is reported as "op not implemented yet".
 *
 * Every adapter uploads the inputs and allocates every output and scratch tensor once; an
 * iteration only records the op's dispatches.
 */
import type { GpuContext } from '../../src/gpu/device.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../../src/gpu/tensor.ts';
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
  policy_loss_fwd_bwd: policyLossAdapter,
};
