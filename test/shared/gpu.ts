/**
 * Shared by the GPU suites (Chromium, Deno): acquire the device once per file, or fail loudly
 * with what to install — a suite without an adapter never passes vacuously.
 */
import { acquireGpu, type GpuContext } from '../../src/gpu/mod.ts';

let ctx: Promise<GpuContext> | null = null;

export function testGpu(): Promise<GpuContext> {
  ctx ??= acquireGpu({ label: 'test' });
  return ctx;
}

/** Bitwise equality of two f32 arrays; returns the first differing index or -1. */
export function firstBitDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}
