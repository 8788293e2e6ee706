/**
 * The one non-finite-step policy of both services: an optimizer step whose loss or gradient norm
 * is not finite (or whose update would make a weight or an Adam moment NaN or ±Inf) is skipped on
 * the GPU, state untouched; the `limit`-th skip in a row stops the job with NonFiniteStepsError.
 * Both services apply it through `check`; what differs is only what they do beside it (SkipHooks):
 * the LocalService's clients just raise the error, the WorkerService reports each skip as an event
 * and pauses the job before raising (resume() gives it a fresh run of chances: `reset()`).
 */
import type { OptimStepResult } from './clients.ts';
import { NonFiniteStepsError } from './errors.ts';

/** A skipped step as a service reports it. */
export interface SkippedStep {
  readonly jobId: string;
  /** Applied steps so far (the skipped one not among them). */
  readonly step: number;
  readonly gradNorm: number;
  readonly inARow: number;
  readonly total: number;
}

/** What a service does beside counting. */
export interface SkipHooks {
  /** After a skipped step is counted (before `stopping`, when it is the limit-th in a row). */
  skipped?(s: SkippedStep): void;
  /** Before the error is raised (the WorkerService pauses the job here). */
  stopping?(err: NonFiniteStepsError): void;
}

export class SkipCounter {
  total = 0;
  inARow = 0;
  constructor(readonly limit: number) {}

  /** Counts a step; returns the error to raise when `skipped` makes `limit` in a row, else null. */
  note(jobId: string, skipped: boolean): NonFiniteStepsError | null {
    if (!skipped) {
      this.inARow = 0;
      return null;
    }
    this.total++;
    this.inARow++;
    return this.inARow >= this.limit ? new NonFiniteStepsError(jobId, this.inARow) : null;
  }

  /**
   * The policy on one optimStep result: count it, report a skip (`hooks.skipped`), and at the
   * limit-th skip in a row call `hooks.stopping` and throw NonFiniteStepsError.
   */
  check(jobId: string, r: OptimStepResult, hooks: SkipHooks = {}): void {
    const err = this.note(jobId, r.skipped);
    if (r.skipped) hooks.skipped?.({ jobId, step: r.step, gradNorm: r.gradNorm, inARow: this.inARow, total: this.total });
    if (err) {
      hooks.stopping?.(err);
      throw err;
    }
  }

  /** A fresh run of chances (a resumed job). */
  reset(): void {
    this.inARow = 0;
  }
}
