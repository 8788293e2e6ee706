/**
 * The clients a WorkerService hands out (worker_service.ts): a TrainingClient and a SamplingClient
 * whose every GPU call is one quantum of their scheduler job, run in the GPU worker. They hold ids
 * and plain data only; the engine objects live in the worker.
 */
import * as Comlink from 'comlink';
import type { LossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { SampleRequest } from '../env/types.ts';
import { ConfigError, WebtinkerError } from '../errors.ts';
import type { SkipCounter } from './skip_policy.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';
import { countLoraParameters, countParameters } from '../model/params.ts';
import type {
  TrainingClientOptions,
  ForwardBackwardResult,
  HostParams,
  LogprobsResult,
  OptimStepResult,
  PublishedAdapter,
  SamplingClient,
  Trainable,
  TrainerState,
  TrainingClient,
} from './clients.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { GpuClient, GpuClientOptions } from './gpu_client.ts';
import type { AdapterStoreSpec, ChunkGate, GpuWorkerApi, SamplerInfo, ServiceTokenizer } from './protocol.ts';
import type { JobKind, JobStats, PriorityClass, Scheduler } from './scheduler.ts';
import { type EngineSampleResult, makeSampleCall, type SampleCall, type SamplerSettings } from './sample_call.ts';
import type { WorkerService } from './worker_service.ts';

// ─── Options, events and status of the WorkerService (worker_service.ts) ───

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


export type WorkerServiceEvent =
  | { type: 'device-lost' | 'worker-crashed'; message: string; lost: { models: string[]; jobs: string[]; samplers: string[] } }
  /** The new device (or worker) is ready; `restored`: the models and sampling clients brought back on it. */
  | { type: 'recovered'; adapter: AdapterSummary; restored: { models: string[]; samplers: string[] } }
  /** A training step was skipped for a non-finite loss or gradient norm (parameters and moments untouched). */
  | { type: 'step-skipped'; jobId: string; step: number; gradNorm: number; inARow: number; total: number }
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

export type Api = Comlink.Remote<GpuWorkerApi>;

/** Rough peak bytes of a sampler: its snapshot, the KV cache of one batch, prefill activations, logits. */
export function estimateSamplingMemory(cfg: ModelConfig, batch: number, snapshotParams: number): number {
  const kv = 2 * cfg.nLayer * cfg.nKvHead * cfg.headDim;
  const width = Math.max(cfg.dModel, cfg.nHead * cfg.headDim, cfg.dFF);
  return 4 * (snapshotParams + batch * cfg.maxSeqLen * (kv + 4 * width) + 2 * batch * cfg.vocabSize);
}

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

export class WorkerTrainingClient implements TrainingClient {
  constructor(
    readonly service: WorkerService,
    readonly owned: Owned,
    readonly id: string,
    readonly modelId: string,
    readonly trainable: Trainable,
    readonly cfg: ModelConfig,
    readonly lora: LoraConfig | undefined,
  ) {}

  #q<T>(label: string, f: (api: Api) => Promise<T>): Promise<T> {
    return this.service.quantum(this.owned, this.id, label, f);
  }

  forwardBackward(batch: PackedBatch, loss: LossSpec, opts: { logprobs?: boolean } = {}): Promise<ForwardBackwardResult> {
    return this.#q('forwardBackward', (api) => api.forwardBackward(this.id, batch, loss, opts));
  }

  /** A skipped step is counted; the service's `maxSkippedInARow`-th in a row pauses the job and rejects with NonFiniteStepsError. */
  async optimStep(opts: OptimStepOptions): Promise<OptimStepResult> {
    const r = await this.#q('optimStep', (api) => api.optimStep(this.id, opts));
    this.service.noteStep(this.owned, this.id, r);
    return r;
  }

  computeLogprobs(batch: PackedBatch): Promise<LogprobsResult> {
    return this.#q('computeLogprobs', (api) => api.computeLogprobs(this.id, batch));
  }

  weights(): Promise<HostParams> {
    return this.#q('weights', (api) => api.weights(this.id));
  }

  /** Publish the job's adapter as the next version of `name` in the worker's registry (a quantum of this job). */
  saveWeightsForSampler(name: string): Promise<PublishedAdapter> {
    return this.#q('publish', (api) => api.publishAdapter(this.id, name));
  }

  saveState(): Promise<TrainerState> {
    return this.#q('saveState', (api) => api.saveState(this.id));
  }

  loadState(state: TrainerState): Promise<void> {
    return this.#q('loadState', (api) => api.loadState(this.id, state));
  }

  /** A snapshot of the weights now, as a sampler job (its own scheduling; interactive by default). */
  samplingClient(sch: SamplerScheduleOptions = {}): Promise<WorkerSamplingClient> {
    const params = this.trainable === 'lora' && this.lora ? countLoraParameters(this.cfg, this.lora) : countParameters(this.cfg);
    return this.service.openSampler(this.cfg, params, sch, (sid) => this.#q('snapshot', (api) => api.samplingSnapshot(this.id, sid)));
  }

  /** Pool bytes of the job (owner `job:<id>`): read at once, not a quantum. */
  memory() {
    if (!this.service.isLive(this.owned)) return Promise.reject(new LostWithDeviceError(this.id, 'device'));
    return this.service.gpu.call((api) => api.jobMemory(this.id));
  }

  /** Queued calls reject; the worker frees the job's buffers after its running quantum. */
  close(): Promise<void> {
    return this.service.closeOwned(this.owned, this.id, (api) => api.closeJob(this.id));
  }
}

/** How a WorkerService makes a sampling client again after a loss (worker_service.ts). */
export interface Revivable {
  readonly client: WorkerSamplingClient;
  readonly modelId: string;
  readonly cfg: ModelConfig;
  readonly snapshotParams: number;
  readonly sch: SamplerScheduleOptions;
  /** Creates the sampler in the worker under the given id (a quantum of its job). */
  readonly make: (samplerId: string) => Promise<SamplerInfo>;
}

export class WorkerSamplingClient implements SamplingClient {
  readonly id: string;
  readonly modelId: string;
  readonly adapterId: string | null;
  readonly version: number;
  /** Both call forms (sample_call.ts); the Tinker form's settings travel with each batch to the worker. */
  readonly sample: SampleCall;
  /** Internal: its scheduler job on the current device (replaced when the service revives it after a loss). */
  owned: Owned;
  /** Internal: close() was called (a recovery in progress then does not bring it back). */
  userClosed = false;

  /**
   * `revivable`: the service recreates it after a device loss or a worker crash (createSamplingClient,
   * createInferenceClient); a batch in flight during the loss is then retried once on the new
   * device. A training job's snapshot is not revivable: it dies with its job.
   */
  constructor(readonly service: WorkerService, owned: Owned, info: SamplerInfo, readonly requestsPerQuantum: number, readonly chunkQuanta = true, readonly revivable = false) {
    this.owned = owned;
    this.id = info.id;
    this.modelId = info.modelId;
    this.adapterId = info.adapterId;
    this.version = info.version;
    this.sample = makeSampleCall((requests, settings) => this.#sampleWith(requests, settings));
  }

  /** All batches of a call are sent at once; the scheduler interleaves their quanta with other jobs'. */
  async #sampleWith(requests: readonly SampleRequest[], settings: SamplerSettings): Promise<EngineSampleResult[]> {
    if (settings.onTokens) throw new ConfigError('params.onTokens', 'streaming needs an in-process service (LocalService): a callback cannot cross to the GPU worker');
    const parts: Promise<EngineSampleResult[]>[] = [];
    for (let i = 0; i < requests.length; i += this.requestsPerQuantum) {
      const part = [...requests.slice(i, i + this.requestsPerQuantum)];
      parts.push(this.#retryOnce((o) => this.chunkQuanta
        ? this.#inChunks(o, part, settings)
        : this.service.quantum(o, this.id, 'sample', (api) => api.sample(this.id, part, undefined, settings))));
    }
    return (await Promise.all(parts)).flat();
  }

  /**
   * Run one batch on the current device; when the device (or worker) is lost under it and this
   * client is revived on the new one, run it once more there — the same requests and seeds give
   * the same results. Otherwise, or when the retry fails too, the error is passed on.
   */
  async #retryOnce<T>(run: (o: Owned) => Promise<T>): Promise<T> {
    const o = this.owned;
    try {
      return await run(o);
    } catch (e) {
      if (!this.revivable || this.userClosed || !(e instanceof LostWithDeviceError)) throw e;
      await this.service.settled().catch(() => {});
      if (this.owned === o || !this.service.isLive(this.owned)) throw e;
      return await run(this.owned);
    }
  }

  /**
   * One generate() batch whose decode chunks are quanta of this sampler's job: the worker asks for
   * each chunk's turn through the gate and ends it when the chunk is done; a worker that dies
   * mid-chunk has its turn ended here, so the scheduler never waits on it.
   */
  #inChunks(owned: Owned, requests: SampleRequest[], settings: SamplerSettings): Promise<EngineSampleResult[]> {
    const { service } = this;
    const open = new Set<() => void>();
    const gate: ChunkGate = async () => {
      if (!service.isLive(owned)) throw service.lost(this.id);
      let end!: () => void;
      await new Promise<void>((granted, refused) => {
        service.scheduler.quantum(owned.schedId, () => new Promise<void>((done) => {
          end = () => {
            open.delete(end);
            done();
          };
          open.add(end);
          granted();
        }), 'decode chunk').catch(refused);
      });
      return Comlink.proxy(end);
    };
    return service.track(owned, this.id, () =>
      service.gpu.call((api) => api.sample(this.id, requests, Comlink.proxy(gate), settings)).finally(() => {
        for (const end of [...open]) end();
      }));
  }

  close(): Promise<void> {
    this.userClosed = true;
    return this.service.closeOwned(this.owned, this.id, (api) => api.closeSampler(this.id));
  }
}
