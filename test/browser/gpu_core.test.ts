// Chromium suite: the GPU core cases on SwiftShader, plus the same kernel inside a module Worker.
import * as Comlink from 'comlink';
import { expect, it } from 'vitest';
import { addFixture, gpuCoreCases } from '../shared/cases/gpu_core.ts';
import { firstBitDiff } from '../shared/gpu.ts';
import { registerCases } from '../shared/register.ts';
import { residualAddRef } from '../../src/ops/residual.ref.ts';
import type { AddWorkerApi } from '../shared/add.worker.ts';

registerCases(gpuCoreCases, it);

it('worker: the same kernel in a module Worker gives the CPU reference bitwise', async () => {
  const worker = new Worker(new URL('../shared/add.worker.ts', import.meta.url), { type: 'module' });
  try {
    const api = Comlink.wrap<AddWorkerApi>(worker);
    const { a, b } = addFixture();
    const { host, out } = await api.run(a, b);
    expect(host).toBe('worker');
    const want = new Float32Array(a.length);
    residualAddRef(want, a, b);
    expect(firstBitDiff(out, want)).toBe(-1);
  } finally {
    worker.terminate();
  }
});

it('device: acquired in the page, on a WebGPU adapter with a description', async () => {
  const { testGpu } = await import('../shared/gpu.ts');
  const ctx = await testGpu();
  expect(ctx.adapter.host).toBe('window');
  expect(ctx.adapter.limits.maxComputeWorkgroupsPerDimension).toBeGreaterThanOrEqual(65535);
});
