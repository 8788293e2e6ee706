/**
 * Tinker-style clients: the runtime's public face. A training job talks to a TrainingClient, a
 * rollout to a SamplingClient, and both come from a ServiceClient that owns the base models.
 * Everything crossing these interfaces is plain data, so the same job code runs on the engine in
 * this thread (LocalService) or in the GPU worker behind the scheduler (the worker service);
 * the high-level job runner is built from these calls alone — there is no private back door.
 */
import type { LossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { SampleFn, SampleRequest, SampleResult } from '../env/types.ts';
import type { GenerateOptions } from '../model/generate.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { OwnerStats } from '../gpu/pool.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { OptimStepOptions } from '../model/optimizer.ts';
import type { ForwardBackwardResult, LogprobsResult, Trainable, TrainerState } from '../model/trainer.ts';
import type { PublishedAdapter } from './adapter_registry.ts';

export type { ForwardBackwardResult, LogprobsResult, OptimStepOptions, PublishedAdapter, Trainable, TrainerState };

/** Wraps one decode chunk's GPU work (generate's `quantum` hook). */
export type ChunkQuantum = NonNullable<GenerateOptions['quantum']>;

/** Host parameters by canonical name (src/model/params.ts). */
export type HostParams = Record<string, Float32Array>;

export interface CreateModelOptions {
  /** Model id; default derived from the config name. */
  id?: string;
  /** Host parameters; absent: a seeded from-scratch initialization. */
  params?: HostParams;
  /** Seed of the from-scratch initialization. */
  seed?: number;
  /** Store frozen linear weights as f16 where the device has shader-f16. */
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
   * Publish the job's LoRA adapter as the next version of `name` in the service (a LoRA job only):
   * inference clients asking for `name` get it from their next request on, the base untouched.
   * (Optional in the interface so wrappers written before it keep compiling; both services have it.)
   */
  saveWeightsForSampler?(name: string): Promise<PublishedAdapter>;
  /** Exact-resume state: trained tensors, AdamW moments, step counters. */
  saveState(): Promise<TrainerState>;
  loadState(state: TrainerState): Promise<void>;
  memory(): Promise<OwnerStats>;
  close(): Promise<void>;
}

export interface SamplingClient {
  /** Which weights: the model id, and the adapter id and version when an adapter is applied. */
  readonly modelId: string;
  readonly adapterId: string | null;
  readonly version: number;
  /** The agent layer's sampling contract (src/env/types.ts). */
  readonly sample: SampleFn;
  /**
   * `sample` with each decode chunk's GPU work run through `quantum` (a scheduler's turn), so other
   * jobs use the device between chunks — how the GPU worker makes decode chunks scheduler quanta.
   */
  readonly sampleInQuanta?: (requests: readonly SampleRequest[], quantum: ChunkQuantum) => Promise<readonly SampleResult[]>;
  close(): Promise<void>;
}

export interface ServiceClient {
  readonly adapter: AdapterSummary;
  createModel(cfg: ModelConfig, opts?: CreateModelOptions): Promise<string>;
  /** Host copy of a base model's parameters. */
  modelWeights(modelId: string): Promise<HostParams>;
  releaseModel(modelId: string): Promise<void>;
  createTrainingClient(opts: TrainingClientOptions): Promise<TrainingClient>;
  /**
   * Sampling from a base model with published adapters chosen per request: `adapterId` is `name`
   * (the latest version when the request is served) or `name@v`; none is the base. Results carry
   * `adapter: { name, version }`. Versions load onto the GPU on demand and are evicted LRU.
   * (Optional in the interface so wrappers written before it keep compiling; both services have it.)
   */
  createInferenceClient?(modelId: string): Promise<SamplingClient>;
  /** Sampling from a base model, optionally with a LoRA adapter given as host tensors. */
  createSamplingClient(modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }): Promise<SamplingClient>;
  /**
   * Device time (ms) used so far by a client's job, and by every job of the service together —
   * where the service schedules jobs on a shared device (the WorkerService); undefined for an id it
   * does not know.
   */
  deviceTime?(clientId: string): { jobMs: number; totalMs: number } | undefined;
  /** Pool accounting of the device. */
  memory(): Promise<{ liveBytes: number; peakLiveBytes: number; owners: Record<string, OwnerStats> }>;
  close(): Promise<void>;
}
