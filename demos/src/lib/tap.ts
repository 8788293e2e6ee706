/**
 * A ServiceClient that watches one job: it passes every call to the page's WorkerService and
 * remembers what the job made — its scheduler job ids (so the share panel can add them up as one
 * job), the base model it trains on (the warm-started weights arrive here as `createModel`'s
 * params), and the training client in use now (so the chat can sample the weights as they are).
 *
 * Built from the public client interfaces only: `runTraining(tap, options)` cannot tell it from
 * the service itself. Three departures from a plain pass-through, all about sharing the service:
 *   - the ids a job chooses for its models and clients get a per-tap prefix, so two runs on one
 *     service (the arena) do not ask for the same id;
 *   - the job's own rollout samplers run in the scheduler's 'normal' class, so an interactive
 *     sampler (the chat) is served first at every quantum boundary;
 *   - `releaseModel` waits for live samplers borrowed through `withLiveSampler`, so the job
 *     cannot free its base while a chat reply still decodes on it.
 */
import {
  type CreateModelOptions,
  type FullTrainingOptions,
  fullTrainingOptions,
  type HostParams,
  JobCancelledError,
  type LoraConfig,
  type LoraTrainingOptions,
  loraTrainingOptions,
  type ModelConfig,
  type PublishedAdapter,
  type SamplerScheduleOptions,
  type SamplingClient,
  type ServiceClient,
  type TrainingClient,
  type WorkerSamplingClient,
  type WorkerService,
  type WorkerTrainingClient,
  type WorkerTrainingClientOptions,
} from '../../../src/mod.ts';

/** The base a job's adapter applies to: the weights as they were uploaded. */
export interface CapturedBase {
  readonly modelId: string;
  readonly cfg: ModelConfig;
  /** Host parameters (the warm-started weights), or null for a seeded from-scratch init. */
  readonly params: HostParams | null;
  readonly seed: number | undefined;
}

/** What a live sampler was taken from. */
export interface LiveInfo {
  readonly clientId: string;
  readonly trainable: 'lora' | 'all';
  /** Optimizer steps applied to that client when the snapshot was taken. */
  readonly step: number;
}

let taps = 0;

export class TapService implements ServiceClient {
  readonly inner: WorkerService;
  /** Every scheduler job id this job created (models, training clients, samplers). */
  readonly schedIds = new Set<string>();
  /** The latest base model created (the RL job's base once the warm start is over). */
  base: CapturedBase | null = null;
  #current: TapTrainingClient | null = null;
  #borrowed = new Map<string, Set<Promise<unknown>>>();
  #stopped = false;

  /** Prefix of the ids the job names itself (so two runs on one service do not collide). */
  readonly prefix: string;
  /** Micro-batch and sequence length admission estimates the job's training clients at (default: the service's, 8 × the model's context). */
  schedule: { batch: number; seqLen: number } | null = null;

  constructor(inner: WorkerService) {
    this.inner = inner;
    this.prefix = `run${++taps}.`;
  }

  get adapter() {
    return this.inner.adapter;
  }

  /** The training client the job uses now (null between clients and after the job). */
  get current(): TapTrainingClient | null {
    return this.#current;
  }

  /** Cancel every scheduler job of this job and refuse new ones: the runner's next call rejects. */
  stop(): void {
    this.#stopped = true;
    const sched = this.inner.scheduler;
    for (const j of sched.jobs()) {
      if (this.schedIds.has(j.id) && (j.state === 'active' || j.state === 'paused' || j.state === 'waiting')) sched.cancel(j.id);
    }
  }

