/**
 * The clients a WorkerService hands out (worker_service.ts): a TrainingClient and a SamplingClient
 * whose every GPU call is one quantum of their scheduler job, run in the GPU worker. They hold ids
 * and plain data only; the engine objects live in the worker.
 */
import type * as Comlink from 'comlink';
import type { LossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { SampleRequest, SampleResult } from '../env/types.ts';
import { WebtinkerError } from '../errors.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';
import { countLoraParameters, countParameters } from '../model/params.ts';
import type {
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
import type { GpuWorkerApi, SamplerInfo } from './protocol.ts';
import type { PriorityClass } from './scheduler.ts';
import type { WorkerService } from './worker_service.ts';

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
  skips?: { total: number; inARow: number };
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

export class WorkerSamplingClient implements SamplingClient {
  readonly id: string;
  readonly modelId: string;
  readonly adapterId: string | null;
  readonly version: number;
  readonly sample: (requests: readonly SampleRequest[]) => Promise<readonly SampleResult[]>;

  constructor(readonly service: WorkerService, readonly owned: Owned, info: SamplerInfo, readonly requestsPerQuantum: number, readonly chunkQuanta = true) {
    this.id = info.id;
    this.modelId = info.modelId;
    this.adapterId = info.adapterId;
    this.version = info.version;
    // All batches of a call are sent at once; the scheduler interleaves their quanta with other jobs'.
    this.sample = async (requests) => {
      const parts: Promise<SampleResult[]>[] = [];
      for (let i = 0; i < requests.length; i += requestsPerQuantum) {
        const part = requests.slice(i, i + requestsPerQuantum);
        parts.push(chunkQuanta
          ? service.sampleInChunks(owned, this.id, [...part])
          : service.quantum(owned, this.id, 'sample', (api) => api.sample(this.id, [...part])));
      }
      return (await Promise.all(parts)).flat();
    };
  }

  close(): Promise<void> {
    return this.service.closeOwned(this.owned, this.id, (api) => api.closeSampler(this.id));
  }
}
