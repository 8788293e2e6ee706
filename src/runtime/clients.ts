/**
 * Tinker-style clients: the runtime's public face. A training job talks to a TrainingClient, a
 * rollout to a SamplingClient, and both come from a ServiceClient that owns the base models.
 * Everything crossing these interfaces is plain data, so the same job code runs on the engine in
 * this thread (LocalService) or in the GPU worker behind the scheduler (the worker service);
 * the high-level job runner is built from these calls alone — there is no private back door.
 * Tinker's names are here too: `createLoraTrainingClient(baseModel, { rank })` and
 * `createFullTrainingClient` are checked front doors to createTrainingClient (one implementation,
 * below, for every service), and `SamplingClient.sample(prompt, n, params)` is Tinker's call form
 * beside the agent layer's `sample(requests)` (sample_call.ts).
 */
import type { LoadPretrainedOptions } from '../hub/pretrained.ts';
import type { LossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { SampleRequest } from '../env/types.ts';
import { ConfigError } from '../errors.ts';
import type { GenerateOptions } from '../model/generate.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { OwnerStats } from '../gpu/pool.ts';
import { LORA_TARGETS, type LoraConfig, type LoraTarget, type ModelConfig } from '../model/config.ts';
import { blockLinears } from '../model/params.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';
import type { ForwardBackwardResult, LogprobsResult, Trainable, TrainerState } from '../model/trainer.ts';
import type { PublishedAdapter } from './adapter_registry.ts';
import type { EngineSampleResult, SampleCall, SamplerSettings } from './sample_call.ts';

export type { ForwardBackwardResult, LogprobsResult, OptimStepOptions, PublishedAdapter, Trainable, TrainerState };
export type { ModelInput, SampleCall, SampledSequence, SampleResponse, SamplerSettings, SamplingParams, StopReason } from './sample_call.ts';

/** Wraps one decode chunk's GPU work (generate's `quantum` hook). */
export type ChunkQuantum = NonNullable<GenerateOptions['quantum']>;

/** Host parameters by canonical name (src/model/params.ts). */
export type HostParams = Record<string, Float32Array>;

/**
 * A pretrained checkpoint a service loads itself (loadPretrained's arguments, src/hub): plain data,
 * so it crosses to the GPU worker, is kept as the model's recipe for revival after a device loss,
 * and goes into a fleet job. The service streams the weights from the file (or its cache) to the
 * GPU and samples with the checkpoint's tokenizer (stop strings, never an id the tokenizer lacks).
 */
export interface PretrainedRef {
  /** A Hub repo id ("org/name") or, under Deno/Node, a folder in the same layout. */
  readonly repo: string;
  /** Branch, tag or commit (default 'main'); a job pins the commit it resolved. */
  readonly revision?: string;
  /** Hub origin (default HF_ENDPOINT, else https://huggingface.co). */
  readonly endpoint?: string;
  /** Hugging Face cache folder (default HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub). */
  readonly cacheDir?: string;
  /** Read the cache only (default HF_HUB_OFFLINE). */
  readonly offline?: boolean;
}

/** loadPretrained's options locating `ref` (its `commit`, when pinned, over its revision). */
export function hubOptionsOf(ref: Omit<PretrainedRef, 'repo'> & { readonly commit?: string }): Pick<LoadPretrainedOptions, 'revision' | 'endpoint' | 'cacheDir' | 'offline'> {
  const revision = ref.commit ?? ref.revision;
  return {
    ...(revision !== undefined ? { revision } : {}), ...(ref.endpoint !== undefined ? { endpoint: ref.endpoint } : {}),
    ...(ref.cacheDir !== undefined ? { cacheDir: ref.cacheDir } : {}), ...(ref.offline !== undefined ? { offline: ref.offline } : {}),
  };
}

export interface CreateModelOptions {
  /** Model id; default derived from the config name. */
  id?: string;
  /** Host parameters; absent: a seeded from-scratch initialization. */
  params?: HostParams;
  /** Seed of the from-scratch initialization. */
  seed?: number;
  /** A pretrained checkpoint to load (its config.json must give the config passed beside it). */
  pretrained?: PretrainedRef;
  /** Store frozen linear weights as f16 where the device has shader-f16 (pretrained default: when the checkpoint is 16-bit). */
  f16?: boolean;
}

export interface TrainingClientOptions {
  /** Base model id (from createModel). */
  modelId: string;
  trainable: Trainable;
  /** LoRA configuration ('lora' jobs). */
  lora?: LoraConfig;
  /** Adapter to start from (host tensors), instead of a seeded init. */
  adapter?: HostParams;
  /** Seed of the adapter / value head init. */
  seed?: number;
  valueHead?: boolean;
  recompute?: boolean;
  /** Job id (pool owner `job:<id>`). */
  id?: string;
}

export interface OptimStepResult {
  gradNorm: number;
  skipped: boolean;
  /** Applied steps so far. */
  step: number;
}

export interface TrainingClient {
  readonly id: string;
  readonly modelId: string;
  readonly trainable: Trainable;
  /** Accumulate gradients of one packed micro-batch under `loss`. */
  forwardBackward(batch: PackedBatch, loss: LossSpec, opts?: { logprobs?: boolean }): Promise<ForwardBackwardResult>;
  /** Apply the accumulated gradients (skipped, state untouched, when the loss or norm is not finite). */
  optimStep(opts: OptimStepOptions): Promise<OptimStepResult>;
  /** Forward only: per-token log-probs of the targets under the current weights. */
  computeLogprobs(batch: PackedBatch): Promise<LogprobsResult>;
  /**
   * A sampling function over the weights as they are now (a snapshot: later steps do not change
   * what it samples). `version` names the snapshot in results.
   */
  samplingClient(): Promise<SamplingClient>;
  /** The trained tensors: the adapter's (lora) or every parameter (all). */
  weights(): Promise<HostParams>;
  /**
   * Publish the job's LoRA adapter as the next version of `name` in the service (a LoRA job only;
   * a full-parameter job gets a ConfigError): inference clients asking for `name` get it from
   * their next request on, the base untouched. With an adapter store the version is durable
   * before this resolves.
   */
  saveWeightsForSampler(name: string): Promise<PublishedAdapter>;
  /** Exact-resume state: trained tensors, AdamW moments, step counters. */
  saveState(): Promise<TrainerState>;
  loadState(state: TrainerState): Promise<void>;
  memory(): Promise<OwnerStats>;
  close(): Promise<void>;
}

/**
 * Tinker's `save_weights_and_get_sampling_client`: publish the job's adapter as the next version
 * of `name` (durable in the service's store, servable by name to inference clients) and return a
 * sampling client over exactly those weights.
 */
export async function saveWeightsAndGetSamplingClient(client: TrainingClient, name: string): Promise<{ published: PublishedAdapter; sampler: SamplingClient }> {
  const published = await client.saveWeightsForSampler(name);
  return { published, sampler: await client.samplingClient() };
}

export interface SamplingClient {
  /** Which weights: the model id, and the adapter id and version when an adapter is applied. */
  readonly modelId: string;
  readonly adapterId: string | null;
  readonly version: number;
  /**
   * `sample(requests)`: the agent layer's SampleFn (src/env/types.ts); `sample(prompt, n, params)`:
   * Tinker's form → `{ sequences: [{ tokens, logprobs, stopReason }] }` (sample_call.ts).
   */
  readonly sample: SampleCall;
  /** The engine call both forms of `sample` end in, with call-wide settings (in-process clients; the GPU worker's entry). */
  readonly sampleWith?: (requests: readonly SampleRequest[], settings: SamplerSettings, quantum?: ChunkQuantum) => Promise<readonly EngineSampleResult[]>;
  close(): Promise<void>;
}

export interface ServiceClient {
  readonly adapter: AdapterSummary;
  createModel(cfg: ModelConfig, opts?: CreateModelOptions): Promise<string>;
  /** Host copy of a base model's parameters. */
  modelWeights(modelId: string): Promise<HostParams>;
  releaseModel(modelId: string): Promise<void>;
  createTrainingClient(opts: TrainingClientOptions): Promise<TrainingClient>;
  /** Tinker's front door: a LoRA training client on `modelId` (loraTrainingOptions). */
  createLoraTrainingClient(modelId: string, opts: LoraTrainingOptions): Promise<TrainingClient>;
  /** Tinker's front door: a full-parameter training client on `modelId` (fullTrainingOptions). */
  createFullTrainingClient(modelId: string, opts?: FullTrainingOptions): Promise<TrainingClient>;
  /**
   * Sampling from a base model with published adapters chosen per request: `adapterId` is `name`
   * (the latest version when the request is served) or `name@v`; none is the base. Results carry
   * `adapter: { name, version }`. Versions load onto the GPU on demand and are evicted LRU.
   * Tinker's `create_sampling_client(model_path=...)`: how a served policy picks up what training
   * publishes (`saveWeightsForSampler`), so every service has it.
   */
  createInferenceClient(modelId: string): Promise<SamplingClient>;
  /** Sampling from a base model, optionally with a LoRA adapter given as host tensors. */
  createSamplingClient(modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }): Promise<SamplingClient>;
  /**
   * Device time (ms) used so far by a client's job, and by every job of the service together —
   * where the service schedules jobs on a shared device (the WorkerService); undefined for an id it
   * does not know.
   */
  deviceTime?(clientId: string): { jobMs: number; totalMs: number } | undefined;
  /** Pool accounting of the device. */
  memory(): Promise<{ liveBytes: number; peakLiveBytes: number; cachedBytes: number; owners: Record<string, OwnerStats> }>;
  close(): Promise<void>;
}

