/**
 * The clients a WorkerService hands out (worker_service.ts): a TrainingClient and a SamplingClient
 * whose every GPU call is one quantum of their scheduler job, run in the GPU worker. They hold ids
 * and plain data only; the engine objects live in the worker.
 */
import * as Comlink from 'comlink';
import type { SampleRequest } from '../env/types.ts';
import { ConfigError } from '../errors.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';
import { countLoraParameters, countParameters } from '../model/params.ts';
import type { OptimStepResult, SamplingClient, Trainable, TrainingClient } from './clients.ts';
import type { GpuClient } from './gpu_client.ts';
import type { ChunkGate, SamplerInfo } from './protocol.ts';
import type { Scheduler } from './scheduler.ts';
import { type EngineSampleResult, makeSampleCall, type SampleCall, type SamplerSettings } from './sample_call.ts';
import { TRAINING_CALL_NAMES, TRAINING_CALLS, type TrainingCall, type TrainingCallArgs, type TrainingCallResult } from './training_calls.ts';
import { type Api, LostWithDeviceError, type Owned, type SamplerScheduleOptions } from './worker_types.ts';

/**
 * What the clients ask of their service (the WorkerService implements it): they hold ids and plain
 * data, and reach the worker only through its quanta, so the service's faults and scheduling apply.
 */
export interface ClientHost {
  readonly gpu: GpuClient;
  readonly scheduler: Scheduler;
  /** Run `f` in the worker as one quantum of `o`'s scheduler job. */
  quantum<T>(o: Owned, objectId: string, label: string, f: (api: Api) => Promise<T>): Promise<T>;
  /** Start a call of `o`'s unless `o` is gone; a failure after a loss becomes LostWithDeviceError; `o.tail` follows it. */
  track<T>(o: Owned, objectId: string, start: () => Promise<T>): Promise<T>;
  /** A LostWithDeviceError for an object of an earlier device (or worker). */
  lost(objectId: string, cause?: unknown): LostWithDeviceError;
  /** `o` is of the current device (or worker). */
  isLive(o: Owned): boolean;
  /** Resolves when a recovery in progress is over. */
  settled(): Promise<void>;
  /** The non-finite-step policy on a job's optimStep result (skip_policy.ts): may pause the job and throw. */
  noteStep(o: Owned, id: string, r: OptimStepResult): void;
  /** Register a sampler job; `make` creates the sampler in the worker. */
  openSampler(cfg: ModelConfig, snapshotParams: number, sch: SamplerScheduleOptions, make: (samplerId: string) => Promise<SamplerInfo>): Promise<WorkerSamplingClient>;
  /** Queued quanta reject, the running one completes, then the worker frees the object with `release`. */
  closeOwned(o: Owned, id: string, release: (api: Api) => Promise<void>): Promise<void>;
}

/** TrainingClient call `name` of job `c`: one quantum of its scheduler job, the worker's method of that name called with the job id first. */
function forward<K extends TrainingCall>(c: WorkerTrainingClient, name: K, ...args: TrainingCallArgs<K>): Promise<TrainingCallResult<K>> {
  return c.service.quantum(c.owned, c.id, TRAINING_CALLS[name].label, (api) => {
    const f = api[name] as unknown as (jobId: string, ...a: TrainingCallArgs<K>) => Promise<TrainingCallResult<K>>;
    return f(c.id, ...args);
  });
}

/** The TrainingClient's GPU calls but optimStep (written out below, for the non-finite policy), forwarded from the table. */
type ForwardedCalls = Omit<Pick<TrainingClient, TrainingCall>, 'optimStep'>;

// Its forwarded GPU calls are installed from TRAINING_CALLS (training_calls.ts), one quantum each;
// this declaration gives them their TrainingClient types and docs.
export interface WorkerTrainingClient extends ForwardedCalls {}

export class WorkerTrainingClient implements TrainingClient {
  static {
    for (const name of TRAINING_CALL_NAMES) {
      if (name === 'optimStep') continue;
      Object.defineProperty(WorkerTrainingClient.prototype, name, {
        value(this: WorkerTrainingClient, ...args: TrainingCallArgs<typeof name>) {
          return forward(this, name, ...args);
        },
        writable: true,
        configurable: true,
      });
    }
  }

  constructor(
    readonly service: ClientHost,
    readonly owned: Owned,
    readonly id: string,
    readonly modelId: string,
    readonly trainable: Trainable,
    readonly cfg: ModelConfig,
    readonly lora: LoraConfig | undefined,
  ) {}

  /** A skipped step is counted; the service's `maxSkippedInARow`-th in a row pauses the job and rejects with NonFiniteStepsError. */
  async optimStep(opts: OptimStepOptions): Promise<OptimStepResult> {
    const r = await forward(this, 'optimStep', opts);
    this.service.noteStep(this.owned, this.id, r);
    return r;
  }

  /** A snapshot of the weights now, as a sampler job (its own scheduling; interactive by default). */
  samplingClient(sch: SamplerScheduleOptions = {}): Promise<WorkerSamplingClient> {
    const params = this.trainable === 'lora' && this.lora ? countLoraParameters(this.cfg, this.lora) : countParameters(this.cfg);
    return this.service.openSampler(this.cfg, params, sch, (sid) => this.service.quantum(this.owned, this.id, 'snapshot', (api) => api.samplingSnapshot(this.id, sid)));
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
  constructor(readonly service: ClientHost, owned: Owned, info: SamplerInfo, readonly requestsPerQuantum: number, readonly chunkQuanta = true, readonly revivable = false) {
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
