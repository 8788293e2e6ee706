/**
 * The supervised warm start over a TrainingClient: SFT steps on trajectories (loss on their policy
 * tokens) with a deterministic minibatch order and a learning-rate schedule. Each step is
 * train_step.ts's, the one the RL job takes. Built from client calls only.
 */
import { crossEntropyLoss } from '../algorithms/loss_spec.ts';
import { sftDatums } from '../algorithms/sft.ts';
import type { Trajectory } from '../env/types.ts';
import { Rng } from '../util/rng.ts';
import type { OptimStepOptions, TrainingClient } from './clients.ts';
import { fitting, packForTraining, type PackSettings, type StepOutcome, trainStep } from './train_step.ts';

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
  readonly schedule?: LrSchedule;
  readonly seed: number;
  readonly pack: PackSettings;
  readonly onStep?: (step: number, outcome: StepOutcome) => void;
  /** Resume: the steps already done (their minibatches are skipped; the order is the same). */
  readonly startStep?: number;
  /** Awaited after each step (after onStep), e.g. to checkpoint. */
  readonly afterStep?: (step: number, outcome: StepOutcome) => Promise<void>;
}

/** The learning-rate schedules scheduledLr knows. */
export const LR_SCHEDULES = ['constant', 'cosine'] as const;
export type LrSchedule = (typeof LR_SCHEDULES)[number];

/** The learning rate of step `step` of `steps` under a schedule (see SftOptions.schedule). */
export function scheduledLr(lr: number, step: number, steps: number, schedule: LrSchedule = 'constant'): number {
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
