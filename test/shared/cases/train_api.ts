/**
 * `train()`, the one-call API, on the README's own environment (demos/own_env.ts: reverse three
 * letters): with a service on the suite's device, and without one (train acquires and releases its
 * own device). Deno suite only, like the job runner's case: a few SFT steps and 2 RL steps of a
 * tiny model, so the figures asserted are the run's shape and that SFT lowers the loss.
 */
import { assert } from 'chai';
import { reverseEnv } from '../../../demos/own_env.ts';
import type { EnvSpec } from '../../../src/env/types.ts';
import { NonFiniteError } from '../../../src/errors.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { summaryOf } from '../../../src/runtime/rl_job.ts';
import { AdapterStore } from '../../../src/runtime/store/adapter_store.ts';
import { MemoryKv } from '../../../src/runtime/store/kv.ts';
import { train, type TrainSettings } from '../../../src/runtime/train.ts';
import type { GpuCase } from '../register.ts';

const small: TrainSettings = {
  env: reverseEnv, model: 'tiny-gpt2', lora: { rank: 2, targets: ['q', 'v'] }, steps: 2, seed: 3, groups: 2, groupSize: 2, lr: 1e-2,
  warmStart: { steps: 8, demos: 64, batchSize: 8, lr: 1e-2, schedule: 'constant' }, evalEpisodes: 4, rows: 8, maxNewTokens: 12,
};

export const trainApiCases: GpuCase[] = [
  {
    name: 'train(): the README environment through a given service — SFT lowers its loss, 2 GRPO steps, LoRA tensors back',
    async fn(ctx) {
      const service = new LocalService(ctx, { decode: (ids) => new ByteTokenizer().decode(ids) });
      try {
        const phases: string[] = [];
        const r = await train({ ...small, service, onPhase: (p) => phases.push(p) });
        const s = summaryOf(r);
        assert.include(s, { env: 'reverse', algo: 'grpo', seed: 3, steps: 2, trainable: 'lora', warmStartSteps: 8, evalEpisodes: 4 });
        assert.deepEqual(phases, ['warmstart', 'eval-before', 'rl', 'eval-after']);
        assert.lengthOf(s.sftLossCurve, 8);
        assert.isBelow(s.sftLossCurve[7], s.sftLossCurve[0] * 0.8, `SFT loss ${s.sftLossCurve.map((x) => x.toFixed(3)).join(' ')}`);
        assert.lengthOf(s.rewardCurve, 2);
        for (const x of [...s.rewardCurve, ...s.lossCurve, s.successBefore, s.successAfter]) assert.isTrue(Number.isFinite(x));
        assert.deepEqual(r.trained.lora, { rank: 2, alpha: 4, targets: ['q', 'v'] });
        assert.isTrue(Object.keys(r.trained.tensors).length > 0 && Object.keys(r.trained.tensors).every((k) => k.includes('lora_')));
        // The trained policy answers a prompt (one action, the same for the same seed), and is kept in a store.
        assert.notInclude(Object.keys(r), 'sample', 'methods stay out of the data');
        const reply = await r.sample('Reverse abc.', { temperature: 0 });
        assert.isString(reply);
        assert.strictEqual(await r.sample('Reverse abc.', { temperature: 0 }), reply);
        assert.isAtMost(new ByteTokenizer().encode(reply).length, 12);
        const kv = new MemoryKv();
        assert.deepEqual(await r.save(kv, 'mine'), ['mine@1', 'mine.base@1']);
        const back = await new AdapterStore(kv).load('mine');
        assert.deepEqual(back.tensors.map((t) => t.name).sort(), Object.keys(r.trained.tensors).sort());
        assert.strictEqual(back.meta.rank, 2);
        await r.close();
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'train(): lr 1e30 ends with NonFiniteError naming the model and the RL step whose sampling met the non-finite logits',
    async fn(ctx) {
      // Every episode pays 1, so REINFORCE's first step has a gradient and applies at lr 1e30
      // (finite but enormous LoRA weights); the next rollout's logits overflow.
      const paysOne: EnvSpec = {
        name: 'pays-one',
        create: () => ({ name: 'pays-one', reset: async () => 'Say anything.', step: async () => ({ observation: '', reward: 1, done: true }) }),
      };
      const service = new LocalService(ctx, { decode: (ids) => new ByteTokenizer().decode(ids) });
      try {
        const steps: number[] = [];
        const err = await train({ ...small, env: paysOne, algo: 'reinforce', warmStart: null, evalEpisodes: 0, steps: 3, lr: 1e30, service, onStep: (m) => steps.push(m.step) })
          .then(() => null, (e) => e);
        assert.instanceOf(err, NonFiniteError, String(err));
        assert.strictEqual(err.model, 'tiny-gpt2');
        assert.match(err.where, /^RL step 1's rollout: generate/);
        assert.deepEqual(steps, [0]);
      } finally {
        await service.close();
      }
    },
  },
  {
    name: "train(): a newcomer's environment with a tool — 4 turns, the tools in the prompt, the context raised to its longest demonstration",
    async fn(ctx) {
      const { codebookEnv } = await import('../../../demos/tool_env.ts');
      const service = new LocalService(ctx, { decode: (ids) => new ByteTokenizer().decode(ids) });
      try {
        const r = await train({ env: codebookEnv, model: 'tiny-gpt2', steps: 1, groups: 1, groupSize: 2, evalEpisodes: 0, warmStart: { steps: 2, demos: 16, batchSize: 4 }, rows: 4, service, progress: false });
        // A lookup episode (tool list, call, result, answer) is longer than 128 tokens (tiny-gpt2 has 64 positions).
        assert.isAbove(r.trained.cfg.maxSeqLen, 128);
        assert.strictEqual(r.trained.cfg.maxSeqLen % 32, 0);
        assert.lengthOf(r.rewardCurve, 1);
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'train(): without a service it acquires its own device and gives it back',
    async fn() {
      const r = await train({ ...small, warmStart: null, steps: 1, evalEpisodes: 0 });
      assert.include(summaryOf(r), { env: 'reverse', warmStartSteps: 0, steps: 1 });
      assert.lengthOf(r.rewardCurve, 1);
      assert.isTrue(Number.isFinite(r.lossCurve[0]));
      // sample() acquires a device of its own (train's is given back), close() releases it; save() writes the run folder.
      assert.isString(await r.sample('Reverse dcb.'));
      await r.close();
      const dir = await Deno.makeTempDir({ prefix: 'wt-save-' });
      try {
        const files = await r.save(dir);
        for (const f of ['summary.json', 'adapter.safetensors', 'curve.svg']) assert.isTrue(files.some((x) => x.endsWith(f)), f);
        assert.strictEqual(JSON.parse(await Deno.readTextFile(`${dir}/summary.json`)).env, 'reverse');
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  },
];
