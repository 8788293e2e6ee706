/**
 * The loss of a training call on the GPU: the fused policy loss over the logits (dlogits written
 * in place: no second [N, V] tensor) and, for a PPO job with a value head, the clipped value loss.
 * The logits are made and used a block of rows at a time (acts.logits holds one block): the
 * caller's `head` records each block's logits and, when training, the head's backward from its
 * gradient (forward.ts headLogits, backward.ts headBackward).
 *
 * The kernel takes the job's LossSpec (src/algorithms/loss_spec.ts) as it is, but with 'sum'
 * aggregation and the batch's tokenScaleBT as token weights: pack.ts folds token_mean /
 * sequence_mean over the whole step into those weights, so a micro-batch's loss and gradients are
 * exactly its share of the step's. What each kind reads from the batch is a row of NEEDS.
 *
 * The value loss kernel divides by the micro-batch's count of weighted tokens; its coefficient is
 * multiplied by that count (known on the host) so it too is Σ tokenScale·ℓ_v·coef (up to the
 * rounding of coef·count/count in f32).
 */
import { ConfigError } from '../errors.ts';
import { type LogitsBlocks, POLICY_STATS, POLICY_STATS_SIZE, policyLoss, policyLossScratchSize } from '../ops/policy_loss.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { VALUE_STATS, valueLoss } from '../ops/value_loss.ts';
import type { LossSpec, PolicyLossSpec } from '../algorithms/loss_spec.ts';
import type { BatchNeeds, GpuBatch } from './batch.ts';
import type { Activations } from './forward.ts';
import { type Arena, view } from './layers.ts';
import type { StepStats } from './trainer.ts';

type Kind = LossSpec['kind'];

/** The batch inputs each loss kind reads; dpo, which the kernel does not compute, is refused. */
const NEEDS: { readonly [K in Kind]: (spec: Extract<LossSpec, { kind: K }>) => BatchNeeds } = {
  cross_entropy: () => ({}),
  importance_sampling: () => ({ policy: true }),
  ppo: (s) => ({ policy: true, ...(s.value ? { value: true, oldValues: s.value.clip !== null } : {}) }),
  // Without its KL term GRPO needs no reference log-probs (the kernel binds the sampling policy's).
  grpo: (s) => ({ policy: true, ref: s.klBeta !== 0 }),
  dpo: () => {
    throw new ConfigError('spec.kind', 'dpo reduces per pair, not per token: compute log-probs (computeLogprobs), then train with importance_sampling');
  },
};

function needsOf(spec: LossSpec): BatchNeeds {
  const f = (NEEDS as Record<string, (s: LossSpec) => BatchNeeds>)[spec?.kind];
  if (!f) throw new ConfigError('spec.kind', `unknown loss kind "${String(spec?.kind)}"; known: ${Object.keys(NEEDS).join(', ')}`);
  return f(spec);
}

/** The kernel's spec: the job's, summed under pack.ts's token scales (needsOf refused dpo). */
function kernelSpec(spec: LossSpec): PolicyLossSpec<'sum'> {
  needsOf(spec);
  return { ...(spec as PolicyLossSpec), aggregation: 'sum' };
}

/** The batch inputs the spec reads. A value spec without a value head is an error. */
export function lossNeeds(spec: LossSpec, hasValueHead: boolean): BatchNeeds {
  const needs = needsOf(spec); // refuses dpo before anything is uploaded
  if (needs.value && !hasValueHead) throw new ConfigError('spec.value', 'a value loss needs a job with a value head (TrainerOptions.valueHead)');
  return needs;
}

export interface LossReads {
  /** [N] log p(target). */
  readonly logprobs: Tensor;
  /** [N] dL/dvalues when the job has a value head (zeros without a value loss), else null. */
  readonly dvalues: Tensor | null;
  /** Records the reads of the scalars; the returned function resolves them after submit. */
  read(rec: Recorder): () => Promise<{ loss: number; stats: StepStats }>;
}

/**
 * Records the loss: per block of rows, head.produce's logits, then dlogits over them (in place),
 * then head.consume; logprobs and stats over all tokens; the value loss when asked.
 */
export function recordLoss(rec: Recorder, arena: Arena, b: GpuBatch, acts: Activations, spec: LossSpec, needs: BatchNeeds,
  head: Omit<LogitsBlocks, 'rows'>): LossReads {
  const N = b.N;
  const a = (shape: number[], label: string) => arena.alloc(shape, 'f32', label);
  const out = {
    dlogits: acts.logits, logprobs: a([N], 'logprobs'), entropy: a([N], 'entropy'), loss: a([N], 'token loss'),
    stats: a([POLICY_STATS_SIZE], 'policy stats'), scratch: a([policyLossScratchSize(N)], 'policy scratch'),
  };
  policyLoss(rec, out, {
    logits: acts.logits, targets: b.targets, weights: b.weights,
    oldLogprobs: b.oldLogprobs, advantages: b.advantages, refLogprobs: b.refLogprobs,
  }, kernelSpec(spec), {}, { rows: acts.logits.shape[0], ...head });
  let dvalues: Tensor | null = null;
  let vstats: Tensor | null = null;
  if (acts.values) {
    const value = spec.kind === 'ppo' ? spec.value : undefined;
    if (value && needs.value) {
      dvalues = a([N], 'dvalues');
      vstats = a([2], 'value stats');
      valueLoss(rec, { dvalues, stats: vstats }, {
        values: view(acts.values, [N]), oldValues: b.oldValues, returns: b.returns!, weights: b.weights,
      }, { clip: value.clip, coef: value.coef * b.weightedTokens });
    } else {
      // No value term: the head's gradients are still written (as zeros) so accumulation stays exact.
      dvalues = arena.upload(new Float32Array(N), [N], 'dvalues (none)');
    }
  }
  return {
    logprobs: out.logprobs,
    dvalues,
    read(r: Recorder) {
      const ps = r.read(out.stats);
      const vs = vstats ? r.read(vstats) : null;
      return async () => {
        const s = (await ps) as Float32Array;
        const v = vs ? ((await vs) as Float32Array) : null;
        const stats: StepStats = {
          clipFraction: s[POLICY_STATS.clipFraction], approxKl: s[POLICY_STATS.approxKl], refKl: s[POLICY_STATS.refKl], entropy: s[POLICY_STATS.entropy],
          ...(v ? { valueLoss: v[VALUE_STATS.loss], valueClipFraction: v[VALUE_STATS.clipFraction] } : {}),
        };
        return { loss: s[POLICY_STATS.loss] + (v ? v[VALUE_STATS.loss] : 0), stats };
      };
    },
  };
}
