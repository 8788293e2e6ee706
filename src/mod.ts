/**
 * webtinker — the public API. Named exports only; everything else is internal.
 *
 * Layers (see DESIGN.md): environments & agents (src/env), algorithms (src/algorithms),
 * runtime (src/runtime), engine (src/model, src/ops, src/gpu, kernels/).
 */
export {
  ConfigError,
  GpuValidationError,
  KernelCompileError,
  LimitError,
  ReleasedError,
  ShapeError,
  WebGpuUnavailableError,
  WebtinkerError,
} from './errors.ts';
export {
  acquireGpu,
  BufferPool,
  bundledKernelNames,
  emptyTensor,
  GpuContext,
  Params,
  readTensor,
  Recorder,
  Tensor,
  tensorFrom,
  zerosTensor,
} from './gpu/mod.ts';
export type { AdapterSummary, DeviceLostEvent, DispatchSpec, DType, PoolStats, SubmitResult } from './gpu/mod.ts';
export { add } from './ops/add.ts';

// Runtime: scheduler, GPU worker client, stores.
export { Scheduler } from './runtime/scheduler.ts';
export type { JobKind, JobSpec, JobState, JobStats, PriorityClass, SchedulerEvent } from './runtime/scheduler.ts';
export { AdmissionError, JobCancelledError, JobStateError } from './runtime/errors.ts';
export { GpuClient, WorkerCrashedError } from './runtime/gpu_client.ts';
export type { GpuClientEvent, GpuClientOptions } from './runtime/gpu_client.ts';
export type { GpuWorkerApi, WorkerEvent, WorkerInitOptions } from './runtime/protocol.ts';
export {
  AdapterStore,
  CheckpointStore,
  defaultKv,
  IdbKv,
  MemoryKv,
  StoreCorruptError,
  StoreError,
  StoreNotFoundError,
  StoreQuotaError,
} from './runtime/store/mod.ts';
export type { AdapterInfo, AdapterMeta, AdapterTensor, CheckpointMeta, KvStore } from './runtime/store/mod.ts';
export { Rng } from './util/rng.ts';
export type { RngState } from './util/rng.ts';