  /** Internal: throws once the job was stopped. */
  live(what: string): void {
    if (this.#stopped) throw new JobCancelledError(what, 'was stopped');
  }

  async createModel(cfg: ModelConfig, opts: CreateModelOptions = {}): Promise<string> {
    this.live('createModel');
    const id = await this.inner.createModel(cfg, opts.id === undefined ? opts : { ...opts, id: this.prefix + opts.id });
    this.schedIds.add(`model:${id}`);
    this.base = { modelId: id, cfg, params: opts.params ?? null, seed: opts.seed };
    return id;
  }

  modelWeights(modelId: string): Promise<HostParams> {
    return this.inner.modelWeights(modelId);
  }

  async releaseModel(modelId: string): Promise<void> {
    const uses = this.#borrowed.get(modelId);
    if (uses) await Promise.allSettled([...uses]);
    return this.inner.releaseModel(modelId);
  }

  async createTrainingClient(opts: WorkerTrainingClientOptions): Promise<TrainingClient> {
    this.live('createTrainingClient');
    const sized = this.schedule && !opts.schedule ? { ...opts, schedule: this.schedule } : opts;
    const c = new TapTrainingClient(this, await this.inner.createTrainingClient(sized.id === undefined ? sized : { ...sized, id: this.prefix + sized.id }));
    this.schedIds.add(c.id);
    this.#current = c;
    return c;
  }

  createLoraTrainingClient(modelId: string, opts: LoraTrainingOptions): Promise<TrainingClient> {
    return this.createTrainingClient(loraTrainingOptions(modelId, this.inner.modelConfig(modelId), opts));
  }

  createFullTrainingClient(modelId: string, opts: FullTrainingOptions = {}): Promise<TrainingClient> {
    return this.createTrainingClient(fullTrainingOptions(modelId, opts));
  }

  async createSamplingClient(modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }): Promise<SamplingClient> {
    this.live('createSamplingClient');
    const s = await this.inner.createSamplingClient(modelId, adapter, { priority: 'normal' });
    this.schedIds.add(s.id);
    return s;
  }

  /** Sampling from a base with published adapters chosen per request (WorkerService.createInferenceClient). */
  async createInferenceClient(modelId: string): Promise<SamplingClient> {
    this.live('createInferenceClient');
    const s = await this.inner.createInferenceClient(modelId, { priority: 'normal' });
    this.schedIds.add(s.id);
    return s;
  }

  memory() {
    return this.inner.memory();
  }

  /** The job owns nothing the page does not: the page closes the WorkerService itself. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Internal to TapTrainingClient. */
  ended(c: TapTrainingClient): void {
    if (this.#current === c) this.#current = null;
  }

  /** Internal to TapTrainingClient. */
  sampled(s: WorkerSamplingClient): void {
    this.schedIds.add(s.id);
  }

  /**
   * Runs `f` with a sampler over the current training client's weights as they are now (a
   * snapshot, an interactive scheduler job of its own, closed afterwards), or resolves null when
   * the job has no training client at the moment. The base stays loaded until `f` settles.
   */
  async withLiveSampler<T>(f: (s: WorkerSamplingClient, info: LiveInfo) => Promise<T>, sch: SamplerScheduleOptions = { priority: 'interactive' }): Promise<T | null> {
    const c = this.#current;
    if (!c) return null;
    let done!: () => void;
    const use = new Promise<void>((r) => (done = r));
    const uses = this.#borrowed.get(c.modelId) ?? new Set();
    this.#borrowed.set(c.modelId, uses.add(use));
    try {
      const step = c.steps;
      const s = await c.inner.samplingClient(sch);
      try {
        return await f(s, { clientId: c.id, trainable: c.trainable, step });
      } finally {
        await s.close();
      }
    } finally {
      uses.delete(use);
      done();
    }
  }
}

/** Passes calls through; counts optimizer steps; its rollout samplers run in the 'normal' class. */
export class TapTrainingClient implements TrainingClient {
  readonly inner: WorkerTrainingClient;
  readonly #tap: TapService;
  steps = 0;

  constructor(tap: TapService, inner: WorkerTrainingClient) {
    this.#tap = tap;
    this.inner = inner;
  }

  get id() {
    return this.inner.id;
  }
  get modelId() {
    return this.inner.modelId;
  }
  get trainable() {
    return this.inner.trainable;
  }

  forwardBackward(...a: Parameters<TrainingClient['forwardBackward']>) {
    return this.inner.forwardBackward(...a);
  }
  async optimStep(...a: Parameters<TrainingClient['optimStep']>) {
    const r = await this.inner.optimStep(...a);
    this.steps = r.step;
    return r;
  }
  computeLogprobs(...a: Parameters<TrainingClient['computeLogprobs']>) {
    return this.inner.computeLogprobs(...a);
  }
  async samplingClient(): Promise<SamplingClient> {
    this.#tap.live('samplingClient');
    const s = await this.inner.samplingClient({ priority: 'normal' });
    this.#tap.sampled(s);
    return s;
  }
  weights() {
    return this.inner.weights();
  }
  saveWeightsForSampler(name: string): Promise<PublishedAdapter> {
    return this.inner.saveWeightsForSampler(name);
  }
  saveState() {
    return this.inner.saveState();
  }
  loadState(...a: Parameters<TrainingClient['loadState']>) {
    return this.inner.loadState(...a);
  }
  memory() {
    return this.inner.memory();
  }
  close(): Promise<void> {
    this.#tap.ended(this);
    return this.inner.close();
  }
}
