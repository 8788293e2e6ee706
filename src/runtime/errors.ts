/** Typed errors of the runtime: admission control and job lifecycle. */
import { WebtinkerError } from '../errors.ts';

/** A job cannot be admitted: its estimated GPU memory exceeds what the device can ever give it. */
export class AdmissionError extends WebtinkerError {
  readonly jobId: string;
  constructor(jobId: string, message: string) {
    super('admission', `job "${jobId}": ${message}`);
    this.jobId = jobId;
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
