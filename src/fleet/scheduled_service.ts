/**
 * A fleet host's jobs sharing its device by priority and weight. The worker runs each job on a
 * LocalService of its own; with several jobs at once (`--slots`), every call of a job's service
 * that does GPU work — creating and reading models, each forward/backward, optimizer step,
 * log-prob pass, state copy, snapshot and sampling call — is one quantum of the host's Scheduler
 * (scheduler.ts), the job registered there with its FleetJob's kind, priority class and weight.
 * So an interactive job's quanta go before a normal one's, and within a class device time is
 * shared by weight (start-time fair queuing), as the in-page WorkerService does for its jobs.
 *
 * The calls and their order within a job are unchanged, so a job's results are too. The wrapped
 * service does not report deviceTime (its metrics stay those of `npm run train`).
 */
import type {
  CreateModelOptions, FullTrainingOptions, LoraTrainingOptions, SamplingClient, ServiceClient, TrainingClient, TrainingClientOptions,
} from '../runtime/clients.ts';
import type { JobSpec, Scheduler } from '../runtime/scheduler.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { HostParams } from '../runtime/clients.ts';
import type { SampleCall } from '../runtime/sample_call.ts';
import type { FleetJob } from './jobs.ts';

/** The scheduler job of a fleet job's delivery (admission stays the worker's: memory is its own check). */
export function jobSpecOf(job: FleetJob, id: string): JobSpec {
  return { id, kind: job.kind, priority: job.priority, weight: job.weight, memoryBytes: 0 };
}

/** `inner`'s calls as quanta of `jobId` on `scheduler` (the job must be submitted there). */
export function scheduledService(inner: ServiceClient, scheduler: Scheduler, jobId: string): ServiceClient {
  const q = <T>(label: string, fn: () => Promise<T>) => scheduler.quantum(jobId, fn, label);
  const sampling = (s: SamplingClient): SamplingClient => ({
    modelId: s.modelId,
    adapterId: s.adapterId,
    version: s.version,
    sample: ((...args: Parameters<SampleCall>) => q('sample', () => (s.sample as (...a: unknown[]) => Promise<unknown>)(...args))) as SampleCall,
    ...(s.sampleWith ? { sampleWith: (r, st, quantum) => q('sample', () => s.sampleWith!(r, st, quantum)) } : {}),
    close: () => s.close(),
  });
  const training = (t: TrainingClient): TrainingClient => ({
    id: t.id,
    modelId: t.modelId,
    trainable: t.trainable,
    forwardBackward: (batch, loss, opts) => q('forwardBackward', () => t.forwardBackward(batch, loss, opts)),
    optimStep: (opts) => q('optimStep', () => t.optimStep(opts)),
    computeLogprobs: (batch) => q('computeLogprobs', () => t.computeLogprobs(batch)),
    samplingClient: async () => sampling(await q('snapshot', () => t.samplingClient())),
    weights: () => q('weights', () => t.weights()),
    saveWeightsForSampler: (name) => q('publish', () => t.saveWeightsForSampler(name)),
    saveState: () => q('saveState', () => t.saveState()),
    loadState: (state) => q('loadState', () => t.loadState(state)),
    memory: () => t.memory(),
    close: () => t.close(),
  });
  return {
    get adapter() {
      return inner.adapter;
    },
    createModel: (cfg: ModelConfig, opts?: CreateModelOptions) => q('createModel', () => inner.createModel(cfg, opts)),
    modelWeights: (modelId: string) => q('modelWeights', () => inner.modelWeights(modelId)),
    releaseModel: (modelId: string) => q('releaseModel', () => inner.releaseModel(modelId)),
    createTrainingClient: async (opts: TrainingClientOptions) => training(await q('create', () => inner.createTrainingClient(opts))),
    createLoraTrainingClient: async (modelId: string, opts: LoraTrainingOptions) => training(await q('create', () => inner.createLoraTrainingClient(modelId, opts))),
    createFullTrainingClient: async (modelId: string, opts?: FullTrainingOptions) => training(await q('create', () => inner.createFullTrainingClient(modelId, opts))),
    createInferenceClient: async (modelId: string) => sampling(await q('create', () => inner.createInferenceClient(modelId))),
    createSamplingClient: async (modelId: string, adapter?: { lora: LoraConfig; tensors: HostParams; id?: string }) => sampling(await q('create', () => inner.createSamplingClient(modelId, adapter))),
    memory: () => inner.memory(),
    close: () => inner.close(),
  };
}
