/** Typed errors of the runtime: admission control and job lifecycle. */
import { NonFiniteError, WebtinkerError } from '../errors.ts';

/** The numbers behind an admission refusal. */
export interface AdmissionNumbers {
  /** Bytes the job needs: its whole estimate ('memoryBudgetBytes') or one buffer ('maxBufferSize'). */
  readonly neededBytes: number;
  /** The limit it is over. */
  readonly limitBytes: number;
  readonly limit: 'memoryBudgetBytes' | 'maxBufferSize';
  /** For 'maxBufferSize': what the buffer holds, e.g. "tok_emb.weight [151936, 896] f32". */
  readonly buffer?: string;
}

/**
 * A job cannot be admitted: its estimated GPU memory exceeds what the device can ever give it —
 * the scheduler's budget, or one buffer over the device's maxBufferSize. Refused before anything
 * is allocated; `numbers` (when given) says by how much.
 */
export class AdmissionError extends WebtinkerError {
  readonly jobId: string;
  readonly numbers: AdmissionNumbers | undefined;
  constructor(jobId: string, message: string, numbers?: AdmissionNumbers) {
    super('admission', `job "${jobId}": ${message}`);
    this.jobId = jobId;
    this.numbers = numbers;
  }
}

/** A request of a cancelled (or finished) job. */
export class JobCancelledError extends WebtinkerError {
  readonly jobId: string;
  constructor(jobId: string, why = 'was cancelled') {
    super('job-cancelled', `job "${jobId}" ${why}`);
    this.jobId = jobId;
  }
}

export class JobStateError extends WebtinkerError {
  constructor(message: string) {
    super('job-state', message);
  }
}

/**
 * A GPU call failed because the device was lost under it (driver reset, `device.destroy()`):
 * the work is gone with the device; a job resumes from its last checkpoint on a new one.
 */
export class DeviceLostError extends WebtinkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('device-lost', `the GPU device was lost: ${message}`, options);
  }
}

/** A training job's steps were skipped N times in a row for a non-finite loss, gradient or update; the job is paused. */
export class NonFiniteStepsError extends WebtinkerError {
  readonly jobId: string;
  readonly inARow: number;
  constructor(jobId: string, inARow: number) {
    super('non-finite-steps', `job "${jobId}": ${inARow} steps in a row skipped for a non-finite loss, gradient norm or update (parameters and optimizer state untouched); the job is paused — lower the learning rate or check the data, then resume it`);
    this.jobId = jobId;
    this.inARow = inARow;
  }
}

/**
 * `fn`, with a NonFiniteError from it (or, from a worker, an error of that name) given the job's
 * place: `where` (e.g. 'RL step 3 rollout') before the call's own.
 */
export async function namingStep<T>(where: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof NonFiniteError) throw new NonFiniteError(e.model, `${where}: ${e.where}`, e.message.slice(e.model.length + e.where.length + 4), { cause: e });
    if ((e as { name?: unknown } | null)?.name === 'NonFiniteError') throw new NonFiniteError('the policy', where, (e as Error).message, { cause: e });
    throw e;
  }
}
