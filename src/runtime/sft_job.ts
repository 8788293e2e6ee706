/**
 * Supervised steps over a TrainingClient, and the packing helpers the RL job shares: datums →
 * fixed-shape micro-batches → forwardBackward each → one optimStep. Built from client calls only.
 *
 * Shapes: B rows per micro-batch, T positions (the step's longest datum rounded up to 16, at most
 * the model's context), one datum per row (packDatums). The step's loss is the sum of the
 * micro-batches' losses: packDatums' tokenScaleBT already weighs every token for the whole step.
 */
import type { Datum } from '../algorithms/datum.ts';
import { type Aggregation, type LossSpec, crossEntropyLoss } from '../algorithms/loss_spec.ts';
import { type PackedBatch, type PackedStep, packDatums } from '../algorithms/pack.ts';
import { sftDatums } from '../algorithms/sft.ts';
import type { Trajectory } from '../env/types.ts';
import { Rng } from '../util/rng.ts';
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
 * instead of padding every row to the longest. The loss and gradients are those of one datum per
 * row; only fewer padded positions are computed.
 */
export function packForTraining(datums: readonly Datum[], pack: PackSettings, seed: number, aggregation: Aggregation): PackedStep {
  const seqLen = Math.min(pack.maxSeqLen, 2 * seqLenFor(datums, pack.maxSeqLen));
  return packDatums(datums, { rows: pack.rows, seqLen, seed, padId: pack.padId, aggregation, concat: true });
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

export interface SftOptions {
  readonly steps: number;
  /** Datums per step (drawn without replacement, reshuffled each epoch). */
  readonly batchSize: number;
  readonly optim: OptimStepOptions;
  /**
   * Learning-rate schedule over the steps: 'constant' (optim.lr throughout, the default) or
   * 'cosine' (linear warm-up over the first 5% of steps, then a cosine decay to 10% of optim.lr,
   * as nanoGPT trains) — a function of the step index alone, so resuming keeps it.
   */
  readonly schedule?: 'constant' | 'cosine';
  readonly seed: number;
  readonly pack: PackSettings;
  readonly onStep?: (step: number, outcome: StepOutcome) => void;
  /** Resume: the steps already done (their minibatches are skipped; the order is the same). */
  readonly startStep?: number;
  /** Awaited after each step (after onStep), e.g. to checkpoint. */
  readonly afterStep?: (step: number, outcome: StepOutcome) => Promise<void>;
}

/** The learning rate of step `step` of `steps` under a schedule (see SftOptions.schedule). */
export function scheduledLr(lr: number, step: number, steps: number, schedule: 'constant' | 'cosine' = 'constant'): number {
  if (schedule === 'constant') return lr;
  const warmup = Math.max(1, Math.round(0.05 * steps));
  if (step < warmup) return (lr * (step + 1)) / warmup;
  const progress = steps - warmup <= 1 ? 1 : (step - warmup) / (steps - warmup - 1);
  return lr * (0.1 + 0.45 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
}

/** Deterministic minibatch order over `n` items: epoch-wise shuffles from the seed. */
export function minibatchOrder(n: number, batchSize: number, steps: number, seed: number): number[][] {
  const rng = new Rng(seed, 0x5f7);
  const out: number[][] = [];
  let pool: number[] = [];
  for (let s = 0; s < steps; s++) {
    const batch: number[] = [];
    while (batch.length < Math.min(batchSize, n)) {
      if (pool.length === 0) {
        pool = Array.from({ length: n }, (_, i) => i);
        rng.shuffle(pool);
      }
      batch.push(pool.pop()!);
    }
    out.push(batch);
  }
  return out;
}

/**
 * SFT on trajectories (loss on their policy tokens); returns the loss of each step it ran (from
 * `startStep`: the minibatch order depends on the seed alone, so a resumed run sees the same batches).
 */
export async function runSft(client: TrainingClient, trajs: readonly Trajectory[], o: SftOptions): Promise<{ lossCurve: number[]; tokens: number; seconds: number }> {
  const datums = fitting(sftDatums(trajs), o.pack.maxSeqLen);
  const order = minibatchOrder(datums.length, o.batchSize, o.steps, o.seed);
  const lossCurve: number[] = [];
  let tokens = 0;
  let seconds = 0;
  const loss = crossEntropyLoss();
  for (let s = o.startStep ?? 0; s < o.steps; s++) {
    const chosen = order[s].map((i) => datums[i]);
    const packed = packForTraining(chosen, o.pack, o.seed + s, 'token_mean');
    const r = await trainStep(client, packed.batches, loss, { ...o.optim, lr: scheduledLr(o.optim.lr, s, o.steps, o.schedule) });
    lossCurve.push(r.loss);
    tokens += r.tokens;
    seconds += r.seconds;
    o.onStep?.(s, r);
    await o.afterStep?.(s, r);
  }
  return { lossCurve, tokens, seconds };
}
