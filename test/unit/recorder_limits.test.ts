// Host-side checks of the recorder and the 1-D grid helper, with a fake context (no GPU needed).
import { describe, expect, it } from 'vitest';
import { grid1d, Params, Recorder } from '../../src/gpu/recorder.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { LimitError } from '../../src/errors.ts';
import { fakeDevice } from './fake_gpu.ts';

function fakeCtx(limits: Record<string, number>): GpuContext {
  const device = fakeDevice(limits);
  return {
    device,
    hasTimestamps: false,
    limit: (n: string) => limits[n],
    pipelines: { get: () => new Promise(() => {}) },
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
    expect(() => rec.dispatch({ kernel: 'k', bindings: [small, big], workgroups: [1] })).toThrow(LimitError);
    expect(() => rec.dispatch({ kernel: 'k', bindings: [small, big], workgroups: [1] }))
      .toThrow(/k: binding 1 \(Tensor\(big: f32\[257\]\)\) is 1028 bytes, over the device's maxStorageBufferBindingSize of 1024/);
    expect(rec.pending).toBe(0);
  });
  it('refuses workgroup counts over the per-dimension limit', () => {
    const rec = new Recorder(ctx);
    expect(() => rec.dispatch({ kernel: 'k', bindings: [small], workgroups: [65536] })).toThrow(/k: workgroup count 65536/);
    expect(() => rec.dispatch({ kernel: 'k', bindings: [small], workgroups: [1, 1.5] })).toThrow(LimitError);
  });
  it('cannot be submitted twice', async () => {
    const rec = new Recorder(ctx);
    const p = rec.submit();
    p.catch(() => {}); // the fake device cannot really submit; only the guard is under test
    expect(() => rec.dispatch({ kernel: 'k', bindings: [small], workgroups: [1] })).toThrow(/already submitted/);
    await expect(rec.submit()).rejects.toThrow(/already submitted/);
  });
});

describe('Params', () => {
  it('packs u32, i32 and f32 little-endian, padded to 16 bytes', () => {
    const b = new Params().u32(7).i32(-2).f32(1.5).bytes();
    expect(b.byteLength).toBe(16);
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    expect(v.getUint32(0, true)).toBe(7);
    expect(v.getInt32(4, true)).toBe(-2);
    expect(v.getFloat32(8, true)).toBe(1.5);
    expect(new Params().u32(1).u32(2).u32(3).u32(4).u32(5).bytes().byteLength).toBe(32);
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