// ─── Tinker's front doors to createTrainingClient, shared by every service ───

export interface LoraTrainingOptions {
  /** LoRA rank R ≥ 1. */
  rank: number;
  /** α > 0 (update scale α / R). Default 2·R, as `npm run train`. */
  alpha?: number;
  /** Target modules. Default: every linear of a block (attention and MLP), as Tinker. */
  targets?: readonly LoraTarget[];
  /** Seed of the adapter init. Default 0. */
  seed?: number;
  /** Job id. */
  id?: string;
}

export interface FullTrainingOptions {
  /** Seed of the value head init (and the job's stream). Default 0. */
  seed?: number;
  id?: string;
  /** Train a value head beside the policy (PPO). */
  valueHead?: boolean;
}

function checkKeys(what: string, o: object, known: readonly string[]): void {
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new ConfigError(k, `unknown field of ${what} (known: ${known.join(', ')})`);
}

function checkCommon(modelId: unknown, o: { seed?: unknown; id?: unknown }): void {
  if (typeof modelId !== 'string' || modelId.length === 0) throw new ConfigError('modelId', `must be a model id from createModel, got ${String(modelId)}`);
  if (o.seed !== undefined && !(typeof o.seed === 'number' && Number.isInteger(o.seed) && o.seed >= 0 && o.seed < 2 ** 32)) throw new ConfigError('seed', `must be an integer in [0, 2^32), got ${String(o.seed)}`);
  if (o.id !== undefined && (typeof o.id !== 'string' || o.id.length === 0)) throw new ConfigError('id', `must be a non-empty string, got ${String(o.id)}`);
}

