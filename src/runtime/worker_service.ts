/**
 * WorkerService — the ServiceClient of the page (or Deno's main thread): the engine runs in the GPU
 * worker (gpu_worker.ts, a LocalService there), and every call that touches the GPU runs as one
 * quantum of the in-page Scheduler (scheduler.ts), so training and inference share one device.
 *
 * Jobs on the scheduler (ids are the client ids; what each asks for and how its memory is
 * estimated: admission.ts):
 *   - each TrainingClient is a job of kind 'lora_rl' or 'full_rl' (by trainable; overridable, e.g.
 *     'sft'); a LoRA job's memory excludes the shared base, which is reserved once, by the base's
 *     own job (below). Each of its GPU calls (training_calls.ts: forwardBackward, optimStep,
 *     computeLogprobs, weights, saveWeightsForSampler, saveState, loadState) and each snapshot is
 *     one quantum of it.
 *   - each SamplingClient is a job of kind 'inference', class 'interactive' unless configured;
 *     a sample() call is split into generate() batches of `requestsPerQuantum` requests, and each
 *     decode chunk of a batch (the first with the prefill) is one quantum: the worker asks for every
 *     chunk's turn through a gate and takes its call lane per chunk (WorkerSamplingClient), so an
 *     interactive request gets in between the chunks of a long rollout. (`chunkQuanta: false` makes
 *     a whole batch one quantum.) A request's tokens do not depend on which requests share its batch
 *     or on when its chunks run (engineSampleFn), so neither split changes results.
 *   - an inference client (createInferenceClient) is such a sampler over a base, its requests
 *     naming published adapter versions (adapter_registry.ts).
 *   - each resident base model is a job `model:<id>` of kind 'inference', class 'normal', holding
 *     the base's bytes for as long as it is loaded; its upload and host copies are its quanta.
 *     N LoRA jobs on it then reserve base + N × job bytes, as the pool shows them using.
 * Pause, resume, reprioritize and cancel go through the scheduler (`service.scheduler`, or the
 * shortcuts here) and so reach a job's queued quanta; a cancelled job's queued calls reject with
 * JobCancelledError and its GPU state is freed in the worker once its running quantum is over.
 *
 * Faults. Device lost, or worker crashed: GpuClient gets a fresh device (or worker) by itself; this
 * service then emits 'device-lost' / 'worker-crashed' naming every model, job and sampler that
 * died, cancels their scheduler jobs (freeing their reservations), and rejects their calls — queued,
 * running (the worker names a call the device died under: DeviceLostError) or later — with
 * LostWithDeviceError. New requests wait until the new device is ready (`settled()`) and are served
 * there. The jobs themselves come back through recovery.ts (runTrainingRecovering), which re-runs
 * each from its last checkpoint: the job runner owns its checkpoints, this service does not.
 * Sampling clients made by createSamplingClient and createInferenceClient do come back, with the
 * base models they sample, before settled() resolves (worker_revive.ts); a batch of theirs in
 * flight during the loss is retried once on the new device (same requests, same seeds: the same
 * results); a failure of the retry, or of the recreation, rejects with LostWithDeviceError.
 * Non-finite steps (skip_policy.ts): a skipped optimStep is counted ('step-skipped' event,
 * `status(id)`); the `maxSkippedInARow`-th in a row pauses the job with an error in its stats
 * ('job-paused') and rejects with NonFiniteStepsError; resume() gives it a fresh run of chances.
 */
import type { AdapterSummary } from '../gpu/device.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { countLoraParameters } from '../model/params.ts';
import { modelJob, samplerJob, trainingJob } from './admission.ts';
import type { RegistryStats } from './adapter_registry.ts';
import {
  type CreateModelOptions, type FullTrainingOptions, fullTrainingOptions, type HostParams, type LoraTrainingOptions, loraTrainingOptions, type OptimStepResult,
  type ServiceClient,
} from './clients.ts';
import { JobStateError } from './errors.ts';
import { GpuClient, type GpuClientEvent } from './gpu_client.ts';
import type { SamplerInfo, ServiceMemory } from './protocol.ts';
import { type PriorityClass, Scheduler } from './scheduler.ts';
import { SkipCounter } from './skip_policy.ts';
import { type ClientHost, WorkerSamplingClient, WorkerTrainingClient } from './worker_clients.ts';
import { ServiceObjects } from './worker_objects.ts';
import { Revival } from './worker_revive.ts';
import {
  type Api, type JobStatus, LostWithDeviceError, type Owned, type SamplerScheduleOptions, type ScheduleOptions, type WorkerServiceEvent, type WorkerServiceOptions,
  type WorkerTrainingClientOptions,
} from './worker_types.ts';

