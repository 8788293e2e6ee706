/**
 * The GPU worker: a dedicated Worker (browser) or Deno Worker that owns the device and every GPU
 * buffer. The page reaches it only through the GpuWorkerApi (protocol.ts) over comlink.
 * After a device loss the worker reports it and waits; the page's client calls `init` again,
 * which acquires a fresh device, and the runtime reloads its jobs from their checkpoints.
 */
import * as Comlink from 'comlink';
import { acquireGpu, type GpuContext } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../gpu/tensor.ts';
import { add } from '../ops/add.ts';
import { addRef } from '../ops/add.ref.ts';
import { Rng } from '../util/rng.ts';
import type { GpuWorkerApi, SelfCheckResult, WorkerEvent, WorkerInitOptions } from './protocol.ts';

let ctx: GpuContext | null = null;
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

const api: GpuWorkerApi = {
  async init(opts: WorkerInitOptions = {}) {
    if (ctx && !ctx.isLost) return ctx.adapter;
    const c = await acquireGpu({ label: opts.label ?? 'gpu-worker', ...(opts.disableF16 ? { disableF16: true } : {}) });
    c.onLost((e) => emit({ type: 'device-lost', reason: e.reason, message: e.message }));
    c.onUncapturedError((e) => emit({ type: 'gpu-error', message: e.message }));
    ctx = c;
    return c.adapter;
  },

  subscribe(callback) {
    listeners.add(callback);
  },

  poolStats() {
    return Promise.resolve(device().pool.stats());
  },

  async selfCheck(n, seed): Promise<SelfCheckResult> {
    const c = device();
    const rng = new Rng(seed);
    const a = rng.normalArray(n);
    const b = rng.normalArray(n);
    const ta = tensorFrom(c, a, [n], { owner: 'self-check' });
    const tb = tensorFrom(c, b, [n], { owner: 'self-check' });
    const out = emptyTensor(c, [n], 'f32', { owner: 'self-check' });
    try {
      const rec = new Recorder(c, { label: 'self-check', timing: true });
      add(rec, out, ta, tb);
      const read = rec.read(out);
      const { gpuNs } = await rec.submit();
      const got = (await read) as Float32Array;
      const want = new Float32Array(n);
      addRef(want, a, b);
      let mismatches = 0;
      for (let i = 0; i < n; i++) if (!Object.is(got[i], want[i])) mismatches++;
      return { elements: n, mismatches, ...(gpuNs !== undefined ? { gpuNs } : {}) };
    } finally {
      c.pool.releaseOwner('self-check');
    }
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
