/**
 * The WorkerService in both GPU suites: the engine in the GPU worker, every GPU call a scheduler
 * quantum. A LoRA job learns and samples; LoRA jobs share their base in GPU memory; interactive
 * sampling overtakes queued training quanta; admission control refuses what cannot fit; cancel
 * rejects queued quanta and frees the job; published adapter versions reach an inference job at
 * its next request, LRU-resident on the shared base; decode chunks are quanta; non-finite steps are skipped, counted, and pause the job
 * after N in a row; a lost device is reported and replaced.
 * Each case starts its own worker (no shared state between cases).
 */
import { assert } from 'chai';
import { crossEntropyLoss, importanceSamplingLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import type { SampleRequest } from '../../../src/env/types.ts';
import type { LoraConfig } from '../../../src/model/config.ts';
import { summarizeAdapter } from '../../../src/gpu/device.ts';
import { adapterMemoryDevice, estimateTrainingMemory } from '../../../src/model/memory.ts';
import { countParameters } from '../../../src/model/params.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { AdmissionError, JobCancelledError, NonFiniteStepsError } from '../../../src/runtime/errors.ts';
import type { SchedulerEvent } from '../../../src/runtime/scheduler.ts';
import { LostWithDeviceError, WorkerService, type WorkerServiceEvent } from '../../../src/runtime/worker_service.ts';
import type { PlainCase } from './adapter_store.ts';
import { rejection } from './helpers.ts';

const tok = new ByteTokenizer();
const pairs = [
  { prompt: '2+2=', completion: '4' },
  { prompt: '3+4=', completion: '7' },
  { prompt: '5+1=', completion: '6' },
];
const batchOf = () =>
  packDatums(sftDatumsFromPairs(pairs, tok), { rows: 3, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
const lora: LoraConfig = { rank: 4, alpha: 8, targets: ['q', 'v', 'up'] };
const small = { batch: 3, seqLen: 12 };
const request = (prompt: string, seed = 1): SampleRequest => ({
  promptTokens: tok.encode(prompt), maxTokens: 3, stopStrings: [], stopTokens: [tok.eosId], temperature: 0, seed,
});

async function withService(fn: (s: WorkerService) => Promise<void>, opts: Parameters<typeof WorkerService.start>[0] = {}): Promise<void> {
  const s = await WorkerService.start({ tokenizer: { kind: 'byte' }, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

export const workerServiceCases: PlainCase[] = [
  {
    name: 'worker service: a LoRA job learns through scheduler quanta in the GPU worker and samples from a snapshot',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 3 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: 5, schedule: small });
      const batch = batchOf();
      const losses: number[] = [];
      for (let i = 0; i < 6; i++) {
        losses.push((await job.forwardBackward(batch, crossEntropyLoss())).loss);
        const s = await job.optimStep({ lr: 3e-2 });
        assert.deepEqual([s.skipped, s.step], [false, i + 1]);
      }
      assert.isBelow(losses.at(-1)!, losses[0]);
      const st = service.scheduler.stats(job.id);
      assert.deepEqual([st.kind, st.priority, st.state, st.quanta], ['lora_rl', 'normal', 'active', 1 + 12]);

      // Log-probs and weights come back as typed arrays (transferred by the worker).
      const lp = await job.computeLogprobs(batch);
      assert.instanceOf(lp.logprobsBT, Float32Array);
      assert.strictEqual(lp.logprobsBT.length, batch.rows * batch.seqLen);
      const w = await job.weights();
      assert.isAbove(Object.keys(w).length, 0);
      for (const v of Object.values(w)) assert.instanceOf(v, Float32Array);

      const sampler = await job.samplingClient({ requestsPerQuantum: 1 });
      assert.strictEqual(sampler.version, 1);
      const ss = service.scheduler.stats(sampler.id);
      assert.deepEqual([ss.kind, ss.priority], ['inference', 'interactive']);
      const res = await sampler.sample([request('2+2=', 1), request('3+4=', 2)]);
      assert.strictEqual(res.length, 2);
      for (const r of res) assert.isAbove(r.tokens.length, 0);
      assert.strictEqual(service.scheduler.stats(sampler.id).quanta, 2); // one generate() per quantum
      // The snapshot does not move when the job trains on.
      await job.forwardBackward(batch, crossEntropyLoss());
      await job.optimStep({ lr: 1 });
      const again = await sampler.sample([request('2+2=', 1)]);
      assert.deepEqual(again[0].tokens, res[0].tokens);
      await sampler.close();
      await job.close();
      assert.strictEqual(service.scheduler.stats(job.id).state, 'finished');
    }),
  },
  {
    name: 'worker service: LoRA jobs on one base share its weights in GPU memory (base + N × adapter state)',
    fn: () => withService(async (service) => {
      const cfg = preset('tiny-gpt2');
      const modelId = await service.createModel(cfg, { seed: 1 });
      const base = (await service.memory()).owners[`model:${modelId}`].currentBytes;
      assert.isAtLeast(base, 4 * countParameters(cfg));
      const jobs = [];
      for (let i = 0; i < 3; i++) {
        const j = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: i, id: `multi${i}`, schedule: small });
        await j.forwardBackward(batchOf(), crossEntropyLoss());
        await j.optimStep({ lr: 1e-2 });
        jobs.push(j);
      }
      const mem = await service.memory();
      assert.strictEqual(mem.owners[`model:${modelId}`].currentBytes, base);
      const adapterState = jobs.map((j) => mem.owners[`job:${j.id}`].currentBytes);
      for (const b of adapterState) {
        assert.isAbove(b, 0);
        assert.isBelow(b, base / 2); // an adapter's state, nothing like a copy of the base
      }
      const sum = adapterState.reduce((a, b) => a + b, 0);
      assert.isAtMost(mem.liveBytes, 1.1 * (base + sum), JSON.stringify(mem.owners));
      // The scheduler reserved the base once and each job its own part (estimated for the worker's device).
      const est = estimateTrainingMemory(cfg, { ...small, mode: 'lora', lora, device: adapterMemoryDevice(service.adapter) });
      assert.strictEqual(service.scheduler.usedBytes, 4 * countParameters(cfg) + 3 * est.jobBytes);
      for (const j of jobs) await j.close();
      assert.strictEqual((await service.memory()).owners[`job:${jobs[0].id}`].currentBytes, 0);
    }),
  },
  {
    name: 'worker service: an interactive sample overtakes the quanta a training job keeps queuing',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 2 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, id: 'trainer', schedule: small });
      const sampler = await service.createSamplingClient(modelId);
      const events: SchedulerEvent[] = [];
      service.scheduler.on((e) => e.type === 'quantum' && events.push(e));
      const batch = batchOf();
      const training = Array.from({ length: 6 }, () => job.forwardBackward(batch, crossEntropyLoss()));
      const doneBefore = events.filter((e) => e.jobId === job.id).length;
      const sampled = sampler.sample([request('5+1=')]);
      await Promise.all([...training, sampled]);
      const at = events.findIndex((e) => e.jobId === sampler.id);
      const trainingBefore = events.slice(0, at).filter((e) => e.jobId === job.id).length;
      // At most the quantum running when the request came in ran before it; later ones waited.
      assert.isAtMost(trainingBefore, doneBefore + 1);
      assert.isAbove(events.slice(at).filter((e) => e.jobId === job.id).length, 0);
      assert.isAbove((await sampled)[0].tokens.length, 0);
      await sampler.close();
      await job.close();
    }),
  },
  {
    name: 'worker service: published adapter versions reach an inference job at its next request (base untouched), results name their version, adapters switch per request and stay LRU-resident',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 3 });
      const a = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: 5, id: 'pub-a', schedule: small });
      const b = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: 6, id: 'pub-b', schedule: small });
      const step = async (j: typeof a, lr: number) => {
        await j.forwardBackward(batchOf(), crossEntropyLoss());
        await j.optimStep({ lr });
      };
      const req = (adapterId?: string) => ({ ...request('2+2=', 7), temperature: 1, maxTokens: 4, ...(adapterId ? { adapterId } : {}) });
      /** What a snapshot of the job's weights now samples for the same request. */
      const snapshotTokens = async (j: typeof a) => {
        const s = await j.samplingClient();
        const t = (await s.sample([req()]))[0].tokens;
        await s.close();
        return t;
      };

      await step(a, 3e-2);
      assert.deepInclude(await a.saveWeightsForSampler('alpha'), { name: 'alpha', version: 1, modelId, step: 1 });
      const v1Tokens = await snapshotTokens(a);
      const inf = await service.createInferenceClient(modelId, { requestsPerQuantum: 4 });
      const baseQuanta = service.scheduler.stats(`model:${modelId}`).quanta;
      const r1 = (await inf.sample([req('alpha')]))[0];
      assert.deepEqual(r1.adapter, { name: 'alpha', version: 1 });
      assert.deepEqual(r1.tokens, v1Tokens);

      await step(a, 0.5);
      await step(a, 0.5);
      assert.deepInclude(await a.saveWeightsForSampler('alpha'), { version: 2, step: 3 });
      const v2Tokens = await snapshotTokens(a);
      assert.notDeepEqual(v2Tokens, v1Tokens);
      const [r2, old] = await inf.sample([req('alpha'), req('alpha@1')]);
      assert.deepEqual([r2.adapter, old.adapter], [{ name: 'alpha', version: 2 }, { name: 'alpha', version: 1 }]);
      assert.deepEqual(r2.tokens, v2Tokens);
      assert.deepEqual(old.tokens, v1Tokens);
      assert.strictEqual(service.scheduler.stats(`model:${modelId}`).quanta, baseQuanta, 'the base was not touched');

      // Switching per request, past the LRU capacity (2): all three stay pinned for the call, then two remain.
      await step(b, 3e-2);
      await b.saveWeightsForSampler('beta');
      await b.saveWeightsForSampler('gamma');
      const mixed = await inf.sample([req('beta'), req(), req('alpha'), req('gamma')]);
      assert.deepEqual(mixed.map((r) => r.adapter), [{ name: 'beta', version: 1 }, undefined, { name: 'alpha', version: 2 }, { name: 'gamma', version: 1 }]);
      assert.deepEqual(mixed[0].tokens, mixed[3].tokens); // beta and gamma are the same weights
      assert.deepEqual(mixed[2].tokens, v2Tokens);
      const st = await service.adapterStats();
      assert.deepEqual(st.published.map((p) => `${p.name}@${p.version}`), ['alpha@1', 'alpha@2', 'beta@1', 'gamma@1']);
      assert.lengthOf(st.resident, 2);
      assert.deepEqual([st.loads, st.evictions], [5, 3]);
      const mem = await service.memory();
      assert.strictEqual(mem.owners[`adapters:${modelId}`].currentBytes, 2 * st.published[0].bytes);

      assert.match(String(await rejection(inf.sample([req('nope')]))), /no published adapter "nope"/);
      assert.match(String(await rejection(inf.sample([req('alpha@9')]))), /has no version "9"/);
      await inf.close();
      await a.close();
      await b.close();
    }, { maxResidentAdapters: 2 }),
  },
  {
    name: 'worker service: decode chunks are quanta — an interactive request runs between the chunks of a longer, lower-priority generation',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 4 });
      const rollout = await service.createSamplingClient(modelId, undefined, { priority: 'normal', requestsPerQuantum: 2 });
      const whole = await service.createSamplingClient(modelId, undefined, { priority: 'normal', requestsPerQuantum: 2, chunkQuanta: false });
      const chat = await service.createSamplingClient(modelId);
      const events: SchedulerEvent[] = [];
      service.scheduler.on((e) => e.type === 'quantum' && events.push(e));
      const long = [1, 2].map((seed) => ({ ...request('Once upon a time', seed), maxTokens: 24, stopTokens: [], temperature: 1 }));
      const n = (id: string, es = events) => es.filter((e) => e.jobId === id).length;
      const generating = rollout.sample(long);
      while (n(rollout.id) === 0) await new Promise((r) => setTimeout(r, 1));
      const chunksBefore = n(rollout.id);
      const answer = await chat.sample([request('2+2=')]);
      const results = await generating;
      const at = events.findIndex((e) => e.jobId === chat.id);
      assert.isAtMost(n(rollout.id, events.slice(0, at)), chunksBefore + 1); // at most the chunk running when it came
      assert.isAbove(n(rollout.id, events.slice(at)), 0); // the generation went on after it
      assert.strictEqual(n(rollout.id), 24 / 4); // one quantum per decode chunk of 4 tokens
      assert.isAbove(answer[0].tokens.length, 0);
      // Chunk quanta change when the work runs, not what it computes.
      assert.deepEqual((await whole.sample(long)).map((r) => r.tokens), results.map((r) => r.tokens));
      assert.strictEqual(n(whole.id), 1);
      for (const c of [rollout, whole, chat]) await c.close();
    }, { chunk: 4 }),
  },
  {
    name: 'worker service: admission control refuses a job whose memory estimate exceeds the budget',
    async fn() {
      const cfg = preset('tiny-gpt2');
      const adapter = await navigator.gpu.requestAdapter(); // the one the worker's device comes from
      assert.isNotNull(adapter);
      const device = adapterMemoryDevice(summarizeAdapter(adapter!));
      const loraEst = estimateTrainingMemory(cfg, { ...small, mode: 'lora', lora, device });
      const fullEst = estimateTrainingMemory(cfg, { ...small, mode: 'full', device });
      assert.isAbove(fullEst.jobBytes, loraEst.jobBytes);
      const budget = 4 * countParameters(cfg) + loraEst.jobBytes; // the base and one LoRA job, no more
      await withService(async (service) => {
        const modelId = await service.createModel(cfg, { seed: 1 });
        const err = await rejection(service.createTrainingClient({ modelId, trainable: 'all', id: 'too-big', schedule: small }));
        assert.instanceOf(err, AdmissionError);
        assert.match((err as Error).message, /too-big.*budget/);
        assert.isUndefined((await service.memory()).owners['job:too-big']);
        const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, schedule: small });
        assert.isBelow((await job.forwardBackward(batchOf(), crossEntropyLoss())).loss, Infinity);
        await job.close();
      }, { memoryBudgetBytes: budget });
    },
  },
  {
    name: 'worker service: pause holds a job\'s queued quanta, resume runs them; cancel rejects them and frees its GPU state',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-llama'), { seed: 1 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, id: 'doomed', schedule: small });
      const batch = batchOf();

      const held = [job.forwardBackward(batch, crossEntropyLoss()), job.forwardBackward(batch, crossEntropyLoss())];
      service.pause(job.id);
      await held[0]; // the running quantum completes
      const quantaPaused = service.scheduler.stats(job.id).quanta;
      await service.modelWeights(modelId); // another job's quantum runs meanwhile ...
      assert.strictEqual(service.scheduler.stats(job.id).quanta, quantaPaused); // ... and the paused one's waits
      service.resume(job.id);
      await held[1];
      assert.strictEqual(service.scheduler.stats(job.id).quanta, quantaPaused + 1);

      const queued = Array.from({ length: 4 }, () => job.forwardBackward(batch, crossEntropyLoss()));
      service.cancel(job.id);
      const settled = await Promise.allSettled(queued);
      assert.strictEqual(settled[0].status, 'fulfilled'); // it was running: a quantum is not interrupted
      for (const s of settled.slice(1)) {
        assert.strictEqual(s.status, 'rejected');
        assert.instanceOf((s as PromiseRejectedResult).reason, JobCancelledError);
      }
      assert.instanceOf(await rejection(job.optimStep({ lr: 1e-2 })), JobCancelledError);
      assert.strictEqual(service.scheduler.stats(job.id).state, 'cancelled');
      await job.close(); // after a cancel: waits for the worker to free the job
      assert.strictEqual((await service.memory()).owners['job:doomed'].currentBytes, 0);
      assert.strictEqual(service.scheduler.usedBytes, 4 * countParameters(preset('tiny-llama')));
    }),
  },
  {
    name: 'worker service: non-finite steps are skipped and counted; N in a row pause the job with an error in its status and events; resume trains on',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 3 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: 5, id: 'nan', schedule: small });
      const clean = batchOf();
      const nan = { ...clean, advantagesBT: clean.advantagesBT.map(() => NaN) };
      const events: WorkerServiceEvent[] = [];
      service.on((e) => events.push(e));
      const nanStep = async () => {
        assert.isNaN((await job.forwardBackward(nan, importanceSamplingLoss())).loss);
        return job.optimStep({ lr: 1e-2 });
      };
      assert.deepInclude(await nanStep(), { skipped: true, step: 0 });
      assert.deepInclude(service.status('nan'), { skippedSteps: 1, skippedInARow: 1, state: 'active' });
      await job.forwardBackward(clean, crossEntropyLoss());
      assert.deepInclude(await job.optimStep({ lr: 1e-2 }), { skipped: false, step: 1 });
      assert.deepInclude(service.status('nan'), { skippedSteps: 1, skippedInARow: 0 });
      const before = await job.weights();

      assert.deepInclude(await nanStep(), { skipped: true, step: 1 });
      const err = await rejection(nanStep()); // the second in a row
      assert.instanceOf(err, NonFiniteStepsError);
      const st = service.status('nan');
      assert.deepInclude(st, { state: 'paused', skippedSteps: 3, skippedInARow: 2 });
      assert.match(st.error ?? '', /"nan": 2 steps in a row skipped/);
      assert.deepEqual(events.map((e) => e.type), ['step-skipped', 'step-skipped', 'step-skipped', 'job-paused']);
      assert.deepInclude(events[2], { jobId: 'nan', inARow: 2, total: 3 });

      // Paused: its calls wait. Resumed: the skipped steps left the weights as they were, and it trains on.
      const held = job.weights();
      await service.modelWeights(modelId);
      assert.strictEqual(service.status('nan').state, 'paused');
      service.resume('nan');
      const after = await held;
      for (const [k, v] of Object.entries(before)) assert.deepEqual([...after[k]], [...v], k);
      assert.deepInclude(service.status('nan'), { state: 'active', skippedInARow: 0 });
      assert.isUndefined(service.status('nan').error);
      await job.forwardBackward(clean, crossEntropyLoss());
      assert.deepInclude(await job.optimStep({ lr: 1e-2 }), { skipped: false, step: 2 });
      await job.close();
    }, { maxSkippedInARow: 2 }),
  },
  {
    name: 'worker service: a lost device is reported with what died; a fresh device serves a job reloaded from its checkpoint',
    fn: () => withService(async (service) => {
      const cfg = preset('tiny-gpt2');
      const modelId = await service.createModel(cfg, { seed: 3, id: 'base' });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: 5, id: 'survivor', schedule: small });
      const batch = batchOf();
      for (let i = 0; i < 2; i++) {
        await job.forwardBackward(batch, crossEntropyLoss());
        await job.optimStep({ lr: 3e-2 });
      }
      const checkpoint = await job.saveState();
      const next = (await job.forwardBackward(batch, crossEntropyLoss())).loss;

      const events: WorkerServiceEvent[] = [];
      const recovered = new Promise<void>((res) => service.on((e) => (events.push(e), e.type === 'recovered' && res())));
      await service.loseDevice();
      await recovered;
      assert.deepEqual(events.map((e) => e.type), ['device-lost', 'recovered']);
      const lost = events[0] as Extract<WorkerServiceEvent, { lost: unknown }>;
      assert.deepEqual([lost.lost.models, lost.lost.jobs], [['base'], ['survivor']]);
      assert.instanceOf(await rejection(job.forwardBackward(batch, crossEntropyLoss())), LostWithDeviceError);
      assert.strictEqual(service.scheduler.stats('survivor').state, 'cancelled');

      // Not automatic: the runner re-creates the base and reloads the job from its checkpoint.
      await service.settled();
      const model2 = await service.createModel(cfg, { seed: 3, id: 'base-2' });
      const job2 = await service.createTrainingClient({ modelId: model2, trainable: 'lora', lora, seed: 77, id: 'survivor-2', schedule: small });
      await job2.loadState(checkpoint);
      assert.strictEqual((await job2.forwardBackward(batch, crossEntropyLoss())).loss, next);
      const sampler = await job2.samplingClient();
      assert.isAbove((await sampler.sample([request('2+2=')]))[0].tokens.length, 0);
      await sampler.close();
      await job2.close();
    }),
  },
  {
    name: 'worker service: a crashed worker is reported with what died; its replacement serves new requests',
    fn: () => withService(async (service) => {
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 1, id: 'gone' });
      const events: WorkerServiceEvent[] = [];
      const recovered = new Promise<void>((res) => service.on((e) => (events.push(e), e.type === 'recovered' && res())));
      void service.gpu.call((api) => new Promise<never>(() => void api.crash())).catch(() => {});
      await recovered;
      assert.deepEqual(events.map((e) => e.type), ['worker-crashed', 'recovered']);
      assert.deepEqual((events[0] as Extract<WorkerServiceEvent, { lost: unknown }>).lost.models, [modelId]);
      assert.instanceOf(await rejection(service.modelWeights(modelId)), Error);
      const m2 = await service.createModel(preset('tiny-gpt2'), { seed: 1 });
      const job = await service.createTrainingClient({ modelId: m2, trainable: 'lora', lora, schedule: small });
      assert.isTrue(Number.isFinite((await job.forwardBackward(batchOf(), crossEntropyLoss())).loss));
      await job.close();
    }),
  },
];
