/**
 * What the WorkerService (worker_service.ts) and the clients it hands out (worker_clients.ts) both
 * speak of: the service's options, events, job status and the error of a call that died with its
 * device, and the internal record of a model, job or sampler of the service (Owned). Both import
 * it; the clients reach their service through the ClientHost interface (worker_clients.ts), so
 * worker_clients.ts never imports worker_service.ts and the two form no import cycle.
 */
import type * as Comlink from 'comlink';
import type { AdapterSummary } from '../gpu/device.ts';
import { WebtinkerError } from '../errors.ts';
import type { TrainingClientOptions } from './clients.ts';
import type { GpuClient, GpuClientOptions } from './gpu_client.ts';
import type { AdapterStoreSpec, GpuWorkerApi, ServiceTokenizer } from './protocol.ts';
import type { JobKind, JobStats, PriorityClass, Scheduler } from './scheduler.ts';
import type { SkipCounter, SkippedStep } from './skip_policy.ts';

export interface WorkerServiceOptions {
  /** A started GPU client whose worker is gpu_worker.ts; default: a new one from `gpu` (closed with the service). */
  client?: GpuClient;
  gpu?: GpuClientOptions;
  /** The scheduler the quanta run on; default: a new one with `memoryBudgetBytes`. */
  scheduler?: Scheduler;
  /** GPU bytes all jobs may reserve together (default 1 GiB; WebGPU does not report device memory). */
  memoryBudgetBytes?: number;
  /** Detokenizer of the worker's sampler, for stop strings. */
  tokenizer?: ServiceTokenizer;
  /** Decode steps per GPU submission inside one generate() call. */
  chunk?: number;
  /** Default sampling requests per inference quantum (one generate() batch). Default 4. */
  requestsPerQuantum?: number;
  /** Training steps skipped in a row (non-finite loss or gradients) that pause a job with an error. Default 5. */
  maxSkippedInARow?: number;
  /** Published adapter versions kept on the GPU at once (LRU; default 4). */
  maxResidentAdapters?: number;
  /** Host copies of published versions kept per name (default 2). */
  keepAdapterVersions?: number;
  /**
   * The worker writes published adapter versions there (durable before saveWeightsForSampler
   * resolves) and finds earlier ones there — after a worker restart, or in a new service on the
   * same store. Default: none (published versions live in the worker's memory).
   */
  adapterStore?: AdapterStoreSpec;
}

/** How a job is scheduled and what its memory estimate assumes. */
export interface ScheduleOptions {
  kind?: JobKind;
  priority?: PriorityClass;
  weight?: number;
  /** Micro-batch sequences (B) and tokens per sequence (T) for the memory estimate. Default 8 × maxSeqLen. */
  batch?: number;
  seqLen?: number;
}

export interface WorkerTrainingClientOptions extends TrainingClientOptions {
  schedule?: ScheduleOptions;
}

export interface SamplerScheduleOptions {
  priority?: PriorityClass;
  weight?: number;
  /** Requests per generate() batch; also the batch of its memory estimate. */
  requestsPerQuantum?: number;
  /**
   * Each decode chunk of a batch is one quantum (default true), so other jobs' quanta — an
   * interactive request ahead of a rollout — run between chunks; false: a whole batch is one quantum.
   */
  chunkQuanta?: boolean;
}

export type WorkerServiceEvent =
  | { type: 'device-lost' | 'worker-crashed'; message: string; lost: { models: string[]; jobs: string[]; samplers: string[] } }
  /** The new device (or worker) is ready; `restored`: the models and sampling clients brought back on it. */
  | { type: 'recovered'; adapter: AdapterSummary; restored: { models: string[]; samplers: string[] } }
  /** A training step was skipped for a non-finite loss or gradient norm (parameters and moments untouched). */
  | ({ type: 'step-skipped' } & SkippedStep)
  /** A job was paused for an error (its queued calls wait until it is resumed). */
  | { type: 'job-paused'; jobId: string; error: string };

/** A job's scheduler stats with its training faults. */
export interface JobStatus extends JobStats {
  skippedSteps: number;
  skippedInARow: number;
}

/** A call of a model, job or sampler that died with its device (or worker). */
export class LostWithDeviceError extends WebtinkerError {
  readonly objectId: string;
  constructor(objectId: string, why: string, options?: { cause?: unknown }) {
    super('lost-with-device', `"${objectId}" was lost with the GPU ${why}: create it again (a training job: createTrainingClient, then loadState from its last checkpoint)`, options);
    this.objectId = objectId;
  }
}

/** The GPU worker's API as the page calls it (over comlink). */
export type Api = Comlink.Remote<GpuWorkerApi>;

/** What a model, job or sampler of this service knows about itself (its scheduler job, its device epoch). */
export interface Owned {
  readonly schedId: string;
  readonly epoch: number;
  kind: 'model' | 'job' | 'sampler';
  closed: boolean;
  /**
   * Settles when every quantum asked of it so far has settled. A cancel rejects the queued ones at
   * once, so awaiting this waits for the one running — whose worker call may not even be sent yet
   * (the scheduler starts a quantum on a later microtask) — before the object is freed.
   */
  tail: Promise<unknown>;
  /** The worker-side release once under way (a cancel or a close); close() awaits it. */
  release?: Promise<void>;
  /** A training job's skipped steps (non-finite loss or gradients): all, and the current run of them. */
  skips?: SkipCounter;
}
