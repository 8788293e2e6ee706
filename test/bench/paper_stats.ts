/**
 * The arithmetic of the `paper` part, as pure functions (Node unit tests check them against
 * hand-computed values): mean ± sd over seeds, the median training-step time, issue 8's verdicts,
 * bitwise comparison of curves, step metrics and tensors.
 */
import type { StepMetrics } from '../../src/runtime/rl_job.ts';
import { median } from './harness.ts';

/** Mean and sample standard deviation (n − 1); the sd of fewer than two values is NaN (no spread to measure). */
export function meanSd(xs: readonly number[]): { mean: number; sd: number } {
  if (xs.length === 0) throw new RangeError('meanSd: no values');
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length < 2) return { mean, sd: NaN };
  const ss = xs.reduce((a, x) => a + (x - mean) ** 2, 0);
  return { mean, sd: Math.sqrt(ss / (xs.length - 1)) };
}

/**
 * Seconds per training step: the median over the RL steps that trained (forward/backward of every
 * micro-batch plus the optimizer step — StepMetrics.trainSeconds; sampling excluded). Steps whose
 * groups all had equal rewards train nothing and take no time, so they are left out. NaN when no
 * step trained.
 */
export function medianTrainSeconds(steps: readonly StepMetrics[]): number {
  const xs = steps.filter((m) => m.phase === 'rl' && m.trainTokens > 0).map((m) => m.trainSeconds);
  return xs.length === 0 ? NaN : median(xs);
}

/** Trained tokens per step, for the same steps as medianTrainSeconds (steps differ in size once runs diverge). */
export function medianSecondsPerKToken(steps: readonly StepMetrics[]): number {
  const xs = steps.filter((m) => m.phase === 'rl' && m.trainTokens > 0).map((m) => (1000 * m.trainSeconds) / m.trainTokens);
  return xs.length === 0 ? NaN : median(xs);
}

/** Issue 8's targets for LoRA against full-parameter RL. */
export const PAPER_TARGETS = Object.freeze({
  /** LoRA's mean success at most this far below full's (2 points). */
  successPoints: 0.02,
  /** full step seconds / LoRA step seconds at least this. */
  speedup: 1.4,
  /** LoRA peak bytes / full peak bytes at most this. */
  memoryRatio: 0.4,
});

export interface PaperVerdicts {
  /** LoRA mean success − full mean success (fractions; positive: LoRA ahead). */
  readonly successGap: number;
  readonly successMet: boolean;
  /** full step seconds / LoRA step seconds. */
  readonly speedup: number;
  readonly speedupMet: boolean;
  /** LoRA peak / full peak. */
  readonly memoryRatio: number;
  readonly memoryMet: boolean;
}

/** The three verdicts; a NaN figure (nothing measured) fails its target. */
export function paperVerdicts(v: {
  loraSuccess: number; fullSuccess: number; loraStepSeconds: number; fullStepSeconds: number; loraPeakBytes: number; fullPeakBytes: number;
}, t = PAPER_TARGETS): PaperVerdicts {
  const successGap = v.loraSuccess - v.fullSuccess;
  const speedup = v.fullStepSeconds / v.loraStepSeconds;
  const memoryRatio = v.loraPeakBytes / v.fullPeakBytes;
  return {
    successGap, successMet: successGap >= -t.successPoints - 1e-12,
    speedup, speedupMet: speedup >= t.speedup,
    memoryRatio, memoryMet: memoryRatio <= t.memoryRatio,
  };
}

/** Index of the first entry where two sequences differ bitwise (Object.is: NaN equals NaN, 0 differs from −0), or −1. */
export function firstDifference<T>(a: readonly T[], b: readonly T[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (!Object.is(a[i], b[i])) return i;
  return a.length === b.length ? -1 : n;
}

/** A step's metrics without what measures time, as a string two runs can be compared on. */
export function stepKey(m: StepMetrics): string {
  const { trainSeconds: _t, sampleSeconds: _s, tokensPerSecond: _r, deviceShare: _d, ...rest } = m;
  return JSON.stringify(rest, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
}

/** Whether two sets of named f32 tensors hold the same names and the same bits. */
export function tensorsIdentical(a: Readonly<Record<string, Float32Array>>, b: Readonly<Record<string, Float32Array>>): boolean {
  const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  for (const k of ka) {
    const x = new Uint32Array(a[k].buffer, a[k].byteOffset, a[k].length);
    const y = new Uint32Array(b[k].buffer, b[k].byteOffset, b[k].length);
    if (x.length !== y.length || x.some((v, i) => v !== y[i])) return false;
  }
  return true;
}

/** What a run leaves that two runs of the same job must agree on bitwise. */
export interface RunTrace {
  readonly rewardCurve: readonly number[];
  readonly lossCurve: readonly number[];
  /** stepKey of every RL step, in order. */
  readonly steps: readonly string[];
  readonly successAfter: number;
  readonly tensors: Readonly<Record<string, Float32Array>>;
}

/** Compares two runs; `differences` names what differed (empty: identical). */
export function compareRuns(a: RunTrace, b: RunTrace): { identical: boolean; differences: string[] } {
  const differences: string[] = [];
  const curve = (name: string, x: readonly (number | string)[], y: readonly (number | string)[]) => {
    const i = firstDifference(x, y);
    if (i >= 0) differences.push(`${name} from step ${i}`);
  };
  curve('reward curve', a.rewardCurve, b.rewardCurve);
  curve('loss curve', a.lossCurve, b.lossCurve);
  curve('step metrics', a.steps, b.steps);
  if (!Object.is(a.successAfter, b.successAfter)) differences.push('held-out success');
  if (!tensorsIdentical(a.tensors, b.tensors)) differences.push('trained tensors');
  return { identical: differences.length === 0, differences };
}

/** What PeakTracker needs of a buffer pool (src/gpu/pool.ts). */
export interface PeakSource {
  stats(): { readonly peakLiveBytes: number };
  resetPeaks(): void;
}

/**
 * The pool's peak live bytes over a job's RL phase, and over its training steps alone (from the
 * first forward/backward of a step to the end of its optimizer step). The pool keeps one peak, so
 * the tracker cuts it into segments — reading the peak, then resetting it — at the phase's start
 * and at each training step's edges; the phase's peak is the largest segment's, the training peak
 * the largest training segment's.
 */
export class PeakTracker {
  /** Peak over the RL phase (0 before it starts). */
  phase = 0;
  /** Peak over the training steps (0 when none ran). */
  train = 0;
  #on = false;
  #inTrain = false;

  constructor(readonly pool: PeakSource) {}

  #cut(): number {
    const p = this.pool.stats().peakLiveBytes;
    this.phase = Math.max(this.phase, p);
    this.pool.resetPeaks();
    return p;
  }

  /** The RL phase begins: what came before is not counted. */
  startPhase(): void {
    this.pool.resetPeaks();
    this.#on = true;
  }

  beginTrain(): void {
    if (!this.#on || this.#inTrain) return;
    this.#cut();
    this.#inTrain = true;
  }

  endTrain(): void {
    if (!this.#inTrain) return;
    this.train = Math.max(this.train, this.#cut());
    this.#inTrain = false;
  }

  /** The job ended: fold in the last segment. */
  finish(): void {
    if (this.#on) this.#cut();
  }
}
