/**
 * Sampling clients come back after a device loss, in both GPU suites: the worker's device is
 * destroyed (`device.destroy()`, through the WorkerService drill) while an inference client's call
 * is decoding. The service recreates the base model (from its recipe) and every client made by
 * createInferenceClient / createSamplingClient on the new device; the call in flight is retried
 * once there and returns what an uninterrupted call returns; published versions survive; later
 * calls sample as before the loss. A training job and its snapshot are not brought back: their
 * calls reject with LostWithDeviceError (the job runner resumes them from checkpoints).
 */
import { assert } from 'chai';
import { crossEntropyLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import type { SampleRequest } from '../../../src/env/types.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import type { AdapterStoreSpec } from '../../../src/runtime/protocol.ts';
import { LostWithDeviceError, WorkerService, type WorkerServiceEvent } from '../../../src/runtime/worker_service.ts';
import type { PlainCase } from './adapter_store.ts';
import { rejection } from './helpers.ts';

const tok = new ByteTokenizer();
const prompt = tok.encode('6+1=');

async function until(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const clientRecoveryCases: PlainCase[] = [
  {
    name: 'client recovery: the device is destroyed under an inference call; the clients are recreated on the new device and the call is retried once, with the same results',
    async fn() {
      // chunk 2: a long call is many decode quanta, so the loss lands in the middle of it.
      const service = await WorkerService.start({ tokenizer: { kind: 'byte' }, chunk: 2 });
      try {
        const cfg = preset('tiny-gpt2');
        const modelId = await service.createModel(cfg, { seed: 8, id: 'recover-base' });
        const baseWeights = await service.modelWeights(modelId);
        const job = await service.createLoraTrainingClient(modelId, { rank: 2, targets: ['q', 'v'], seed: 2 });
        const batch = packDatums(sftDatumsFromPairs([{ prompt: '6+1=', completion: '7' }], tok), { rows: 1, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
        await job.forwardBackward(batch, crossEntropyLoss());
        await job.optimStep({ lr: 0.1 });
        await job.saveWeightsForSampler('recover-alpha');
        const lora = { rank: 2, alpha: 4, targets: ['q', 'v'] as const };
        const host = await service.createSamplingClient(modelId, { lora: { ...lora, targets: [...lora.targets] }, tensors: await job.weights() });
        const inf = await service.createInferenceClient(modelId, { requestsPerQuantum: 2 });
        const snap = await job.samplingClient();

        const long = { maxTokens: 40, temperature: 1, seed: 5, adapter: 'recover-alpha' };
        const requests: SampleRequest[] = [0, 1, 2].map((seed) => ({ promptTokens: prompt, maxTokens: 6, stopStrings: [], stopTokens: [], temperature: 1, seed }));
        const wantLong = await inf.sample(prompt, 4, long);
        const wantHost = await host.sample(requests);
        assert.deepEqual(wantLong.sequences.map((s) => s.tokens), (await snap.sample(prompt, 4, { ...long, adapter: undefined })).sequences.map((s) => s.tokens), 'the published version is the job\'s weights');

        const order: string[] = [];
        const events: WorkerServiceEvent[] = [];
        service.on((e) => {
          events.push(e);
          order.push(e.type);
        });
        const quantaBefore = service.scheduler.stats(inf.id).quanta;
        const inFlight = inf.sample(prompt, 4, long).then((r) => (order.push('result'), r));
        const snapInFlight = rejection(snap.sample(prompt, 4, { ...long, adapter: undefined }));
        await until(() => service.scheduler.stats(inf.id).quanta >= quantaBefore + 3, 'the call to be decoding');
        await service.loseDevice();
        const got = await inFlight;
        assert.deepEqual(order, ['device-lost', 'recovered', 'result'], 'the call was in flight during the loss and finished on the new device');
        assert.deepEqual(got, wantLong, 'retried once: the same sequences as an uninterrupted call');

        const lost = events[0] as Extract<WorkerServiceEvent, { lost: unknown }>;
        assert.includeMembers(lost.lost.samplers, [inf.id, host.id, snap.id]);
        assert.include(lost.lost.jobs, job.id);
        const recovered = events[1] as Extract<WorkerServiceEvent, { type: 'recovered' }>;
        assert.deepEqual(recovered.restored, { models: [modelId], samplers: [host.id, inf.id] });

        // Later calls on the recreated clients sample as before; the model is back under its id.
        assert.deepEqual(await host.sample(requests), wantHost);
        assert.deepEqual(await inf.sample(prompt, 4, long), wantLong);
        const w = await service.modelWeights(modelId);
        for (const [k, v] of Object.entries(baseWeights)) assert.deepEqual([...w[k]], [...v], k);
        assert.deepEqual((await service.adapterStats()).published.map((p) => `${p.name}@${p.version}`), ['recover-alpha@1']);

        // What is not brought back says so with a typed error.
        assert.instanceOf(await snapInFlight, LostWithDeviceError);
        assert.instanceOf(await rejection(snap.sample(requests)), LostWithDeviceError);
        assert.instanceOf(await rejection(job.optimStep({ lr: 0.1 })), LostWithDeviceError);

        // A client closed after the recovery stays closed; the model can be released.
        await inf.close();
        await host.close();
        await service.releaseModel(modelId);
        assert.strictEqual(service.scheduler.stats(inf.id).state, 'finished');
      } finally {
        await service.close();
      }
    },
  },
];

/**
 * Deno only (a crash drill in a Chromium module Worker would be reported to the page as an error):
 * the GPU worker crashes; its replacement has no memory of the published versions, which come back
 * from the adapter store; the inference client is recreated and serves as before.
 */
export function clientRecoveryDenoCases(store: () => Promise<AdapterStoreSpec>): PlainCase[] {
  return [
    {
      name: 'client recovery: the GPU worker crashes; an inference client is recreated in the new worker and finds the published versions in the adapter store',
      async fn() {
        const service = await WorkerService.start({ tokenizer: { kind: 'byte' }, adapterStore: await store() });
        try {
          const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 9, id: 'crash-base' });
          const job = await service.createLoraTrainingClient(modelId, { rank: 2, targets: ['q'], seed: 3 });
          const batch = packDatums(sftDatumsFromPairs([{ prompt: '6+1=', completion: '7' }], tok), { rows: 1, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
          await job.forwardBackward(batch, crossEntropyLoss());
          await job.optimStep({ lr: 0.1 });
          await job.saveWeightsForSampler('crash-alpha');
          const inf = await service.createInferenceClient(modelId);
          const params = { maxTokens: 6, temperature: 1, seed: 2, adapter: 'crash-alpha' };
          const want = await inf.sample(prompt, 2, params);
          const events: WorkerServiceEvent[] = [];
          service.on((e) => events.push(e));
          void service.gpu.call((api) => new Promise<never>(() => void api.crash())).catch(() => {});
          await until(() => events.some((e) => e.type === 'worker-crashed'), 'the crash');
          assert.deepEqual(await inf.sample(prompt, 2, params), want, 'the same version, from the store, samples the same');
          assert.deepEqual(events.map((e) => e.type), ['worker-crashed', 'recovered']);
          assert.deepEqual((events[1] as Extract<WorkerServiceEvent, { type: 'recovered' }>).restored, { models: [modelId], samplers: [inf.id] });
          assert.instanceOf(await rejection(job.weights()), LostWithDeviceError);
          await inf.close();
        } finally {
          await service.close();
        }
      },
    },
  ];
}
