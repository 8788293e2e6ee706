/** The GPU layer: device (with its adapter family's quirks and tunings), pool, tensors, pipelines, recorder. */
export { acquireGpu, adapterKind, detectHost, GpuContext, installHint, summarizeAdapter } from './device.ts';
export type { AcquireOptions, AdapterKind, AdapterSummary, DeviceLostEvent, GpuHost } from './device.ts';
export type { DeviceQuirks, KernelTuning, KernelTunings, MatmulTiles } from './quirks/mod.ts';
export { flatChunks, rowChunks, windowOf } from './chunks.ts';
export type { RowChunk } from './chunks.ts';
export { BufferPool, bucketBytes, BufferUsage } from './pool.ts';
export type { OwnerStats, PoolStats } from './pool.ts';
export { bundledKernelNames, PipelineCache, pipelineCacheFor } from './pipelines.ts';
export type { Constants } from './pipelines.ts';
export { KernelProfiler } from './profiler.ts';
export type { KernelTime } from './profiler.ts';
export { grid1d, readTensor, Recorder } from './recorder.ts';
export { KernelLayout } from './kernel_layout.ts';
export type { DispatchSpec, SubmitResult } from './recorder.ts';
export { DTYPE_BYTES, emptyTensor, numel, Tensor, tensorFrom, zerosTensor } from './tensor.ts';
export type { AnyHostArray, DType, TensorOptions } from './tensor.ts';
