// Deno suite: the GPU core cases on Deno's WebGPU (Mesa llvmpipe here; a real GPU elsewhere),
// plus the same kernel run inside a Deno Worker.
import { assert } from 'chai';
import * as Comlink from 'comlink';
import { addFixture, gpuCoreCases } from '../shared/cases/gpu_core.ts';
import { firstBitDiff } from '../shared/gpu.ts';
import { registerCases } from '../shared/register.ts';
import { residualAddRef } from '../../src/ops/residual.ref.ts';
import type { AddWorkerApi } from '../shared/add.worker.ts';

const opts = { sanitizeOps: false, sanitizeResources: false };

registerCases(gpuCoreCases);

Deno.test({
  name: 'worker: the same kernel in a Deno Worker gives the CPU reference bitwise',
  ...opts,
  fn: async () => {
    const worker = new Worker(new URL('../shared/add.worker.ts', import.meta.url), { type: 'module' });
    try {
      const api = Comlink.wrap<AddWorkerApi>(worker);
      const { a, b } = addFixture();
      const { host, out } = await api.run(a, b);
      assert.strictEqual(host, 'deno-worker');
      const want = new Float32Array(a.length);
      residualAddRef(want, a, b);
      assert.strictEqual(firstBitDiff(out, want), -1);
    } finally {
      worker.terminate();
    }
  },
});

Deno.test({
  name: 'device: acquired under Deno on the main thread',
  ...opts,
  fn: async () => {
    const { testGpu } = await import('../shared/gpu.ts');
    const ctx = await testGpu();
    assert.strictEqual(ctx.adapter.host, 'deno');
    assert.isAtLeast(ctx.adapter.limits.maxComputeWorkgroupsPerDimension, 65535);
  },
});
