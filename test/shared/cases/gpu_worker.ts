/**
 * GPU worker cases for both GPU suites: the engine's Worker acquires its own device, runs a
 * kernel, reports pool bytes, and the client recovers from a device loss and from a crash.
 */
import { assert } from 'chai';
import { GpuClient, type GpuClientEvent, WorkerCrashedError } from '../../../src/runtime/gpu_client.ts';
import type { PlainCase } from './adapter_store.ts';

export const gpuWorkerCases: PlainCase[] = [
  {
    name: 'gpu worker: acquires a device in its Worker, runs a kernel, accounts its bytes',
    async fn() {
      const client = await GpuClient.start();
      try {
        assert.isAbove(client.adapter.limits.maxStorageBufferBindingSize, 0);
        assert.include(['worker', 'deno-worker'], client.adapter.host);
        const r = await client.call((api) => api.selfCheck(4099, 3));
        assert.deepEqual([r.elements, r.mismatches], [4099, 0]);
        const stats = await client.call((api) => api.poolStats());
        assert.strictEqual(stats.owners['self-check'].currentBytes, 0);
        assert.isAbove(stats.owners['self-check'].peakBytes, 3 * 4099 * 4 - 1);
      } finally {
        client.close();
      }
    },
  },
  {
    name: 'gpu worker: a lost device is reported and replaced; work continues on the new one',
    async fn() {
      const client = await GpuClient.start();
      const events: GpuClientEvent['type'][] = [];
      client.on((e) => events.push(e.type));
      try {
        const recovered = new Promise<void>((res) => client.on((e) => e.type === 'recovered' && res()));
        await client.call((api) => api.loseDevice());
        await recovered;
        assert.deepEqual(events.slice(0, 2), ['device-lost', 'recovered']);
        const r = await client.call((api) => api.selfCheck(257, 1));
        assert.strictEqual(r.mismatches, 0);
      } finally {
        client.close();
      }
    },
  },
  {
    name: 'gpu worker: a crash rejects the call in flight, and a new worker takes over',
    async fn() {
      const client = await GpuClient.start();
      const events: string[] = [];
      client.on((e) => events.push(e.type));
      try {
        const restarted = new Promise<void>((res) => client.on((e) => e.type === 'restarted' && res()));
        // A call that would never answer once the worker is dead must reject, not hang.
        const inFlight = client.call((api) => new Promise<never>(() => void api.crash()));
        let err: unknown;
        try {
          await inFlight;
        } catch (e) {
          err = e;
        }
        assert.instanceOf(err, WorkerCrashedError);
        assert.match((err as Error).message, /GPU worker crash drill/);
        await restarted;
        assert.deepEqual(events, ['worker-crashed', 'restarted']);
        const r = await client.call((api) => api.selfCheck(33, 2));
        assert.strictEqual(r.mismatches, 0);
      } finally {
        client.close();
      }
    },
  },
];
