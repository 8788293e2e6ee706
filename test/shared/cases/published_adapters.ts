/**
 * Published adapter versions outlive their service, in both GPU suites: a LoRA job's
 * saveWeightsForSampler writes each version to the adapter store (files under Deno, IndexedDB in
 * Chromium), and after a restart — a new LocalService on a new connection to the same store, or a
 * new WorkerService (a new GPU worker) opening the same store — an inference client asking for
 * `name` / `name@v` gets those versions and samples bitwise what the first service sampled.
 */
import { assert } from 'chai';
import { crossEntropyLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import type { SampledSequence, ServiceClient, TrainingClient } from '../../../src/runtime/clients.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import type { AdapterStoreSpec } from '../../../src/runtime/protocol.ts';
import { AdapterStore } from '../../../src/runtime/store/adapter_store.ts';
import type { KvStore } from '../../../src/runtime/store/kv.ts';
import { WorkerService } from '../../../src/runtime/worker_service.ts';
import { testGpu } from '../gpu.ts';
import type { PlainCase } from './adapter_store.ts';

const tok = new ByteTokenizer();
const cfg = preset('tiny-gpt2');
const prompt = tok.encode('3+4=');
const params = { maxTokens: 5, temperature: 1, seed: 21 };

/** A store location: `kv()` opens a new connection to it; `spec` names it for the GPU worker. */
export interface StoreLocation {
  kv(): KvStore;
  spec: AdapterStoreSpec;
}

async function step(job: TrainingClient, lr: number): Promise<void> {
  const batch = packDatums(sftDatumsFromPairs([{ prompt: '3+4=', completion: '7' }, { prompt: '1+1=', completion: '2' }], tok), {
    rows: 2, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false,
  }).batches[0];
  await job.forwardBackward(batch, crossEntropyLoss());
  await job.optimStep({ lr });
}

/** name@1 and name@2, as an inference client samples them (and what `name` alone gets). */
async function sampleVersions(service: ServiceClient, modelId: string, name: string): Promise<{ latest: SampledSequence[]; v1: SampledSequence[]; v2: SampledSequence[] }> {
  const inf = await service.createInferenceClient(modelId);
  try {
    const latest = [...(await inf.sample(prompt, 2, { ...params, adapter: name })).sequences];
    const v1 = [...(await inf.sample(prompt, 2, { ...params, adapter: `${name}@1` })).sequences];
    const v2 = [...(await inf.sample(prompt, 2, { ...params, adapter: `${name}@2` })).sequences];
    return { latest, v1, v2 };
  } finally {
    await inf.close();
  }
}

/** A service publishes two versions of `name` on model `modelId` (created with seed 3). */
async function publishTwo(service: ServiceClient, modelId: string, name: string): Promise<void> {
  await service.createModel(cfg, { seed: 3, id: modelId });
  const job = await service.createLoraTrainingClient(modelId, { rank: 2, targets: ['q', 'v'], seed: 4 });
  await step(job, 5e-2);
  assert.deepInclude(await job.saveWeightsForSampler(name), { name, version: 1, step: 1 });
  await step(job, 0.5);
  assert.deepInclude(await job.saveWeightsForSampler(name), { name, version: 2, step: 2 });
  await job.close();
}

function assertVersions(got: Awaited<ReturnType<typeof sampleVersions>>, want: Awaited<ReturnType<typeof sampleVersions>>, what: string): void {
  for (const s of got.latest) assert.deepEqual(s.adapter, { name: s.adapter!.name, version: 2 }, what);
  for (const s of got.v1) assert.strictEqual(s.adapter!.version, 1, what);
  assert.deepEqual(got, want, what);
}

export function publishedAdapterCases(location: () => Promise<StoreLocation>): PlainCase[] {
  return [
    {
      name: 'published adapters persist: a restarted LocalService on the same store serves name and name@v as they were published',
      async fn() {
        const loc = await location();
        const ctx = await testGpu();
        const first = new LocalService(ctx, { adapterStore: new AdapterStore(loc.kv()) });
        let before;
        try {
          await publishTwo(first, 'persist-base', 'persist-alpha');
          before = await sampleVersions(first, 'persist-base', 'persist-alpha');
        } finally {
          await first.close();
        }
        assert.notDeepEqual(before.v1.map((s) => s.tokens), before.v2.map((s) => s.tokens), 'two different versions');
        assert.deepEqual(before.latest, before.v2);
        const stored = await new AdapterStore(loc.kv()).versions('persist-alpha');
        assert.deepEqual(stored.map((m) => [m.version, m.step, m.baseModel]), [[1, 1, 'persist-base'], [2, 2, 'persist-base']]);

        const second = new LocalService(ctx, { adapterStore: new AdapterStore(loc.kv()) });
        try {
          await second.createModel(cfg, { seed: 3, id: 'persist-base' });
          assertVersions(await sampleVersions(second, 'persist-base', 'persist-alpha'), before, 'after a restart');
        } finally {
          await second.close();
        }
      },
    },
    {
      name: 'published adapters persist: a new GPU worker opening the same store serves them as they were published',
      async fn() {
        const loc = await location();
        const first = await WorkerService.start({ adapterStore: loc.spec });
        let before;
        try {
          await publishTwo(first, 'persist-wbase', 'persist-beta');
          before = await sampleVersions(first, 'persist-wbase', 'persist-beta');
        } finally {
          await first.close();
        }
        assert.deepEqual((await new AdapterStore(loc.kv()).versions('persist-beta')).map((m) => m.version), [1, 2], 'written by the worker, read here');
        const second = await WorkerService.start({ adapterStore: loc.spec });
        try {
          await second.createModel(cfg, { seed: 3, id: 'persist-wbase' });
          assertVersions(await sampleVersions(second, 'persist-wbase', 'persist-beta'), before, 'in a new worker');
          assert.deepEqual((await second.adapterStats()).published.map((p) => `${p.name}@${p.version}`), ['persist-beta@2'], 'loaded on demand');
        } finally {
          await second.close();
        }
      },
    },
  ];
}
