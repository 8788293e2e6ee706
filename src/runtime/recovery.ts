/**
 * Fault recovery of whole jobs: when the GPU is lost under a job — the device (driver reset,
 * `device.destroy()`) or the GPU worker (a crash) — the job is run again on a fresh device from its
 * last checkpoint. With exact-resume checkpoints (job_checkpoint.ts) the recovered job produces the
 * metrics the uninterrupted one would have; only the steps after the last checkpoint run twice.
 *
 * A ServiceSource says how a service comes back: a WorkerService recovers by itself (GpuClient
 * re-acquires the device or restarts the worker, the service reopens in it) and the source only
 * waits for that; for the in-process LocalService the source acquires a new device and makes a new
 * service on it. Each job on a service runs under its own runTrainingRecovering, so after a loss
 * every job resumes from its own last checkpoint.
 */
import type { OpenedPretrained } from './pretrained_job.ts';
import { acquireGpu, type AcquireOptions, type GpuContext } from '../gpu/device.ts';
import type { ServiceClient } from './clients.ts';
import { lostUnder } from './device_loss.ts';
import { DeviceLostError } from './errors.ts';
import { WorkerCrashedError } from './gpu_client.ts';
import type { JobCheckpoint, JobCheckpointing } from './job_checkpoint.ts';
import { type JobOptions, type JobResult, runTraining } from './rl_job.ts';
import { LostWithDeviceError, type WorkerService } from './worker_service.ts';

/** Where a job gets its service, now and after a loss. */
export interface ServiceSource {
  service(): ServiceClient;
  /** True when `error` was a GPU loss and a working service is ready again; false for any other error. */
  recover(error: unknown): Promise<boolean>;
}

/** Whether an error is a loss of the GPU device or worker (as the runtime reports them). */
export function isGpuLoss(e: unknown): boolean {
  const name = (e as { name?: unknown } | null)?.name;
  return e instanceof LostWithDeviceError || e instanceof WorkerCrashedError || e instanceof DeviceLostError || name === 'DeviceLostError';
}

/** A WorkerService: it recovers by itself; the source waits until it has. */
export function workerServiceSource(service: WorkerService): ServiceSource {
  return {
    service: () => service,
    async recover(e) {
      if (!isGpuLoss(e)) return false;
      await service.settled();
      return true;
    },
  };
}

/** The engine on this thread: after a loss, a new device and a new service on it. The source owns both. */
export class LocalServiceSource implements ServiceSource {
  #ctx: GpuContext;
  #service: ServiceClient;
  readonly make: (ctx: GpuContext) => ServiceClient;
  readonly acquire: AcquireOptions;

  constructor(ctx: GpuContext, make: (ctx: GpuContext) => ServiceClient, acquire: AcquireOptions = {}) {
    this.#ctx = ctx;
    this.make = make;
    this.acquire = acquire;
    this.#service = make(ctx);
  }

  get ctx(): GpuContext {
    return this.#ctx;
  }

  service(): ServiceClient {
    return this.#service;
  }

  async recover(e: unknown): Promise<boolean> {
    if (!isGpuLoss(e) && !(await lostUnder(this.#ctx, e))) return false;
    await this.#service.close().catch(() => {});
    this.#ctx = await acquireGpu(this.acquire);
    this.#service = this.make(this.#ctx);
    return true;
  }

  /** Close the service and destroy the device. */
  async close(): Promise<void> {
    await this.#service.close();
    this.#ctx.destroy();
  }
}

export interface RecoveryEvent {
  /** Recoveries so far, this one included. */
  readonly recoveries: number;
  readonly error: unknown;
  /** The checkpoint the job resumes from (undefined: from the start). */
  readonly from: Pick<JobCheckpoint, 'phase' | 'step'> | undefined;
}

export interface RecoveringOptions {
  /** The last checkpoint saved (read again after each loss). */
  readonly latest: () => Promise<JobCheckpoint | undefined>;
  /** Losses survived before the error is passed on (default 3). */
  readonly maxRecoveries?: number;
  readonly onRecover?: (e: RecoveryEvent) => void;
  /** The job's pretrained checkpoint, opened already (runTraining's `opened`). */
  readonly pretrained?: OpenedPretrained;
}

/**
 * runTraining, run again from the last checkpoint after each GPU loss (see the header). `o.checkpoint`
 * must be set: without checkpoints a recovery would start the job over.
 */
export async function runTrainingRecovering(source: ServiceSource, o: JobOptions & { readonly checkpoint: JobCheckpointing }, r: RecoveringOptions): Promise<JobResult> {
  let from = o.checkpoint.from;
  for (let recoveries = 0; ; ) {
    try {
      const { from: _f, ...ck } = o.checkpoint;
      return await runTraining(source.service(), { ...o, checkpoint: { ...ck, ...(from ? { from } : {}) } }, r.pretrained);
    } catch (e) {
      if (recoveries >= (r.maxRecoveries ?? 3) || !(await source.recover(e))) throw e;
      recoveries++;
      from = (await r.latest()) ?? from;
      r.onRecover?.({ recoveries, error: e, from: from ? { phase: from.phase, step: from.step } : undefined });
    }
  }
}
