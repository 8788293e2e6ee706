/**
 * The GPU worker: a dedicated Worker (browser) or Deno Worker that owns the device and every GPU
 * buffer. The page reaches it only through the GpuWorkerApi (protocol.ts) over comlink.
 * After a device loss the worker reports it and waits; the page's client calls `init` again,
 * which acquires a fresh device, and the runtime reloads its jobs from their checkpoints.
 *
 * The worker hosts the engine as a LocalService (local_service.ts): base models, training
 * clients and sampling snapshots live here, named by ids the page picks. The page's scheduler
 * decides *when* each call runs (worker_service.ts); the worker additionally runs its service
 * calls one at a time in arrival order (`serial`), so a close or a state load can never free or
 * overwrite buffers under a step that is still awaiting the GPU. A new device (after a loss)
 * comes with a new, empty service: the objects of the old one died with their buffers.
 * Large host results (weights, states, log-probs) go back by transfer, not copy.
 */
import * as Comlink from 'comlink';
import { acquireGpu, type GpuContext } from '../gpu/device.ts';
import { ConfigError } from '../errors.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import type { SampleRequest } from '../env/types.ts';
import type { EngineSampleResult, SamplerSettings } from './sample_call.ts';
import type { ChunkQuantum, SamplingClient, TrainingClient } from './clients.ts';
import { asDeviceLoss } from './device_loss.ts';
import { LocalService } from './local_service.ts';
import { hostArrays, type JobCalls, TRAINING_CALL_NAMES, TRAINING_CALLS, type TrainingCall, type TrainingCallArgs, type TrainingCallResult, type TrainingCallSpec } from './training_calls.ts';
import { selfCheck } from './self_check.ts';
import { AdapterStore } from './store/adapter_store.ts';
import { IdbKv } from './store/idb_kv.ts';
import type { AdapterStoreSpec, ChunkGate, GpuWorkerApi, SamplerInfo, SelfCheckResult, ServiceInitOptions, WorkerEvent, WorkerInitOptions } from './protocol.ts';

let ctx: GpuContext | null = null;
let service: LocalService | null = null;
let serviceOpts: ServiceInitOptions = {};
const jobs = new Map<string, TrainingClient>();
const samplers = new Map<string, SamplingClient>();
let lane: Promise<unknown> = Promise.resolve();
const listeners = new Set<(e: WorkerEvent) => void>();

function emit(e: WorkerEvent): void {
  for (const f of listeners) {
    // A listener whose page went away must not break the worker.
    Promise.resolve(f(e)).catch(() => listeners.delete(f));
  }
}

function device(): GpuContext {
  if (!ctx || ctx.isLost) throw new Error('the GPU worker has no device: call init() first (again after a device loss)');
  return ctx;
}

/**
 * Run service calls one at a time, in arrival order. A call that fails because the device was
 * lost under it fails with DeviceLostError (device_loss.ts), so the page knows to resume the job.
 */
function serial<T>(f: () => Promise<T> | T): Promise<T> {
  const c = ctx;
  const p = lane.then(f).catch(async (e) => {
    throw c ? await asDeviceLoss(c, e) : e;
  });
  lane = p.catch(() => {});
  return p;
}

async function decoderFor(t: ServiceInitOptions['tokenizer']): Promise<((ids: readonly number[]) => string) | undefined> {
  if (!t) return undefined;
  if (t.kind === 'byte') {
    const tok = new ByteTokenizer();
    return (ids) => tok.decode(ids);
  }
  if (t.kind === 'hf') {
    const { loadHfTokenizer } = await import('../model/tokenizer/hf.ts');
    const tok = await loadHfTokenizer(t.tokenizerJson, t.tokenizerConfig);
    return (ids) => tok.decode(ids);
  }
  throw new ConfigError('tokenizer', `unknown tokenizer kind ${JSON.stringify((t as { kind: unknown }).kind)}`);
}

/** The adapter store a spec names (the file backend imported lazily, so browser bundles never load node:fs). */
async function openAdapterStore(spec: AdapterStoreSpec | undefined): Promise<AdapterStore | undefined> {
  if (!spec) return undefined;
  if (spec.kind === 'indexeddb') return new AdapterStore(new IdbKv(spec.db ?? 'webtinker'));
  if (spec.kind === 'files') {
    if (typeof spec.dir !== 'string' || spec.dir.length === 0) throw new ConfigError('adapterStore.dir', 'must be a directory path');
    const { FileKv } = await import('./store/fs_kv.ts');
    return new AdapterStore(new FileKv(spec.dir));
  }
  throw new ConfigError('adapterStore.kind', `unknown store kind ${JSON.stringify((spec as { kind: unknown }).kind)} (known: indexeddb, files)`);
}

