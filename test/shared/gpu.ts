/**
 * Shared by the GPU suites (Chromium, Deno): acquire the device once per file, or fail loudly
 * with what to install — a suite without an adapter never passes vacuously.
 */
import { acquireGpu, type AnyHostArray, type GpuContext } from '../../src/gpu/mod.ts';

let ctx: Promise<GpuContext> | null = null;

export function testGpu(): Promise<GpuContext> {
  ctx ??= acquireGpu({ label: 'test' });
  return ctx;
}

let gpuTuned: Promise<GpuContext> | null = null;

/**
 * A second device of the same adapter that runs the real-GPU kernel configurations
 * (AcquireOptions.tuning 'gpu': tiled matmul and attention, 256-wide reductions), so the code
 * users' GPUs run is tested on the software adapters too. One per file.
 */
export function gpuTunedGpu(): Promise<GpuContext> {
  gpuTuned ??= acquireGpu({ label: 'test (gpu tuning)', tuning: 'gpu' });
  return gpuTuned;
}

/** The contexts a tuning-sensitive case runs on: the adapter's own tuning, then the other one. */
export async function bothTunings(): Promise<GpuContext[]> {
  const own = await testGpu();
  if (own.tuning !== 'software') return [own];
  return [own, await gpuTunedGpu()];
}

const capped = new Map<number, Promise<GpuContext>>();

/**
 * A second device of the same adapter that reports a maxStorageBufferBindingSize of `bytes`
 * (AcquireOptions.maxStorageBufferBindingSize), so tiny models run the paths that bind tensors
 * over the limit a range at a time. One per cap per file.
 */
export function cappedGpu(bytes: number): Promise<GpuContext> {
  let c = capped.get(bytes);
  if (!c) capped.set(bytes, c = acquireGpu({ label: `test (bindings ≤ ${bytes} B)`, maxStorageBufferBindingSize: bytes }));
  return c;
}

/** Bitwise equality of two arrays of 32-bit values (f32, i32, u32): the first differing index or -1. */
export function firstBitDiff(a: AnyHostArray, b: AnyHostArray): number {
  const ua = new Uint32Array(a.buffer, a.byteOffset, (a.byteLength / 4) | 0);
  const ub = new Uint32Array(b.buffer, b.byteOffset, (b.byteLength / 4) | 0);
  if (ua.length !== ub.length) return Math.min(ua.length, ub.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}
