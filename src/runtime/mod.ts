/**
 * The `runtime` namespace of the public API (src/mod.ts): the machinery under the services and
 * jobs — the weighted fair scheduler, the GPU worker's client and message types, the adapter
 * registry behind inference clients, the engine-facing sample call, the job settings' checks,
 * metrics helpers and the device self-check. The services, clients, stores and jobs themselves are
 * at the package's top level (no name is in both: test/unit/public_api.test.ts).
 */
export { Scheduler } from './scheduler.ts';
export type { JobKind, JobSpec, JobState, JobStats, PriorityClass, QuantumReport, SchedulerEvent, SchedulerOptions } from './scheduler.ts';
export { GpuClient } from './gpu_client.ts';
export type { GpuClientEvent, GpuClientOptions } from './gpu_client.ts';
export type { AdapterStoreSpec, GpuWorkerApi, SelfCheckResult, WorkerEvent, WorkerInitOptions } from './protocol.ts';
export type { JobStatus } from './worker_service.ts';
export { AdapterRegistry } from './adapter_registry.ts';
export type { AdapterRegistryOptions, RegistryModel, RegistryStats } from './adapter_registry.ts';
export { makeSampleCall } from './sample_call.ts';
export type { EngineSample, EngineSampleResult, SampleCall, SamplerSettings } from './sample_call.ts';
export { checkJobOptions, JOB_LIMITS } from './job_config.ts';
export { summaryOf } from './rl_job.ts';
export { isGpuLoss } from './recovery.ts';
export { jsonLine, spread, stepLossStats } from './metrics.ts';
export type { StepLossStats } from './metrics.ts';
export { selfCheck } from './self_check.ts';