/**
 * createLoraTrainingClient's options as createTrainingClient's: checked (ConfigError naming the
 * field), with Tinker's defaults filled in from the base's config `cfg`. The LoRA config itself is
 * checked again against the model by the engine (validateLora).
 */
export function loraTrainingOptions(modelId: string, cfg: ModelConfig, opts: LoraTrainingOptions): TrainingClientOptions {
  if (typeof opts !== 'object' || opts === null) throw new ConfigError('rank', 'createLoraTrainingClient needs { rank }');
  checkKeys('createLoraTrainingClient options', opts, ['rank', 'alpha', 'targets', 'seed', 'id']);
  checkCommon(modelId, opts);
  const { rank } = opts;
  if (typeof rank !== 'number' || !Number.isSafeInteger(rank) || rank < 1) throw new ConfigError('rank', `must be a positive integer, got ${String(rank)}`);
  const alpha = opts.alpha ?? 2 * rank;
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha <= 0) throw new ConfigError('alpha', `must be a positive number, got ${String(alpha)}`);
  const targets = opts.targets ?? blockLinears(cfg);
  if (!Array.isArray(targets) || targets.length === 0 || targets.some((t) => !(LORA_TARGETS as readonly string[]).includes(t))) {
    throw new ConfigError('targets', `must be a non-empty array of ${LORA_TARGETS.join('|')}, got ${JSON.stringify(targets)}`);
  }
  return {
    modelId, trainable: 'lora', lora: { rank, alpha, targets: [...targets] },
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    ...(opts.id !== undefined ? { id: opts.id } : {}),
  };
}

/** createFullTrainingClient's options as createTrainingClient's (checked; ConfigError naming the field). */
export function fullTrainingOptions(modelId: string, opts: FullTrainingOptions = {}): TrainingClientOptions {
  if (typeof opts !== 'object' || opts === null) throw new ConfigError('opts', 'must be an object');
  checkKeys('createFullTrainingClient options', opts, ['seed', 'id', 'valueHead']);
  checkCommon(modelId, opts);
  if (opts.valueHead !== undefined && typeof opts.valueHead !== 'boolean') throw new ConfigError('valueHead', `must be a boolean, got ${String(opts.valueHead)}`);
  return {
    modelId, trainable: 'all',
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    ...(opts.id !== undefined ? { id: opts.id } : {}),
    ...(opts.valueHead ? { valueHead: true } : {}),
  };
}