export { estimateSamplingMemory } from './admission.ts';
export { LostWithDeviceError, WorkerSamplingClient, WorkerTrainingClient };
export type { JobStatus, Owned, SamplerScheduleOptions, ScheduleOptions, WorkerServiceEvent, WorkerServiceOptions, WorkerTrainingClientOptions } from './worker_types.ts';

let nextId = 0;

export class WorkerService implements ServiceClient, ClientHost {
  readonly gpu: GpuClient;
  readonly scheduler: Scheduler;
  readonly options: WorkerServiceOptions;
  #ownsClient: boolean;
  #ready: Promise<void> = Promise.resolve();
  /** Its models, jobs and samplers, and how their calls reach the worker (worker_objects.ts). */
  readonly #objects: ServiceObjects;
  #listeners = new Set<(e: WorkerServiceEvent) => void>();
  #unsub: (() => void)[] = [];
  /** The sampling clients that come back after a loss, and how (worker_revive.ts). */
  readonly #revival = new Revival({
    epoch: () => this.#objects.epoch,
    hasModel: (id) => this.#objects.models.has(id),
    createModel: (cfg, recipe, id) => this.#createModelNow(cfg, recipe, id),
    reopen: async (r) => {
      r.client.owned = (await this.#registerSampler(r.client.id, r.cfg, r.snapshotParams, r.sch, r.make)).owned;
    },
    closeReopened: (r) => this.closeOwned(r.client.owned, r.client.id, (api) => api.closeSampler(r.client.id)),
  });

  private constructor(gpu: GpuClient, ownsClient: boolean, options: WorkerServiceOptions) {
    this.gpu = gpu;
    this.#ownsClient = ownsClient;
    this.options = options;
    this.scheduler = options.scheduler ?? new Scheduler({ memoryBudgetBytes: options.memoryBudgetBytes ?? 2 ** 30 });
    this.#objects = new ServiceObjects(gpu, this.scheduler, {
      lossReported: (epoch) => this.#revival.lossReported(epoch),
      samplerClosed: (id) => this.#revival.forget(id),
    });
    this.#unsub.push(gpu.on((e) => this.#onGpuEvent(e)));
    this.#unsub.push(this.scheduler.on((e) => {
      if (e.type === 'state' && e.state === 'cancelled') this.#objects.onCancelled(e.jobId);
      if (e.type === 'state' && e.state === 'active') {
        const skips = [...this.#objects.jobs.values()].find((o) => o.schedId === e.jobId)?.skips;
        skips?.reset(); // a resumed job gets a fresh run of chances
      }
    }));
  }

  /** Start (or adopt) the GPU worker and open the engine service in it. */
  static async start(options: WorkerServiceOptions = {}): Promise<WorkerService> {
    const gpu = options.client ?? await GpuClient.start(options.gpu);
    const s = new WorkerService(gpu, !options.client, options);
    try {
      await s.#serviceInit();
    } catch (e) {
      s.close();
      throw e;
    }
    return s;
  }

  get adapter(): AdapterSummary {
    return this.gpu.adapter;
  }

  on(f: (e: WorkerServiceEvent) => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  #emit(e: WorkerServiceEvent): void {
    for (const f of this.#listeners) f(e);
  }

  #serviceInit(): Promise<void> {
    const o = this.options;
    return this.gpu.call((api) =>
      api.serviceInit({
        ...(o.tokenizer ? { tokenizer: o.tokenizer } : {}),
        ...(o.chunk !== undefined ? { chunk: o.chunk } : {}),
        ...(o.maxResidentAdapters !== undefined ? { maxResidentAdapters: o.maxResidentAdapters } : {}),
        ...(o.keepAdapterVersions !== undefined ? { keepAdapterVersions: o.keepAdapterVersions } : {}),
        ...(o.adapterStore ? { adapterStore: o.adapterStore } : {}),
      })
    );
  }

  /** Resolves when a recovery in progress (new device or worker, service reopened) is over. */
  settled(): Promise<void> {
    return this.#ready;
  }

  #onGpuEvent(e: GpuClientEvent): void {
    if (e.type === 'device-lost' || e.type === 'worker-crashed') {
      const why = e.type === 'device-lost' ? `device (${e.reason}: ${e.message})` : `worker (crash: ${e.message})`;
      const models = new Map(this.#objects.models);
      const lost = this.#objects.loseAll(why);
      // The client is recovering already (it sets its recovery before emitting); a crashed worker's
      // replacement also needs the service opened again.
      const recovering = this.gpu.settled();
      // Sampling clients made by createSamplingClient / createInferenceClient come back on the new
      // device, with the base models they sample (from their recipes); training jobs do not.
      const revive = this.#revival.lost(models);
      const reopened = e.type === 'worker-crashed' ? recovering.then(() => this.#serviceInit()) : recovering;
      this.#ready = reopened.then(revive);
      this.#ready.catch(() => {});
      this.#emit({ type: e.type, message: why, lost });
    } else if (e.type === 'recovered' || e.type === 'restarted') {
      this.#ready.then(() => this.#emit({ type: 'recovered', adapter: e.adapter, restored: this.#revival.restored }), () => {});
    }
  }

  /** Internal to the clients: run `f` in the worker as one quantum of `o`'s scheduler job (worker_objects.ts). */
  quantum<T>(o: Owned, objectId: string, label: string, f: (api: Api) => Promise<T>): Promise<T> {
    return this.#objects.quantum(o, objectId, label, f);
  }

  /** Internal to the clients: a LostWithDeviceError for an object of an earlier device (or worker). */
  lost(objectId: string, cause?: unknown): LostWithDeviceError {
    return this.#objects.lost(objectId, cause);
  }

  /** Internal to the clients: start a call of `o`'s unless `o` is gone; a failure after a loss becomes LostWithDeviceError. */
  track<T>(o: Owned, objectId: string, start: () => Promise<T>): Promise<T> {
    return this.#objects.track(o, objectId, start);
  }

  #model(modelId: string): Owned & { cfg: ModelConfig } {
    const m = this.#objects.models.get(modelId);
    if (!m) throw new JobStateError(`no model "${modelId}" in this service (known: ${[...this.#objects.models.keys()].join(', ') || 'none'})`);
    return m;
  }

  /**
   * A base model in the worker (a scheduler job of its own holding its bytes). The service keeps
   * its recipe (`cfg` and `opts`, host params by reference: do not mutate them) so that, after a
   * device loss or a worker crash, it can be made again for the sampling clients on it.
   */
  async createModel(cfg: ModelConfig, opts: CreateModelOptions = {}): Promise<string> {
    await this.#ready;
    return await this.#createModelNow(cfg, opts, opts.id ?? `${cfg.name ?? cfg.family}#${nextId++}`);
  }

  async #createModelNow(cfg: ModelConfig, opts: CreateModelOptions, id: string): Promise<string> {
    if (this.#objects.models.has(id)) throw new JobStateError(`a model "${id}" exists already`);
    const o = { ...this.#objects.owned(`model:${id}`, 'model'), cfg, recipe: { ...opts, id } };
    await this.scheduler.submit(modelJob(o.schedId, cfg, opts, this.adapter));
    this.#objects.models.set(id, o);
    try {
      await this.quantum(o, id, 'createModel', (api) => api.createModel(cfg, { ...opts, id }));
    } catch (e) {
      this.#objects.models.delete(id);
      this.#objects.end(o, 'cancel');
      throw e;
    }
    return id;
  }

  /** The config of a loaded base model. */
  modelConfig(modelId: string): ModelConfig {
    return this.#model(modelId).cfg;
  }

  async modelWeights(modelId: string): Promise<HostParams> {
    return await this.quantum(this.#model(modelId), modelId, 'modelWeights', (api) => api.modelWeights(modelId));
  }

  async releaseModel(modelId: string): Promise<void> {
    await this.#ready;
    const o = this.#model(modelId);
    await this.quantum(o, modelId, 'releaseModel', (api) => api.releaseModel(modelId));
    this.#objects.models.delete(modelId);
    this.#objects.end(o, 'finish');
  }

  /**
   * A training job: admitted by the scheduler (AdmissionError when its estimate can never fit, or
   * when one of its buffers is over the adapter's maxBufferSize; waits while it does not fit yet),
   * then created in the worker as its first quantum.
   */
  async createTrainingClient(opts: WorkerTrainingClientOptions): Promise<WorkerTrainingClient> {
    await this.#ready;
    const model = this.#model(opts.modelId);
    const cfg = model.cfg;
    const id = opts.id ?? `job-${nextId++}`;
    if (this.#objects.jobs.has(id)) throw new JobStateError(`a training job "${id}" exists already`);
    const job = trainingJob(id, cfg, opts, this.adapter);
    const o = this.#objects.owned(id, 'job');
    await this.scheduler.submit(job);
    this.#objects.jobs.set(id, o);
    const { schedule: _, ...plain } = opts;
    try {
      const info = await this.quantum(o, id, 'create', (api) => api.createTrainingClient({ ...plain, id }));
      return new WorkerTrainingClient(this, o, info.id, info.modelId, info.trainable, cfg, opts.lora);
    } catch (e) {
      this.#objects.jobs.delete(id);
      this.#objects.end(o, 'cancel');
      throw e;
    }
  }

  /** Tinker's front door: a LoRA training job (clients.ts, loraTrainingOptions); `schedule` as createTrainingClient's. */
  async createLoraTrainingClient(modelId: string, opts: LoraTrainingOptions, schedule?: ScheduleOptions): Promise<WorkerTrainingClient> {
    return await this.createTrainingClient({ ...loraTrainingOptions(modelId, this.#model(modelId).cfg, opts), ...(schedule ? { schedule } : {}) });
  }

  /** Tinker's front door: a full-parameter training job (clients.ts, fullTrainingOptions). */
  async createFullTrainingClient(modelId: string, opts: FullTrainingOptions = {}, schedule?: ScheduleOptions): Promise<WorkerTrainingClient> {
    return await this.createTrainingClient({ ...fullTrainingOptions(modelId, opts), ...(schedule ? { schedule } : {}) });
  }

  /** Internal to the clients: register a sampler job; `make` creates it in the worker; with `revive`, it comes back after a loss (worker_revive.ts). */
  async openSampler(cfg: ModelConfig, snapshotParams: number, sch: SamplerScheduleOptions, make: (samplerId: string) => Promise<SamplerInfo>, revive?: { modelId: string }): Promise<WorkerSamplingClient> {
    await this.#ready;
    const id = `sampler-${nextId++}`;
    const perQuantum = sch.requestsPerQuantum ?? this.options.requestsPerQuantum ?? 4;
    const { owned, info } = await this.#registerSampler(id, cfg, snapshotParams, sch, make);
    const client = new WorkerSamplingClient(this, owned, info, perQuantum, sch.chunkQuanta ?? true, revive !== undefined);
    if (revive) this.#revival.keep({ client, modelId: revive.modelId, cfg, snapshotParams, sch, make });
    return client;
  }

  /** A sampler's scheduler job, admitted, and the sampler made in the worker by `make`. */
  async #registerSampler(id: string, cfg: ModelConfig, snapshotParams: number, sch: SamplerScheduleOptions, make: (samplerId: string) => Promise<SamplerInfo>): Promise<{ owned: Owned; info: SamplerInfo }> {
    const perQuantum = sch.requestsPerQuantum ?? this.options.requestsPerQuantum ?? 4;
    const o = this.#objects.owned(id, 'sampler');
    await this.scheduler.submit(samplerJob(id, cfg, perQuantum, snapshotParams, sch));
    this.#objects.samplers.set(id, o);
    try {
      return { owned: o, info: await make(id) };
    } catch (e) {
      this.#objects.samplers.delete(id);
      this.#objects.end(o, 'cancel');
      throw e;
    }
  }

  /**
   * A sampler over a base model, optionally with a LoRA adapter given as host tensors (kept by
   * reference: do not mutate them). It survives a device loss or a worker crash: recreated on the
   * new device with its base (see the header).
   */
  async createSamplingClient(modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }, sch: SamplerScheduleOptions = {}): Promise<WorkerSamplingClient> {
    const cfg = this.#model(modelId).cfg;
    const params = adapter ? countLoraParameters(cfg, adapter.lora) : 0;
    return await this.openSampler(cfg, params, sch, (sid) => {
      const o = this.#objects.samplers.get(sid)!;
      // A fixed adapter id, so requests naming it work the same after a recovery.
      const a = adapter ? { ...adapter, id: adapter.id ?? `${sid}/adapter` } : undefined;
      return this.quantum(o, sid, 'createSampler', (api) => api.createSamplingClient(sid, modelId, a));
    }, { modelId });
  }

  /**
   * An inference job over a base model: each request names a published adapter (`name`, the latest
   * version when it is served, or `name@v`) or none; results say which version produced them.
   * Its memory estimate covers the generation of one quantum; resident adapters are charged to the
   * base (at most maxResidentAdapters of them). It survives a device loss or a worker crash (see
   * the header); published versions survive a device loss, and a worker crash with an adapterStore.
   */
  async createInferenceClient(modelId: string, sch: SamplerScheduleOptions = {}): Promise<WorkerSamplingClient> {
    const cfg = this.#model(modelId).cfg;
    return await this.openSampler(cfg, 0, sch, (sid) => {
      const o = this.#objects.samplers.get(sid)!;
      return this.quantum(o, sid, 'createInferenceSampler', (api) => api.createInferenceSampler(sid, modelId));
    }, { modelId });
  }

  /** Device time of a client's (or model's) scheduler job and of all jobs so far. */
  deviceTime(id: string): { jobMs: number; totalMs: number } | undefined {
    const schedId = this.#objects.schedId(id);
    if (!this.scheduler.jobs().some((j) => j.id === schedId)) return undefined;
    return { jobMs: this.scheduler.stats(schedId).deviceMs, totalMs: this.scheduler.totalDeviceMs };
  }

  /** Published adapter versions in the worker, which are on the GPU (LRU order), loads and evictions. */
  adapterStats(): Promise<RegistryStats> {
    return this.gpu.call((api) => api.adapterStats());
  }

  memory(): Promise<ServiceMemory> {
    return this.gpu.call((api) => api.serviceMemory());
  }

  /** Internal to the clients: count a step's skip; the `maxSkippedInARow`-th in a row pauses the job and throws. */
  noteStep(o: Owned, id: string, r: OptimStepResult): void {
    (o.skips ??= new SkipCounter(this.options.maxSkippedInARow ?? 5)).check(id, r, {
      skipped: (s) => this.#emit({ type: 'step-skipped', ...s }),
      stopping: (err) => {
        if (this.scheduler.stats(o.schedId).state === 'active') this.scheduler.pause(o.schedId, err.message);
        this.#emit({ type: 'job-paused', jobId: id, error: err.message });
      },
    });
  }

  /** A job's (or sampler's, or model's) scheduler stats, with its skipped training steps. */
  status(id: string): JobStatus {
    const o = this.#objects.jobs.get(id);
    return { ...this.scheduler.stats(this.#objects.schedId(id)), skippedSteps: o?.skips?.total ?? 0, skippedInARow: o?.skips?.inARow ?? 0 };
  }

  /** Scheduler shortcuts: they reach the job's queued quanta (ids are the clients' ids). */
  pause(id: string): void {
    this.scheduler.pause(this.#objects.schedId(id));
  }
  resume(id: string): void {
    this.scheduler.resume(this.#objects.schedId(id));
  }
  cancel(id: string): void {
    this.scheduler.cancel(this.#objects.schedId(id));
  }
  reprioritize(id: string, change: { priority?: PriorityClass; weight?: number }): void {
    this.scheduler.reprioritize(this.#objects.schedId(id), change);
  }

  /** Drill: destroy the worker's device, as a driver reset would. */
  loseDevice(): Promise<void> {
    return this.gpu.call((api) => api.loseDevice());
  }

  /** Internal to the clients' close(): queued quanta reject, the running one completes, then the worker frees the object. */
  closeOwned(o: Owned, id: string, release: (api: Api) => Promise<void>): Promise<void> {
    return this.#objects.closeOwned(o, id, release);
  }

  isLive(o: Owned): boolean {
    return this.#objects.isLive(o);
  }

  async close(): Promise<void> {
    this.#objects.closeAll();
    for (const u of this.#unsub) u();
    if (this.#ownsClient) this.gpu.close();
    else await this.gpu.call((api) => api.serviceInit({})).catch(() => {});
  }
}
