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
