/**
 * The in-process ServiceClient: the engine on this thread's device (Deno's main thread, a test,
 * or the GPU worker itself, which wraps one of these). Base models are uploaded once and shared
 * by every job on them; each training client owns its gradients, moments and adapter; sampling
 * clients sample from snapshots, so a rollout sees one consistent version of the weights.
 */
import type { GpuContext } from '../gpu/device.ts';
import { BaseModel } from '../model/base_model.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { initParameters } from '../model/init.ts';
import { LoraAdapter } from '../model/lora.ts';
import { engineSampleFn, type EngineSampleFnOptions, tokenizerVocabMask } from '../model/sample_fn.ts';
import type { VocabMask } from '../ops/vocab_mask.ts';
import { Trainer, type TrainerState } from '../model/trainer.ts';
import type { AdapterWeights } from '../model/weights_view.ts';
import { ConfigError } from '../errors.ts';
import type { SampleRequest } from '../env/types.ts';
import { AdapterRegistry, type PublishedAdapter, registrySample } from './adapter_registry.ts';
import { SkipCounter } from './skip_policy.ts';
import type { AdapterStore } from './store/adapter_store.ts';
import { makeSampleCall, type SamplerSettings } from './sample_call.ts';
import {
  type ChunkQuantum,
  type CreateModelOptions,
  hubOptionsOf,
  type FullTrainingOptions,
  fullTrainingOptions,
  type LoraTrainingOptions,
  loraTrainingOptions,
  type HostParams,
  type OptimStepResult,
  type SamplingClient,
  type ServiceClient,
  type TrainingClient,
  type TrainingClientOptions,
} from './clients.ts';
import type { LossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';

/** Settings of a LocalService. */
export interface LocalServiceOptions {
  /** Detokenizer for stop strings in sampling requests. */
  decode?: (ids: readonly number[]) => string;
  /** Decode steps per GPU submission. */
  chunk?: number;
  /**
   * Training steps skipped in a row (non-finite loss or gradients) after which optimStep rejects
   * with NonFiniteStepsError (the step itself skipped, state untouched). Default: no limit — the
   * WorkerService, which can pause a job, counts them itself.
   */
  maxSkippedInARow?: number;
  /** Published adapter versions kept on the GPU at once (LRU; default 4). */
  maxResidentAdapters?: number;
  /** Host copies of published versions kept per name (default 2). */
  keepAdapterVersions?: number;
  /**
   * Where published adapter versions are also written (durable before saveWeightsForSampler
   * resolves), and where inference requests for versions this service does not hold — published
   * by an earlier service on the same store — are looked up (adapter_registry.ts).
   */
  adapterStore?: AdapterStore;
}

function withoutValueHead(p: HostParams): HostParams {
  const out: HostParams = {};
  for (const [k, v] of Object.entries(p)) if (!k.startsWith('value_head.')) out[k] = v;
  return out;
}

let nextId = 0;

/** The ServiceClient on a device of this thread: `new LocalService(await gpu.acquireGpu())`. */
export class LocalService implements ServiceClient {
  readonly ctx: GpuContext;
  readonly options: LocalServiceOptions;
  /** Published adapter versions and their GPU residency (adapter_registry.ts). */
  readonly adapters: AdapterRegistry;
  #models = new Map<string, BaseModel>();
  /** Pretrained models' own detokenizer and sampleable ids (from their tokenizer). */
  #text = new Map<string, { decode: (ids: readonly number[]) => string; vocabMask: VocabMask }>();

  constructor(ctx: GpuContext, options: LocalServiceOptions = {}) {
    this.ctx = ctx;
    this.options = options;
    this.adapters = new AdapterRegistry(ctx, {
      ...(options.maxResidentAdapters !== undefined ? { maxResident: options.maxResidentAdapters } : {}),
      ...(options.keepAdapterVersions !== undefined ? { keepVersions: options.keepAdapterVersions } : {}),
      ...(options.adapterStore ? { store: options.adapterStore } : {}),
    });
  }

  get adapter() {
    return this.ctx.adapter;
  }

  #model(id: string): BaseModel {
    const m = this.#models.get(id);
    if (!m) throw new ConfigError('modelId', `no model "${id}" (known: ${[...this.#models.keys()].join(', ') || 'none'})`);
    return m;
  }

  createModel(cfg: ModelConfig, opts: CreateModelOptions = {}): Promise<string> {
    const id = opts.id ?? `${cfg.name ?? cfg.family}#${nextId++}`;
    if (this.#models.has(id)) return Promise.reject(new ConfigError('id', `a model "${id}" exists already`));
    if (opts.pretrained) return this.#loadModel(id, cfg, opts);
    const params = opts.params ?? initParameters(cfg, opts.seed ?? 0);
    this.#models.set(id, BaseModel.upload(this.ctx, cfg, params, { owner: `model:${id}`, f16: Boolean(opts.f16) }));
    return Promise.resolve(id);
  }

  /** createModel of a pretrained checkpoint: streamed from its files to the GPU, one tensor at a time. */
  async #loadModel(id: string, cfg: ModelConfig, opts: CreateModelOptions): Promise<string> {
    const ref = opts.pretrained!;
    if (opts.params || opts.seed !== undefined) throw new ConfigError('pretrained', 'a pretrained model takes neither params nor seed');
    const { loadPretrained } = await import('../hub/pretrained.ts');
    const p = await loadPretrained(ref.repo, hubOptionsOf(ref));
    try {
      if (JSON.stringify(p.config) !== JSON.stringify(cfg)) {
        throw new ConfigError('cfg', `differs from ${ref.repo}'s config.json (configFromHf gives ${JSON.stringify(p.config)})`);
      }
      if (this.#models.has(id)) throw new ConfigError('id', `a model "${id}" exists already`);
      const model = await BaseModel.load(this.ctx, p.config, p.weights, { owner: `model:${id}`, f16: opts.f16 ?? 'auto' });
      this.#models.set(id, model);
      this.#text.set(id, { decode: (ids) => p.tokenizer.decode(ids), vocabMask: tokenizerVocabMask(p.tokenizer) });
      return id;
    } finally {
      await p.close();
    }
  }

  /** The config of a loaded base model. */
  modelConfig(modelId: string): ModelConfig {
    return this.#model(modelId).cfg;
  }

  modelWeights(modelId: string): Promise<HostParams> {
    return this.#model(modelId).toHost();
  }

  releaseModel(modelId: string): Promise<void> {
    this.#model(modelId).release();
    this.#models.delete(modelId);
    this.#text.delete(modelId);
    return Promise.resolve();
  }

  async createTrainingClient(opts: TrainingClientOptions): Promise<TrainingClient> {
    const model = this.#model(opts.modelId);
    const id = opts.id ?? `job${nextId++}`;
    let adapter: LoraAdapter | undefined;
    if (opts.trainable === 'lora') {
      if (!opts.lora) throw new ConfigError('lora', "a 'lora' training client needs a LoRA config");
      adapter = opts.adapter
        ? LoraAdapter.fromHost(this.ctx, model.cfg, opts.lora, opts.adapter, { id: `${id}-adapter`, owner: `job:${id}` })
        : LoraAdapter.init(this.ctx, model.cfg, opts.lora, opts.seed ?? 0, { id: `${id}-adapter`, owner: `job:${id}` });
    }
    try {
      const trainer = await Trainer.create(model, {
        id,
        trainable: opts.trainable,
        ...(adapter ? { adapter } : {}),
        ...(opts.valueHead ? { valueHead: true } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
        ...(opts.recompute ? { recompute: true } : {}),
      });
      return new LocalTrainingClient(this, opts.modelId, model, trainer, adapter);
    } catch (e) {
      adapter?.release();
      throw e;
    }
  }

  /** Tinker's front door: a LoRA training client (clients.ts, loraTrainingOptions). */
  createLoraTrainingClient(modelId: string, opts: LoraTrainingOptions): Promise<TrainingClient> {
    try {
      return this.createTrainingClient(loraTrainingOptions(modelId, this.#model(modelId).cfg, opts));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Tinker's front door: a full-parameter training client (clients.ts, fullTrainingOptions). */
  createFullTrainingClient(modelId: string, opts: FullTrainingOptions = {}): Promise<TrainingClient> {
    try {
      return this.createTrainingClient(fullTrainingOptions(modelId, opts));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  createSamplingClient(modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }): Promise<SamplingClient> {
    const model = this.#model(modelId);
    const a = adapter
      ? LoraAdapter.fromHost(this.ctx, model.cfg, adapter.lora, adapter.tensors, { id: adapter.id ?? `sampler-${nextId++}` })
      : null;
    return Promise.resolve(this.sampler(modelId, model, a, 0, () => a?.release()));
  }

  /**
   * A sampling client over a base whose requests name published adapters (`name` or `name@v`); each
   * call pins the versions it resolved, so a publish or an eviction never changes a running batch.
   */
  createInferenceClient(modelId: string): Promise<SamplingClient> {
    const model = this.#model(modelId);
    const sampleWith = (requests: readonly SampleRequest[], settings: SamplerSettings, quantum?: ChunkQuantum) =>
      registrySample(this.adapters, { id: modelId, cfg: model.cfg }, requests, (adapters) => engineSampleFn({ ...this.#sampleOptions(modelId, model, settings, quantum), adapters }));
    return Promise.resolve({
      modelId, adapterId: null, version: 0,
      sample: makeSampleCall(sampleWith),
      sampleWith,
      close: () => Promise.resolve(),
    });
  }

  #sampleOptions(modelId: string, weights: BaseModel, settings: SamplerSettings, quantum?: ChunkQuantum): EngineSampleFnOptions {
    const own = this.#text.get(modelId);
    const decode = own?.decode ?? this.options.decode;
    return {
      weights,
      ...(decode ? { decode } : {}),
      ...(own ? { vocabMask: own.vocabMask } : {}),
      ...(this.options.chunk !== undefined ? { chunk: this.options.chunk } : {}),
      owner: `sample:${modelId}`,
      ...(quantum ? { quantum } : {}),
      ...(settings.topK !== undefined ? { topK: settings.topK } : {}),
      ...(settings.topP !== undefined ? { topP: settings.topP } : {}),
      ...(settings.seed !== undefined ? { seed: settings.seed } : {}),
      ...(settings.stopReasons ? { stopReasons: true } : {}),
      ...(settings.onTokens ? { onTokens: settings.onTokens } : {}),
    };
  }

  /** A sampling client over given weights; `onClose` frees what the snapshot owns. */
  sampler(modelId: string, weights: BaseModel, adapter: AdapterWeights | null, version: number, onClose: () => void): SamplingClient {
    const resolve = adapter ? (id: string) => (id === adapter.id ? adapter : undefined) : undefined;
    // Requests without an adapter id get this client's adapter: a sampling client *is* a policy.
    const own = (reqs: readonly SampleRequest[]) => (adapter ? reqs.map((r) => (r.adapterId === undefined ? { ...r, adapterId: adapter.id } : r)) : reqs);
    const sampleWith = (reqs: readonly SampleRequest[], settings: SamplerSettings, quantum?: ChunkQuantum) =>
      engineSampleFn({ ...this.#sampleOptions(modelId, weights, settings, quantum), ...(resolve ? { adapters: resolve } : {}) })(own(reqs));
    return {
      modelId,
      adapterId: adapter?.id ?? null,
      version,
      sample: makeSampleCall(sampleWith),
      sampleWith,
      close: () => Promise.resolve(onClose()),
    };
  }

  memory() {
    const s = this.ctx.pool.stats();
    return Promise.resolve({ liveBytes: s.liveBytes, peakLiveBytes: s.peakLiveBytes, cachedBytes: s.cachedBytes, owners: s.owners });
  }

  close(): Promise<void> {
    this.adapters.close();
    for (const m of this.#models.values()) m.release();
    this.#models.clear();
    return Promise.resolve();
  }
}

class LocalTrainingClient implements TrainingClient {
  readonly id: string;
  readonly trainable;
  #version = 0;
  readonly #skips: SkipCounter;

  constructor(
    readonly service: LocalService,
    readonly modelId: string,
    readonly model: BaseModel,
    readonly trainer: Trainer,
    readonly adapter: LoraAdapter | undefined,
  ) {
    this.id = trainer.id;
    this.trainable = trainer.trainable;
    this.#skips = new SkipCounter(service.options.maxSkippedInARow ?? Infinity);
  }

  forwardBackward(batch: PackedBatch, loss: LossSpec, opts: { logprobs?: boolean } = {}) {
    return this.trainer.forwardBackward(batch, loss, opts);
  }

  async optimStep(opts: OptimStepOptions): Promise<OptimStepResult> {
    const r = { ...(await this.trainer.optimStep(opts)), step: this.trainer.step };
    this.#skips.check(this.id, r);
    return r;
  }

  computeLogprobs(batch: PackedBatch) {
    return this.trainer.computeLogprobs(batch);
  }

  async weights(): Promise<HostParams> {
    return withoutValueHead((await this.trainer.exportState()).params);
  }

  async samplingClient(): Promise<SamplingClient> {
    const version = ++this.#version;
    const trained = await this.weights();
    const ctx = this.service.ctx;
    if (this.adapter) {
      const snap = LoraAdapter.fromHost(ctx, this.model.cfg, this.adapter.lora, trained, { id: `${this.id}@${version}`, owner: `sampler:${this.id}` });
      return this.service.sampler(this.modelId, this.model, snap, version, () => snap.release());
    }
    const snap = BaseModel.upload(ctx, this.model.cfg, trained, { owner: `sampler:${this.id}@${version}` });
    return this.service.sampler(`${this.modelId}/${this.id}@${version}`, snap, null, version, () => snap.release());
  }

  async saveWeightsForSampler(name: string): Promise<PublishedAdapter> {
    if (!this.adapter) throw new ConfigError('trainable', `job "${this.id}" trains every parameter: only a LoRA job publishes adapter versions (use samplingClient() for a snapshot)`);
    return this.service.adapters.publish(name, this.modelId, this.model.cfg, this.adapter.lora, await this.weights(), this.trainer.step);
  }

  saveState(): Promise<TrainerState> {
    return this.trainer.exportState();
  }

  loadState(state: TrainerState): Promise<void> {
    this.trainer.importState(state);
    return Promise.resolve();
  }

  memory() {
    return Promise.resolve(this.trainer.memory());
  }

  close(): Promise<void> {
    this.trainer.release();
    this.adapter?.release();
    return Promise.resolve();
  }
}