/**
 * A fresh service on the current device; the old one's objects are dropped (released if the device
 * lives). After a device loss (`keepAdapters`) the new service takes over the old one's published
 * adapter versions: their host copies survive the loss.
 */
async function resetService(keepAdapters = false): Promise<void> {
  const c = device();
  const decode = await decoderFor(serviceOpts.tokenizer);
  const adapterStore = await openAdapterStore(serviceOpts.adapterStore);
  const old = service;
  const oldJobs = [...jobs.values()];
  const oldSamplers = [...samplers.values()];
  jobs.clear();
  samplers.clear();
  if (old && !old.ctx.isLost) {
    for (const s of oldSamplers) await s.close().catch(() => {});
    for (const j of oldJobs) await j.close().catch(() => {});
    await old.close().catch(() => {});
  }
  service = new LocalService(c, {
    ...(decode ? { decode } : {}),
    ...(serviceOpts.chunk !== undefined ? { chunk: serviceOpts.chunk } : {}),
    ...(serviceOpts.maxResidentAdapters !== undefined ? { maxResidentAdapters: serviceOpts.maxResidentAdapters } : {}),
    ...(serviceOpts.keepAdapterVersions !== undefined ? { keepAdapterVersions: serviceOpts.keepAdapterVersions } : {}),
    ...(adapterStore ? { adapterStore } : {}),
  });
  if (keepAdapters && old) service.adapters.adopt(old.adapters);
}

function svc(): LocalService {
  const c = device();
  if (!service || service.ctx !== c) throw new Error('the GPU worker has no engine service on this device: call serviceInit() first');
  return service;
}

function job(id: string): TrainingClient {
  const j = jobs.get(id);
  if (!j) throw new ConfigError('jobId', `no training job "${id}" in the GPU worker (after a device loss or a worker restart, jobs must be recreated and reloaded from checkpoints)`);
  return j;
}

function sampler(id: string): SamplingClient {
  const s = samplers.get(id);
  if (!s) throw new ConfigError('samplerId', `no sampler "${id}" in the GPU worker`);
  return s;
}

function samplerInfo(id: string, s: SamplingClient): SamplerInfo {
  return { id, modelId: s.modelId, adapterId: s.adapterId, version: s.version };
}

/** Hand `value` back with the buffers of `arrays` transferred (each buffer once). */
function transferring<T>(value: T, arrays: Iterable<ArrayBufferView | undefined>): T {
  const bufs = new Set<ArrayBuffer>();
  for (const a of arrays) if (a && a.buffer instanceof ArrayBuffer) bufs.add(a.buffer);
  return Comlink.transfer(value, [...bufs]);
}

/** A TrainingClient call forwarded to job `jobId`'s client in the call lane, its result's arrays transferred (training_calls.ts). */
function jobCall<K extends TrainingCall>(name: K): JobCalls[K] {
  const spec: TrainingCallSpec<K> = TRAINING_CALLS[name];
  return ((jobId: string, ...args: TrainingCallArgs<K>) =>
    serial(async () => {
      const j = job(jobId);
      const r = await (j[name] as (...a: TrainingCallArgs<K>) => Promise<TrainingCallResult<K>>).apply(j, args);
      return spec.transfer ? transferring(r, spec.transfer(r)) : r;
    })) as JobCalls[K];
}

/** Every TrainingClient GPU call of the table, by its own name, with the job id first. */
const jobCalls = Object.fromEntries(TRAINING_CALL_NAMES.map((name) => [name, jobCall(name)])) as unknown as JobCalls;

/**
 * A sample call whose decode chunks are the page scheduler's quanta: each chunk waits for its turn
 * (the gate), then runs in the call lane and ends its turn — so between two chunks the page may run
 * another job's quantum here (an interactive request ahead of a long rollout).
 */
async function sampleInChunks(samplerId: string, requests: SampleRequest[], gate: Comlink.Remote<ChunkGate>, settings: SamplerSettings): Promise<EngineSampleResult[]> {
  try {
    const s = sampler(samplerId);
    if (!s.sampleWith) throw new ConfigError('samplerId', `sampler "${samplerId}" cannot sample in chunk quanta`);
    const quantum: ChunkQuantum = async (work) => {
      const end = (await gate()) as unknown as Comlink.Remote<() => void>; // a proxy of the page's function
      try {
        return await serial(work);
      } finally {
        await end();
        end[Comlink.releaseProxy]();
      }
    };
    return [...(await s.sampleWith(requests, settings, quantum))];
  } finally {
    gate[Comlink.releaseProxy]();
  }
}

