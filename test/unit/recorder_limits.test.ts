// Host-side checks of the recorder and the 1-D grid helper, with a fake context (no GPU needed).
import { describe, expect, it } from 'vitest';
import { grid1d, Recorder } from '../../src/gpu/recorder.ts';
import { KernelLayout } from '../../src/gpu/kernel_layout.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { LimitError } from '../../src/errors.ts';
import { fakeDevice } from './fake_gpu.ts';

// Kernel "k": reads x, writes y, reads the uniform n.
const K = new KernelLayout('k', `
struct P { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(1) fn main() { y[0] = x[0] + f32(p.n); }
`);

function fakeCtx(limits: Record<string, number>): GpuContext {
  const device = fakeDevice(limits);
  return {
    device,
    hasTimestamps: false,
    limit: (n: string) => limits[n],
    pipelines: { get: () => new Promise(() => {}), layout: () => K },
  } as unknown as GpuContext;
}

describe('grid1d', () => {
  it('uses x alone up to the per-dimension limit', () => {
    const ctx = fakeCtx({ maxComputeWorkgroupsPerDimension: 65535 });
    expect(grid1d(ctx, 1, 256)).toEqual({ workgroups: [1, 1, 1], rowThreads: 256 });
    expect(grid1d(ctx, 65535 * 256, 256)).toEqual({ workgroups: [65535, 1, 1], rowThreads: 65535 * 256 });
  });
  it('splits over y past the limit and still covers every thread', () => {
    const ctx = fakeCtx({ maxComputeWorkgroupsPerDimension: 100 });
    for (const threads of [100 * 64 + 1, 5000 * 64, 9999 * 64 + 17]) {
      const { workgroups: [x, y], rowThreads } = grid1d(ctx, threads, 64);
      expect(x).toBeLessThanOrEqual(100);
      expect(y).toBeLessThanOrEqual(100);
      expect(rowThreads).toBe(x * 64);
      expect(x * y * 64).toBeGreaterThanOrEqual(threads);
    }
    expect(() => grid1d(ctx, 10001 * 64, 64)).toThrow(LimitError);
  });
});

describe('Recorder limits', () => {
  const ctx = fakeCtx({ maxComputeWorkgroupsPerDimension: 65535, maxStorageBufferBindingSize: 1024, minUniformBufferOffsetAlignment: 256 });
  const small = new Tensor(ctx, {} as GPUBuffer, [256], 'f32', 'o', 'small');
  const big = new Tensor(ctx, {} as GPUBuffer, [257], 'f32', 'o', 'big');
  it('refuses a binding over maxStorageBufferBindingSize, naming the kernel and the tensor', () => {
    const rec = new Recorder(ctx);
    expect(() => rec.dispatch({ kernel: 'k', bindings: { x: small, y: big }, params: { n: 1 }, workgroups: [1] })).toThrow(LimitError);
    expect(() => rec.dispatch({ kernel: 'k', bindings: { x: small, y: big }, params: { n: 1 }, workgroups: [1] }))
      .toThrow(/k: binding y \(Tensor\(big: f32\[257\]\)\) is 1028 bytes, over the device's maxStorageBufferBindingSize of 1024/);
    expect(rec.pending).toBe(0);
  });
  it('refuses workgroup counts over the per-dimension limit', () => {
    const rec = new Recorder(ctx);
    const bindings = { x: small, y: small };
    expect(() => rec.dispatch({ kernel: 'k', bindings, params: { n: 1 }, workgroups: [65536] })).toThrow(/k: workgroup count 65536/);
    expect(() => rec.dispatch({ kernel: 'k', bindings, params: { n: 1 }, workgroups: [1, 1.5] })).toThrow(LimitError);
  });
  it('cannot be submitted twice', async () => {
    const rec = new Recorder(ctx);
    const p = rec.submit();
    p.catch(() => {}); // the fake device cannot really submit; only the guard is under test
    expect(() => rec.dispatch({ kernel: 'k', bindings: { x: small, y: small }, params: { n: 1 }, workgroups: [1] })).toThrow(/already submitted/);
    await expect(rec.submit()).rejects.toThrow(/already submitted/);
  });
});

describe('adapterKind', () => {
  it('tells llvmpipe, SwiftShader, other fallbacks and hardware apart', async () => {
    const { adapterKind } = await import('../../src/gpu/device.ts');
    const base = { host: 'deno' as const, vendor: '', architecture: '', device: '', description: '', isFallbackAdapter: false, features: [], limits: {} };
    expect(adapterKind({ ...base, description: 'llvmpipe (LLVM 15.0.6, 256 bits)', isFallbackAdapter: true })).toBe('llvmpipe');
    expect(adapterKind({ ...base, vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true })).toBe('swiftshader');
    expect(adapterKind({ ...base, description: 'Microsoft Basic Render Driver (WARP)' })).toBe('software');
    expect(adapterKind({ ...base, description: 'NVIDIA H200', vendor: 'nvidia' })).toBe('hardware');
  });
});
