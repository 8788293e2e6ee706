/**
 * The typed protocol between the page (or Deno's main thread) and the GPU worker, in one place.
 * comlink carries it: the page calls `GpuWorkerApi` methods as async functions; ArrayBuffers in
 * results travel by transfer, not copy; events come back through a proxied callback.
 * Everything crossing the boundary is plain data (structured clone).
 */
import type { SampleRequest } from '../env/types.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { OwnerStats, PoolStats } from '../gpu/pool.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { Trainable } from '../model/trainer.ts';
import type { RegistryStats } from './adapter_registry.ts';
import type { CreateModelOptions, HostParams, TrainingClientOptions } from './clients.ts';
import type { EngineSampleResult, SamplerSettings } from './sample_call.ts';
import type { JobCalls } from './training_calls.ts';

export interface WorkerInitOptions {
  label?: string;
  /** Force the f32 paths even where shader-f16 exists. */
  disableF16?: boolean;
}

/** Events the worker pushes to the page. */
export type WorkerEvent =
  | { type: 'device-lost'; reason: string; message: string }
  | { type: 'gpu-error'; message: string };

export interface SelfCheckResult {
  elements: number;
  mismatches: number;
  gpuNs?: number;
}

/** What the GPU worker exposes: the device, drills, and the hosted engine service. */
export interface GpuWorkerApi extends ServiceWorkerApi {
  /** Acquire (or re-acquire after a loss) the device; returns the adapter it found. */
  init(opts?: WorkerInitOptions): Promise<AdapterSummary>;
  /** Subscribe to worker events (pass `Comlink.proxy(callback)`). */
  subscribe(callback: (e: WorkerEvent) => void): void;
  /** Byte accounting of the worker's tensor pool. */
  poolStats(): Promise<PoolStats>;
  /** Run the `add` kernel on `n` seeded elements against its CPU reference. */
  selfCheck(n: number, seed: number): Promise<SelfCheckResult>;
  /** Destroy the device, as a driver reset would (for fault-recovery tests and drills). */
  loseDevice(): Promise<void>;
  /** Throw an uncaught error inside the worker, as a bug would (for fault-recovery tests and drills). */
  crash(): void;
}

// ─── The engine service hosted by the worker (a LocalService on the worker's device) ───────────
// Every object lives in the worker and is named by an id the page chooses; the page runs each call
// that touches the GPU as one scheduler quantum (worker_service.ts). The worker also runs its GPU
// calls one at a time, in arrival order, so a close can never free buffers under a running step.

/** How the worker's sampler detokenizes for stop strings (functions cannot cross to the worker). */
export type ServiceTokenizer =
  | { kind: 'byte' }
  | { kind: 'hf'; tokenizerJson: string; tokenizerConfig?: string };

/**
 * Where the worker opens the adapter store its published versions are written to (a KvStore cannot
 * cross to the worker): IndexedDB database `db` (browsers; default "webtinker"), or files under
 * `dir` (Deno).
 */
export type AdapterStoreSpec = { kind: 'indexeddb'; db?: string } | { kind: 'files'; dir: string };

export interface ServiceInitOptions {
  /** Persist published adapter versions there, and find earlier ones (adapter_registry.ts). */
  adapterStore?: AdapterStoreSpec;
  tokenizer?: ServiceTokenizer;
  /** Decode steps per GPU submission inside one generate() call. */
  chunk?: number;
  /** Published adapter versions kept on the GPU at once (LRU). */
  maxResidentAdapters?: number;
  /** Host copies of published versions kept per name. */
  keepAdapterVersions?: number;
}

/** The page's turn for one decode chunk: resolves when the scheduler grants it, with the function that ends the turn. */
export type ChunkGate = () => Promise<() => void>;

/** A sampling snapshot in the worker. */
export interface SamplerInfo {
  id: string;
  modelId: string;
  adapterId: string | null;
  version: number;
}

export interface TrainingJobInfo {
  id: string;
  modelId: string;
  trainable: Trainable;
}

export interface ServiceMemory {
  liveBytes: number;
  peakLiveBytes: number;
  /** Released buffers the pool keeps for reuse (not live; at most its cache limit). */
  cachedBytes: number;
  owners: Record<string, OwnerStats>;
}

/**
 * The service half of the worker's API: LocalService's operations keyed by ids. A training job's
 * GPU calls (forwardBackward, optimStep, ..., saveWeightsForSampler) are the TrainingClient's,
 * with the job id first (JobCalls, from the one list in training_calls.ts; their large results
 * come back by transfer).
 */
export interface ServiceWorkerApi extends JobCalls {
  /** (Re)create the hosted service on the current device, dropping every model, job and sampler. */
  serviceInit(opts?: ServiceInitOptions): Promise<void>;
  serviceMemory(): Promise<ServiceMemory>;
  createModel(cfg: ModelConfig, opts: CreateModelOptions & { id: string }): Promise<string>;
  /** Host copy of a base's parameters (buffers transferred). */
  modelWeights(modelId: string): Promise<HostParams>;
  releaseModel(modelId: string): Promise<void>;
  createTrainingClient(opts: TrainingClientOptions & { id: string }): Promise<TrainingJobInfo>;
  jobMemory(jobId: string): Promise<OwnerStats>;
  closeJob(jobId: string): Promise<void>;
  /** A snapshot of job `jobId`'s weights as sampler `samplerId`. */
  samplingSnapshot(jobId: string, samplerId: string): Promise<SamplerInfo>;
  /** A sampler over a base model, optionally with a LoRA adapter given as host tensors. */
  createSamplingClient(samplerId: string, modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }): Promise<SamplerInfo>;
  /**
   * Sample; with a `gate` (a proxied ChunkGate), each decode chunk waits for the page's scheduler to
   * grant it a quantum, and the worker's call lane is taken per chunk, not for the whole call.
   * `settings`: the call's sampler filters and key, and whether results say why they stopped.
   */
  sample(samplerId: string, requests: SampleRequest[], gate?: ChunkGate, settings?: SamplerSettings): Promise<EngineSampleResult[]>;
  /** A sampler over a base model whose requests name published adapters per request. */
  createInferenceSampler(samplerId: string, modelId: string): Promise<SamplerInfo>;
  /** Published versions, GPU residency (LRU order), loads and evictions. */
  adapterStats(): Promise<RegistryStats>;
  closeSampler(samplerId: string): Promise<void>;
}