const api: GpuWorkerApi = {
  async init(opts: WorkerInitOptions = {}) {
    if (ctx && !ctx.isLost) return ctx.adapter;
    const c = await acquireGpu({ label: opts.label ?? 'gpu-worker', ...(opts.disableF16 ? { disableF16: true } : {}) });
    c.onLost((e) => emit({ type: 'device-lost', reason: e.reason, message: e.message }));
    c.onUncapturedError((e) => emit({ type: 'gpu-error', message: e.message }));
    ctx = c;
    if (service) {
      // A device after a loss: a new, empty service. Calls still queued for the dead device fail on
      // their own; the new service does not wait behind them.
      lane = Promise.resolve();
      await serial(() => resetService(true));
    }
    return c.adapter;
  },

  serviceInit(opts: ServiceInitOptions = {}) {
    return serial(async () => {
      serviceOpts = { ...opts };
      await resetService(false);
    });
  },

  serviceMemory() {
    return svc().memory();
  },

  createModel(cfg, opts) {
    return serial(() => svc().createModel(cfg, opts));
  },

  modelWeights(modelId) {
    return serial(async () => {
      const p = await svc().modelWeights(modelId);
      return transferring(p, hostArrays(p));
    });
  },

  releaseModel(modelId) {
    return serial(() => svc().releaseModel(modelId));
  },

  createTrainingClient(opts) {
    return serial(async () => {
      if (jobs.has(opts.id)) throw new ConfigError('id', `a training job "${opts.id}" exists already`);
      const j = await svc().createTrainingClient(opts);
      jobs.set(opts.id, j);
      return { id: j.id, modelId: j.modelId, trainable: j.trainable };
    });
  },

  ...jobCalls,

  jobMemory(jobId) {
    return job(jobId).memory();
  },

  closeJob(jobId) {
    return serial(async () => {
      const j = jobs.get(jobId);
      if (!j) return; // closing twice (or after a device loss) is not an error
      jobs.delete(jobId);
      await j.close();
    });
  },

  samplingSnapshot(jobId, samplerId) {
    return serial(async () => {
      if (samplers.has(samplerId)) throw new ConfigError('samplerId', `a sampler "${samplerId}" exists already`);
      const s = await job(jobId).samplingClient();
      samplers.set(samplerId, s);
      return samplerInfo(samplerId, s);
    });
  },

  createSamplingClient(samplerId, modelId, adapter) {
    return serial(async () => {
      if (samplers.has(samplerId)) throw new ConfigError('samplerId', `a sampler "${samplerId}" exists already`);
      const s = await svc().createSamplingClient(modelId, adapter);
      samplers.set(samplerId, s);
      return samplerInfo(samplerId, s);
    });
  },

  sample(samplerId, requests, gate, settings = {}) {
    if (!gate) {
      return serial(async () => {
        const s = sampler(samplerId);
        if (!s.sampleWith) throw new ConfigError('samplerId', `sampler "${samplerId}" has no engine call`);
        return [...(await s.sampleWith(requests, settings))];
      });
    }
    return sampleInChunks(samplerId, requests, gate as unknown as Comlink.Remote<ChunkGate>, settings);
  },

  createInferenceSampler(samplerId, modelId) {
    return serial(async () => {
      if (samplers.has(samplerId)) throw new ConfigError('samplerId', `a sampler "${samplerId}" exists already`);
      const s = await svc().createInferenceClient(modelId);
      samplers.set(samplerId, s);
      return samplerInfo(samplerId, s);
    });
  },

  adapterStats() {
    return Promise.resolve(svc().adapters.stats());
  },

  closeSampler(samplerId) {
    return serial(async () => {
      const s = samplers.get(samplerId);
      if (!s) return;
      samplers.delete(samplerId);
      await s.close();
    });
  },

  subscribe(callback) {
    listeners.add(callback);
  },

  poolStats() {
    return Promise.resolve(device().pool.stats());
  },

  selfCheck(n, seed): Promise<SelfCheckResult> {
    return selfCheck(device(), n, seed);
  },

  async loseDevice() {
    const c = device();
    c.destroy();
    await c.lost;
  },

  crash() {
    setTimeout(() => {
      throw new Error('GPU worker crash drill');
    }, 0);
  },
};

Comlink.expose(api);
