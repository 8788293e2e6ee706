/**
 * The TrainingClient's GPU calls, listed once. Each is one scheduler quantum of its job in the
 * WorkerService and one call in the GPU worker's serial lane, where it is forwarded by job id to
 * the LocalService's client (the engine). From this table follow the worker's API for them
 * (JobCalls, in ServiceWorkerApi), the worker's dispatch (gpu_worker.ts) and the page's
 * forwarding (WorkerTrainingClient, worker_clients.ts); their argument and result types are the
 * TrainingClient interface's (clients.ts), which also documents each. Adding a call there and
 * here is all it takes for it to reach the worker. The other members cross differently:
 * samplingClient (the worker needs the page's sampler id, the page a sampler job of its own),
 * memory (read at once, not a quantum) and close (the scheduler's job ends first, then the worker
 * frees the job).
 */
import type { HostParams, TrainingClient } from './clients.ts';

export const TRAINING_CALL_NAMES = ['forwardBackward', 'optimStep', 'computeLogprobs', 'weights', 'saveWeightsForSampler', 'saveState', 'loadState'] as const;

export type TrainingCall = (typeof TRAINING_CALL_NAMES)[number];
export type TrainingCallArgs<K extends TrainingCall> = Parameters<TrainingClient[K]>;
export type TrainingCallResult<K extends TrainingCall> = Awaited<ReturnType<TrainingClient[K]>>;

/** The same calls addressed by job id: the GPU worker's form of them (ServiceWorkerApi, protocol.ts). */
export type JobCalls = { [K in TrainingCall]: (jobId: string, ...args: TrainingCallArgs<K>) => Promise<TrainingCallResult<K>> };

export interface TrainingCallSpec<K extends TrainingCall> {
  /** Its quantum's label in the scheduler's reports. */
  readonly label: string;
  /** Arrays of the result whose buffers go back to the page by transfer, not copy. */
  readonly transfer?: (r: TrainingCallResult<K>) => Iterable<ArrayBufferView | undefined>;
}

/** A host tensor map's arrays (to transfer). */
export const hostArrays = (p: HostParams): Float32Array[] => Object.values(p);

export const TRAINING_CALLS: { readonly [K in TrainingCall]: TrainingCallSpec<K> } = {
  forwardBackward: { label: 'forwardBackward', transfer: (r) => [r.logprobsBT] },
  optimStep: { label: 'optimStep' },
  computeLogprobs: { label: 'computeLogprobs', transfer: (r) => [r.logprobsBT, r.logits, r.valuesBT] },
  weights: { label: 'weights', transfer: hostArrays },
  saveWeightsForSampler: { label: 'publish' },
  saveState: { label: 'saveState', transfer: (s) => [...hostArrays(s.params), ...hostArrays(s.m), ...hostArrays(s.v)] },
  loadState: { label: 'loadState' },
};
