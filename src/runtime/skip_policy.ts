/**
 * The one non-finite-step policy of both services: an optimizer step whose loss or gradient norm
 * is not finite (or whose update would make a weight or an Adam moment NaN or ±Inf) is skipped on
 * the GPU, state untouched; the `limit`-th skip in a row stops the job with NonFiniteStepsError.
 * The LocalService's clients throw it; the WorkerService also pauses the job first (resume() gives
 * it a fresh run of chances: `reset()`).
 */
import { NonFiniteStepsError } from './errors.ts';

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

  /** A fresh run of chances (a resumed job). */
  reset(): void {
    this.inARow = 0;
  }
}
