/**
 * One training step over a TrainingClient, shared by the SFT warm start (sft_job.ts) and the RL
 * job (rl_job.ts): datums → fixed-shape micro-batches → forwardBackward each → one optimStep; and
 * the forward-only log-probs (and values) of trajectories that RL needs for its old-policy and
 * reference terms. Built from client calls only.
 *
 * Shapes: B rows per micro-batch, T positions (the step's longest datum rounded up to 16, at most
 * the model's context), one datum per row (packDatums). The step's loss is the sum of the
 * micro-batches' losses: packDatums' tokenScaleBT already weighs every token for the whole step.
 */
import type { Datum } from '../algorithms/datum.ts';
import type { Aggregation, LossSpec } from '../algorithms/loss_spec.ts';
import { type PackedBatch, type PackedStep, packDatums } from '../algorithms/pack.ts';
import { sftDatums } from '../algorithms/sft.ts';
import type { Trajectory, TrajectoryGroup } from '../env/types.ts';
import type { ForwardBackwardResult, OptimStepOptions, TrainingClient } from './clients.ts';
import { type StepLossStats, stepLossStats } from './metrics.ts';

export interface PackSettings {
  /** B: rows per micro-batch. */
  readonly rows: number;
  /** The model's context: the longest T allowed. */
  readonly maxSeqLen: number;
  readonly padId: number;
}

/** T for a set of datums: the longest rounded up to a multiple of 16, capped at the context. */
export function seqLenFor(datums: readonly Datum[], maxSeqLen: number): number {
  const longest = datums.reduce((m, d) => Math.max(m, d.targetsT.length), 1);
  return Math.min(maxSeqLen, Math.ceil(longest / 16) * 16);
}

/**
 * A training step's micro-batches: several datums per row (packDatums' concat), in rows of twice
 * the step's longest datum (at most the context), so that short and long sequences share rows
 * instead of padding every row to the longest — unless rows of the longest datum alone compute
 * fewer positions (rows × T over the batches): when the context caps the wide rows below two of
 * the longest datums, each would hold one datum anyway, padded further. The loss and gradients are
 * those of one datum per row; only fewer padded positions are computed.
 */
export function packForTraining(datums: readonly Datum[], pack: PackSettings, seed: number, aggregation: Aggregation): PackedStep {
  const longest = seqLenFor(datums, pack.maxSeqLen);
  const packed = (seqLen: number) => packDatums(datums, { rows: pack.rows, seqLen, seed, padId: pack.padId, aggregation, concat: true });
  const wide = packed(Math.min(pack.maxSeqLen, 2 * longest));
  if (wide.batches.length === 0 || wide.batches[0].seqLen === longest) return wide;
  const tight = packed(longest);
  return packedPositions(tight) < packedPositions(wide) ? tight : wide;
}

/** Positions a packed step computes, padding included: Σ rows × T over its micro-batches. */
export function packedPositions(step: PackedStep): number {
  return step.batches.reduce((s, b) => s + b.rows * b.seqLen, 0);
}

/** Datums that fit the context (a context-limited trajectory can be one token over after shifting). */
export function fitting(datums: readonly Datum[], maxSeqLen: number): Datum[] {
  return datums.filter((d) => d.targetsT.length <= maxSeqLen);
}

/** Real (non-padding) positions of a step: what the engine computed on, for tokens/s. */
export function realTokens(batches: readonly PackedBatch[]): number {
  return batches.reduce((s, b) => s + b.lengthB.reduce((a, n) => a + n, 0), 0);
}

export interface StepOutcome {
  /** Σ over micro-batches: the step's loss. */
  readonly loss: number;
  readonly gradNorm: number;
  readonly skipped: boolean;
  /** Real positions forwarded and backpropagated. */
  readonly tokens: number;
  readonly seconds: number;
  /** Token-weighted means of the loss kernel's statistics over the micro-batches (metrics.ts). */
  readonly stats: StepLossStats;
}

/** forwardBackward every micro-batch, then one optimStep. */
export async function trainStep(client: TrainingClient, batches: readonly PackedBatch[], loss: LossSpec, optim: OptimStepOptions): Promise<StepOutcome> {
  const t0 = performance.now();
  let total = 0;
  const results: ForwardBackwardResult[] = [];
  for (const b of batches) {
    const fb = await client.forwardBackward(b, loss);
    total += fb.loss;
    results.push(fb);
  }
  const r = await client.optimStep(optim);
  return { loss: total, gradNorm: r.gradNorm, skipped: r.skipped, tokens: realTokens(batches), seconds: (performance.now() - t0) / 1000, stats: stepLossStats(results) };
}

/**
 * Per-trajectory [T] target-aligned log-probs (and values, when the client has a value head) under
 * the client's current weights — forward only. Row order is recovered through sequenceIdB.
 */
export async function forwardTrajectories(
  client: TrainingClient,
  trajs: readonly Trajectory[],
  pack: PackSettings,
): Promise<{ logprobsNT: number[][]; valuesNT: number[][] | null }> {
  const datums = sftDatums(trajs);
  const seqLen = seqLenFor(datums, pack.maxSeqLen);
  const step = packDatums(datums, { rows: pack.rows, seqLen, seed: 0, padId: pack.padId, aggregation: 'token_mean', shuffle: false });
  const logprobsNT: number[][] = trajs.map(() => []);
  let valuesNT: number[][] | null = null;
  for (const b of step.batches) {
    const r = await client.computeLogprobs(b);
    if (r.valuesBT && valuesNT === null) valuesNT = trajs.map(() => []);
    for (let row = 0; row < b.rows; row++) {
      const id = b.sequenceIdB[row];
      if (id < 0) continue;
      const o = row * b.seqLen;
      const n = datums[id].targetsT.length;
      logprobsNT[id] = Array.from(r.logprobsBT.subarray(o, o + n));
      if (valuesNT && r.valuesBT) valuesNT[id] = Array.from(r.valuesBT.subarray(o, o + n));
    }
  }
  return { logprobsNT, valuesNT };
}

/**
 * `groups` with each trajectory's `logprobsT` replaced by the client's current log-probs of its
 * tokens over the whole vocabulary (token-aligned, 0 off its policy tokens): the old-policy terms
 * of an update whose actions were sampled from the policy renormalised over a few ids
 * (SampleRequest.allowedTokens), whose sampled log-probs are that distribution's, not the one the
 * loss computes. The rest of each trajectory is unchanged.
 */
export async function withPolicyLogprobs(client: TrainingClient, groups: readonly TrajectoryGroup[], pack: PackSettings): Promise<TrajectoryGroup[]> {
  const trajs = groups.flatMap((g) => g.trajectories);
  if (trajs.length === 0) return [...groups];
  const { logprobsNT } = await forwardTrajectories(client, trajs, pack);
  const of = new Map(trajs.map((t, i) => [t, logprobsNT[i]] as const));
  return groups.map((g) => ({
    ...g,
    trajectories: g.trajectories.map((t) => {
      const lp = of.get(t)!;
      return { ...t, logprobsT: t.policyMaskT.map((m, i) => (i > 0 && m !== 0 ? lp[i - 1] : 0)) };
    }),
  }));
}
