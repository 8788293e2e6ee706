/**
 * The Tinker-style clients over the in-process engine, in both GPU suites: a job built only from
 * ServiceClient / TrainingClient / SamplingClient calls learns, samples from snapshots, and
 * resumes exactly; non-finite steps are skipped, and N in a row stop the job with a typed error.
 */
import { assert } from 'chai';
import { crossEntropyLoss, importanceSamplingLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { preset } from '../../../src/model/presets.ts';
import { NonFiniteStepsError } from '../../../src/runtime/errors.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import type { GpuCase } from '../register.ts';

const tok = new ByteTokenizer();
const pairs = [
  { prompt: '2+2=', completion: '4' },
  { prompt: '3+4=', completion: '7' },
  { prompt: '5+1=', completion: '6' },
];
const batchOf = () =>
  packDatums(sftDatumsFromPairs(pairs, tok), { rows: 3, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];

export const localServiceCases: GpuCase[] = [
  {
    name: 'clients: a LoRA job learns through forwardBackward/optimStep, samples from a snapshot, resumes exactly',
    async fn(ctx) {
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      const cfg = preset('tiny-gpt2');
      const modelId = await service.createModel(cfg, { seed: 3 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 4, alpha: 8, targets: ['q', 'v', 'up'] }, seed: 5 });
      try {
        const batch = batchOf();
        const loss = crossEntropyLoss();
        const losses: number[] = [];
        for (let i = 0; i < 8; i++) {
          const r = await job.forwardBackward(batch, loss);
          losses.push(r.loss);
          const s = await job.optimStep({ lr: 3e-2 });
          assert.isFalse(s.skipped);
          assert.strictEqual(s.step, i + 1);
        }
        assert.isBelow(losses.at(-1)!, losses[0]);

        const sampler = await job.samplingClient();
        assert.strictEqual(sampler.version, 1);
        const req = { promptTokens: tok.encode('2+2='), maxTokens: 3, stopStrings: [], stopTokens: [tok.eosId], temperature: 0, seed: 1 };
        const [a] = await sampler.sample([req]);
        assert.isAbove(a.tokens.length, 0);
        // Training on does not change what the snapshot samples.
        await job.forwardBackward(batch, loss);
        await job.optimStep({ lr: 1 });
        const [b] = await sampler.sample([req]);
        assert.deepEqual(b.tokens, a.tokens);
        await sampler.close();

        // Exact resume: state → new job → one more step equals the original's next step.
        const state = await job.saveState();
        const twin = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 4, alpha: 8, targets: ['q', 'v', 'up'] }, seed: 99 });
        await twin.loadState(state);
        const r1 = await job.forwardBackward(batch, loss);
        const r2 = await twin.forwardBackward(batch, loss);
        assert.strictEqual(r2.loss, r1.loss);
        await job.optimStep({ lr: 1e-2 });
        await twin.optimStep({ lr: 1e-2 });
        const w1 = await job.weights();
        const w2 = await twin.weights();
        for (const k of Object.keys(w1)) assert.deepEqual([...w2[k]], [...w1[k]], k);
        assert.isAbove((await job.memory()).currentBytes, 0);
        await twin.close();
      } finally {
        await job.close();
        await service.close();
      }
      assert.strictEqual(ctx.pool.owner(`model:${modelId}`).currentBytes, 0);
    },
  },
  {
    name: 'clients: a full-parameter job shares nothing with the base it copied; unknown ids are typed errors',
    async fn(ctx) {
      const service = new LocalService(ctx);
      const cfg = preset('tiny-llama');
      const modelId = await service.createModel(cfg, { seed: 1 });
      const before = await service.modelWeights(modelId);
      const job = await service.createTrainingClient({ modelId, trainable: 'all' });
      try {
        await job.forwardBackward(batchOf(), crossEntropyLoss());
        await job.optimStep({ lr: 1e-2 });
        const trained = await job.weights();
        const after = await service.modelWeights(modelId);
        assert.deepEqual([...after['tok_emb.weight']], [...before['tok_emb.weight']]);
        assert.notDeepEqual([...trained['tok_emb.weight']], [...before['tok_emb.weight']]);
        let err: unknown;
        try {
          await service.createTrainingClient({ modelId: 'nope', trainable: 'all' });
        } catch (e) {
          err = e;
        }
        assert.match(String(err), /no model "nope"/);
      } finally {
        await job.close();
        await service.close();
      }
    },
  },
  {
    name: 'clients: with maxSkippedInARow, the N-th non-finite step in a row rejects with NonFiniteStepsError, the state untouched',
    async fn(ctx) {
      const service = new LocalService(ctx, { maxSkippedInARow: 2 });
      const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 1 });
      const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 2, alpha: 4, targets: ['q'] }, seed: 2 });
      try {
        const clean = batchOf();
        const nan = { ...clean, advantagesBT: clean.advantagesBT.map(() => NaN) };
        const before = await job.saveState();
        await job.forwardBackward(nan, importanceSamplingLoss());
        assert.deepInclude(await job.optimStep({ lr: 1e-2 }), { skipped: true, step: 0 });
        await job.forwardBackward(nan, importanceSamplingLoss());
        let err: unknown;
        try {
          await job.optimStep({ lr: 1e-2 });
        } catch (e) {
          err = e;
        }
        assert.instanceOf(err, NonFiniteStepsError);
        assert.match((err as Error).message, /2 steps in a row skipped/);
        const after = await job.saveState();
        assert.deepEqual([after.step, after.skipped], [0, 2]);
        for (const [k, v] of Object.entries(before.params)) assert.deepEqual([...after.params[k]], [...v], k);
      } finally {
        await job.close();
        await service.close();
      }
    },
  },
];
