/**
 * Generation cases (src/model/{prefill,decode,generate,sample_fn}.ts), run by both GPU suites on
 * tiny-gpt2 and tiny-llama (GQA, q/k/v bias) built from initParameters (perturbed so attention
 * and logits are not near-uniform):
 *   - greedy generation equals the step-by-step argmax of the tfjs reference over the growing
 *     sequence, and the returned logprobs its log-softmax values (rel err ≤ 1e-4);
 *   - ragged prompts in one batch give the same tokens as each prompt alone;
 *   - a LoRA adapter with non-zero B changes the output and matches the reference with it;
 *   - stop tokens, stop strings and per-sequence max tokens end sequences individually;
 *   - seeded sampling is bitwise reproducible, independent of the chunk size and of the batch
 *     (per-sequence streams), different seeds differ, and its logprobs match the reference;
 *   - bad input gives typed errors naming what is wrong, allocating nothing;
 *   - engineSampleFn serves a mixed batch (base and adapter) as generate would, and the agent
 *     layer rolls out episodes on it with the policy's log-probs in its trajectories;
 *   - (shader-f16 suites) f16-stored linear weights match the reference over rounded weights.
 */
import { assert } from 'chai';
import { Agent } from '../../../src/env/agent.ts';
import { rolloutGroups } from '../../../src/env/rollout.ts';
import type { EnvSpec } from '../../../src/env/types.ts';
import { ConfigError, NonFiniteError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { type LoraConfig, type ModelConfig, validateConfig } from '../../../src/model/config.ts';
import { generate, type GenerateOptions, type GenerateResult } from '../../../src/model/generate.ts';
import { PRESETS } from '../../../src/model/presets.ts';
import { engineSampleFn } from '../../../src/model/sample_fn.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { refForward } from '../../reference/model_tf.ts';
import type { GpuCase } from '../register.ts';
import { HostAdapter, HostWeights, OWNER, refNextLogprobs, roundLinearsToF16, testLora, testParams } from './generate_helpers.ts';

const FAMILIES: ModelConfig[] = [PRESETS['tiny-gpt2'], PRESETS['tiny-llama']];
// Ragged, but each at least 8 tokens: the matmul's register tiles shrink on products of fewer
// rows, and every new tile shape is one more pipeline to compile (slow on the software adapters).
const PROMPTS = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [70, 71, 72, 73, 74, 75, 76, 77], [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]];

/** Largest relative logprob error seen, per check (printed by the last case). */
const worst = new Map<string, number>();

/** GPU tokens equal the reference's argmax at every step; logprobs within 1e-4 relative. */
function checkGreedy(cfg: ModelConfig, params: Record<string, Float32Array>, r: GenerateResult, prompts: number[][], tag: string,
  lora?: { config: LoraConfig; tensors: Record<string, Float32Array> }): void {
  prompts.forEach((p, b) => {
    const ref = refNextLogprobs(cfg, params, p, r.tokens[b], lora);
    r.tokens[b].forEach((t, i) => {
      assert.strictEqual(t, ref.argmax[i], `${tag} seq ${b} step ${i}: token ${t} vs reference argmax ${ref.argmax[i]} (top-2 margin ${ref.margin[i].toExponential(2)})`);
    });
    checkLogprobs(ref.logp, r, b, `${tag} seq ${b}`, tag);
  });
}

function checkLogprobs(logp: Float64Array[], r: GenerateResult, b: number, what: string, key: string): void {
  r.tokens[b].forEach((t, i) => {
    const want = logp[i][t];
    const err = Math.abs(r.logprobs[b][i] - want) / Math.max(Math.abs(want), 1e-6);
    worst.set(key, Math.max(worst.get(key) ?? 0, err));
    assert.isAtMost(err, 1e-4, `${what} step ${i}: logprob ${r.logprobs[b][i]} vs reference ${want}`);
  });
}

async function withModel(ctx: GpuContext, cfg: ModelConfig, seed: number, fn: (w: HostWeights, params: Record<string, Float32Array>) => Promise<void>): Promise<void> {
  const params = testParams(cfg, seed);
  const w = new HostWeights(ctx, cfg, params);
  try {
    await fn(w, params);
  } finally {
    w.release();
  }
}

const greedy = (o: Partial<GenerateOptions> = {}): GenerateOptions => ({ maxTokens: 6, temperature: 0, seed: 1, chunk: 4, owner: OWNER, ...o });

function assertThrowsConfig(p: Promise<unknown>, field: RegExp, msg: RegExp): Promise<void> {
  return p.then(() => assert.fail(`expected a ConfigError (${msg})`), (e) => {
    assert.instanceOf(e, ConfigError);
    assert.match((e as ConfigError).field, field);
    assert.match((e as Error).message, msg);
  });
}

export const generateCases: GpuCase[] = [
  ...FAMILIES.map((cfg): GpuCase => ({
    name: `generate: ${cfg.name} greedy over ragged prompts equals the tfjs reference's argmax, logprobs within 1e-4`,
    fn: (ctx) => withModel(ctx, cfg, 1, async (w, params) => {
      const r = await generate(ctx, w, null, PROMPTS, greedy());
      assert.deepEqual(r.finishReasons, ['length', 'length', 'length']);
      assert.deepEqual(r.tokens.map((t) => t.length), [6, 6, 6]);
      assert.strictEqual(r.submissions, 2, 'chunks of 4: prefill + 3 steps, then 2 steps');
      checkGreedy(cfg, params, r, PROMPTS, `${cfg.name} greedy`);
      for (const lp of r.samplingLogprobs) assert.deepEqual(lp, new Array(lp.length).fill(0), 'greedy samples from a point mass');
    }),
  })),
  {
    name: 'generate: ragged prompts in one batch give the same tokens as each prompt alone (both families)',
    fn: async (ctx) => {
      for (const cfg of FAMILIES) {
        await withModel(ctx, cfg, 2, async (w) => {
          const all = await generate(ctx, w, null, PROMPTS, greedy({ maxTokens: 5 }));
          for (let b = 0; b < PROMPTS.length; b++) {
            const one = await generate(ctx, w, null, [PROMPTS[b]], greedy({ maxTokens: 5 }));
            assert.deepEqual(one.tokens[0], all.tokens[b], `${cfg.name} prompt ${b}`);
            const d = Math.max(...one.logprobs[0].map((x, i) => Math.abs(x - all.logprobs[b][i])));
            assert.isAtMost(d, 1e-5, `${cfg.name} prompt ${b} logprobs`);
          }
        });
      }
    },
  },
  {
    name: 'generate: one NaN in a weight is reported as NonFiniteError naming the model and the call, not as a token outside the vocabulary',
    fn: async (ctx) => {
      const cfg = FAMILIES[0];
      const params = testParams(cfg, 3);
      const q = params['layers.0.attn.q.weight'];
      params['layers.0.attn.q.weight'] = Float32Array.from(q, (x, i) => (i === 5 ? NaN : x)); // HF's c_attn
      const w = new HostWeights(ctx, cfg, params);
      try {
        for (const temperature of [0, 1]) {
          const err = await generate(ctx, w, null, PROMPTS, greedy({ temperature })).then(() => null, (e) => e);
          assert.instanceOf(err, NonFiniteError, `T=${temperature}`);
          assert.strictEqual(err.model, cfg.name);
          assert.match(err.message, /generate \(.*\), sequence 0, new token 0: the logits are not finite/);
        }
      } finally {
        w.release();
      }
    },
  },
  {
    name: 'generate: a LoRA adapter (non-zero B, every target) changes the output and matches the reference with it',
    fn: async (ctx) => {
      for (const cfg of FAMILIES) {
        await withModel(ctx, cfg, 3, async (w, params) => {
          const lora: LoraConfig = { rank: 3, alpha: 6, targets: cfg.family === 'gpt2' ? ['q', 'k', 'v', 'o', 'up', 'down'] : ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] };
          const tensors = testLora(cfg, lora, 4);
          const adapter = new HostAdapter(ctx, cfg, 'a1', lora, tensors);
          try {
            const base = await generate(ctx, w, null, PROMPTS.slice(0, 2), greedy({ maxTokens: 4 }));
            const r = await generate(ctx, w, adapter, PROMPTS.slice(0, 2), greedy({ maxTokens: 4 }));
            checkGreedy(cfg, params, r, PROMPTS.slice(0, 2), `${cfg.name} lora`, { config: lora, tensors });
            const changed = r.tokens.some((t, b) => t.some((x, i) => x !== base.tokens[b][i])) ||
              Math.abs(r.logprobs[0][0] - base.logprobs[0][0]) > 1e-3;
            assert.isTrue(changed, `${cfg.name}: the adapter changed nothing`);
          } finally {
            adapter.release();
          }
        });
      }
    },
  },
  {
    name: 'generate: stop tokens, stop strings and per-sequence max tokens end sequences one by one',
    fn: (ctx) => withModel(ctx, FAMILIES[1], 1, async (w) => {
      const free = await generate(ctx, w, null, PROMPTS, greedy({ maxTokens: 8, chunk: 3 }));
      // A stop token: the 3rd token of sequence 0 (if it came earlier, the first occurrence).
      const stop = free.tokens[0][2];
      const maxTokens = [8, 3, 8];
      const r = await generate(ctx, w, null, PROMPTS, greedy({ maxTokens, chunk: 3, stopTokens: [stop] }));
      free.tokens.forEach((t, b) => {
        const at = t.slice(0, maxTokens[b]).indexOf(stop);
        const want = at >= 0 ? t.slice(0, at + 1) : t.slice(0, maxTokens[b]);
        assert.deepEqual(r.tokens[b], want, `stop token, sequence ${b}`);
        assert.strictEqual(r.finishReasons[b], at >= 0 ? 'stop' : 'length', `sequence ${b} finish reason`);
        assert.strictEqual(r.logprobs[b].length, want.length);
      });
      assert.strictEqual(r.finishReasons[0], 'stop');
      // A stop string spanning two tokens of sequence 2, through a detokenizer.
      const decode = (ids: readonly number[]) => ids.map((i) => String.fromCharCode(65 + (i % 26))).join('');
      const target = decode(free.tokens[2].slice(3, 5));
      const s = await generate(ctx, w, null, PROMPTS, greedy({ maxTokens: 8, chunk: 3, stopStrings: [target], decode }));
      free.tokens.forEach((t, b) => {
        let end = t.length;
        for (let n = 1; n <= t.length; n++) {
          if (decode(t.slice(0, n)).includes(target)) {
            end = n;
            break;
          }
        }
        assert.deepEqual(s.tokens[b], t.slice(0, end), `stop string, sequence ${b}`);
        assert.strictEqual(s.finishReasons[b], end < t.length || decode(t).includes(target) ? 'stop' : 'length');
      });
      assert.strictEqual(s.finishReasons[2], 'stop');
      assert.isAtMost(s.tokens[2].length, 5);
    }),
  },
  {
    name: 'generate: seeded sampling is bitwise reproducible across chunk sizes and batches, seeds differ, logprobs match the reference',
    fn: (ctx) => withModel(ctx, FAMILIES[0], 5, async (w, params) => {
      const opts: GenerateOptions = { maxTokens: 7, temperature: 1, seed: 1234, chunk: 3, owner: OWNER };
      const a = await generate(ctx, w, null, PROMPTS, opts);
      let quanta = 0;
      const b = await generate(ctx, w, null, PROMPTS, { ...opts, chunk: 1, quantum: (fn) => (quanta++, fn()) });
      assert.strictEqual(quanta, 7, 'one quantum per chunk');
      assert.strictEqual(b.submissions, 7);
      const c = await generate(ctx, w, null, PROMPTS, { ...opts, seed: 1235 });
      assert.deepEqual(b.tokens, a.tokens, 'same seed, chunk 1 vs 3');
      assert.deepEqual(b.logprobs, a.logprobs);
      assert.deepEqual(b.samplingLogprobs, a.samplingLogprobs);
      assert.notDeepEqual(c.tokens, a.tokens, 'another seed');
      PROMPTS.forEach((p, s) => {
        const ref = refNextLogprobs(FAMILIES[0], params, p, a.tokens[s]);
        checkLogprobs(ref.logp, a, s, `sampled seq ${s}`, 'tiny-gpt2 sampled');
        a.logprobs[s].forEach((x, i) => assert.approximately(a.samplingLogprobs[s][i], x, 1e-5, 'T = 1 without filters: sampling = policy logprob'));
      });
      // Per-sequence streams: a prompt alone with its stream samples what it sampled in the batch.
      const streams = [11, 22, 33];
      const batch = await generate(ctx, w, null, PROMPTS, { ...opts, streams });
      const alone = await generate(ctx, w, null, [PROMPTS[1]], { ...opts, streams: [22] });
      assert.deepEqual(alone.tokens[0], batch.tokens[1]);
      // Filtered sampling stays inside top-k.
      const k = await generate(ctx, w, null, PROMPTS, { ...opts, temperature: 0.7, topK: 3, topP: 0.9 });
      PROMPTS.forEach((p, s) => {
        const ref = refNextLogprobs(FAMILIES[0], params, p, k.tokens[s]);
        k.tokens[s].forEach((t, i) => {
          const rank = Array.from(ref.logp[i]).filter((x) => x > ref.logp[i][t]).length;
          assert.isBelow(rank, 3, `top-k token ${t} ranks ${rank}`);
          assert.isAtMost(k.samplingLogprobs[s][i], 1e-6);
          assert.isAbove(k.samplingLogprobs[s][i], k.logprobs[s][i], 'the filtered, sharpened distribution gives more mass');
        });
      });
    }),
  },
  {
    name: 'generate: bad input is refused with typed errors naming what is wrong, allocating nothing',
    fn: (ctx) => withModel(ctx, FAMILIES[0], 1, async (w) => {
      const owner = 'generate-bad-input';
      const o = greedy({ owner });
      const P = FAMILIES[0].maxSeqLen;
      await assertThrowsConfig(generate(ctx, w, null, [], o), /prompts/, /at least one prompt/);
      await assertThrowsConfig(generate(ctx, w, null, [[1], []], o), /prompts\[1\]/, /is empty/);
      await assertThrowsConfig(generate(ctx, w, null, [new Array(P + 1).fill(1)], o), /prompts\[0\]/, /65 tokens, more than the model's maxSeqLen of 64/);
      await assertThrowsConfig(generate(ctx, w, null, [[1, 2], new Array(60).fill(3)], o), /maxTokens/, /prompt 1 has 60 tokens; with maxTokens 6 it needs 66 cache rows, more than the model's maxSeqLen of 64/);
      await assertThrowsConfig(generate(ctx, w, null, [[1, 259]], o), /prompts\[0\]/, /token 259 at position 1 is outside the vocabulary/);
      await assertThrowsConfig(generate(ctx, w, null, [[1]], { ...o, maxTokens: 0 }), /maxTokens/, /positive integer/);
      await assertThrowsConfig(generate(ctx, w, null, [[1], [2]], { ...o, maxTokens: [3] }), /maxTokens/, /one per prompt/);
      await assertThrowsConfig(generate(ctx, w, null, [[1]], { ...o, stopStrings: ['x'] }), /decode/, /stop strings need a decode/);
      await assertThrowsConfig(generate(ctx, w, null, [[1]], { ...o, temperature: -1 }), /temperature/, /finite number ≥ 0/);
      await assertThrowsConfig(generate(ctx, w, null, [[1]], { ...o, chunk: 1.5 }), /chunk/, /positive integer/);
      assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0);
      assert.strictEqual(ctx.pool.owner(owner).peakBytes, 0, 'nothing was allocated');
      // Weights that break an op mid-recording: the op's typed error, and every buffer given back.
      const broken = Object.assign(Object.create(w) as HostWeights, {
        cfg: w.cfg,
        param: (n: string) => (n === 'layers.1.mlp.up.weight' ? w.param('layers.1.mlp.down.weight') : w.param(n)),
        has: (n: string) => w.has(n),
      });
      try {
        await generate(ctx, broken, null, [[1, 2]], o);
        assert.fail('expected a ShapeError');
      } catch (e) {
        assert.instanceOf(e, ShapeError);
        assert.match((e as Error).message, /matmul/);
      }
      assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0, 'cache released after a failed recording');
      assert.strictEqual(ctx.pool.owner(`recorder:${owner} chunk 0`).currentBytes, 0, 'recording scratch released');
      // A successful run gives back everything it took.
      await generate(ctx, w, null, [[1, 2]], greedy({ owner, maxTokens: 2 }));
      assert.isAbove(ctx.pool.owner(owner).peakBytes, 0);
      assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0, 'cache and buffers released');
    }),
  },
  {
    name: 'generate: engineSampleFn serves a mixed batch (base model and an adapter, own seeds) as generate would',
    fn: (ctx) => withModel(ctx, FAMILIES[1], 6, async (w) => {
      const cfg = FAMILIES[1];
      const lora: LoraConfig = { rank: 2, alpha: 4, targets: ['q', 'v', 'down'] };
      const adapter = new HostAdapter(ctx, cfg, 'policy', lora, testLora(cfg, lora, 7));
      try {
        const fn = engineSampleFn({ weights: w, adapters: (id) => (id === 'policy' ? adapter : undefined), chunk: 4 });
        const req = (p: number[], seed: number, adapterId?: string, maxTokens = 5) => ({
          promptTokens: p, maxTokens, stopStrings: [], stopTokens: [], temperature: 1, seed, ...(adapterId ? { adapterId } : {}),
        });
        const reqs = [req(PROMPTS[0], 10, 'policy'), req(PROMPTS[1], 20), req(PROMPTS[2], 30, 'policy', 3), req(new Array(cfg.maxSeqLen).fill(1), 40)];
        const res = await fn(reqs);
        assert.strictEqual(res.length, 4);
        assert.deepEqual(res[3], { tokens: [], logprobs: [] }, 'a prompt filling the context gets no tokens');
        for (const [i, ad] of [[0, adapter], [1, null], [2, adapter]] as const) {
          const g = await generate(ctx, w, ad, [reqs[i].promptTokens], { maxTokens: reqs[i].maxTokens, temperature: 1, seed: 0, streams: [reqs[i].seed], owner: OWNER });
          assert.deepEqual(res[i].tokens, g.tokens[0], `request ${i}`);
          assert.deepEqual(res[i].logprobs, g.logprobs[0]);
        }
        assert.strictEqual(res[2].tokens.length, 3);
        const one = engineSampleFn({ weights: w, adapters: (id) => (id === 'policy' ? adapter : undefined), chunk: 2, maxBatch: 1 });
        assert.deepEqual(await one(reqs), res, 'split into batches of one, other chunk size: same results');
        await assertThrowsConfig(fn([req(PROMPTS[0], 1, 'nope')]), /adapterId/, /unknown adapter "nope"/);
      } finally {
        adapter.release();
      }
    }),
  },
  {
    name: 'generate: the agent layer rolls out multi-turn episodes on the engine; trajectory logprobs are the policy\'s (vs the reference)',
    fn: async (ctx) => {
      const cfg = validateConfig({ ...PRESETS['tiny-gpt2'], name: 'tiny-gpt2-ctx128', maxSeqLen: 128 });
      await withModel(ctx, cfg, 9, async (w, params) => {
        const tokenizer = new ByteTokenizer();
        const spec: EnvSpec = {
          name: 'echo',
          create: () => {
            let turn = 0;
            return {
              name: 'echo',
              reset: async (seed: number) => (turn = 0, `task ${seed % 10}`),
              step: async (action: string) => ({ observation: `ok ${++turn}`, reward: action.length, done: turn >= 2 }),
            };
          },
        };
        const agent = new Agent({
          sample: engineSampleFn({ weights: w, decode: (ids) => tokenizer.decode(ids), chunk: 4 }),
          tokenizer, maxTurns: 2, maxNewTokens: 6, maxSequenceTokens: 128, temperature: 1,
        });
        const batch = await rolloutGroups(spec, agent, { groups: 2, groupSize: 2, seed: 3 });
        assert.strictEqual(batch.metrics.kept, 4, JSON.stringify(batch.dropped));
        let checked = 0;
        for (const g of batch.groups) {
          for (const tr of g.trajectories) {
            const T = tr.tokensT.length;
            const { logits } = refForward(cfg, params, { B: 1, T, tokens: Int32Array.from(tr.tokensT) });
            const V = cfg.vocabSize;
            for (let t = 1; t < T; t++) {
              if (!tr.policyMaskT[t]) continue;
              const row = logits.subarray((t - 1) * V, t * V);
              const m = Math.max(...row);
              const lse = m + Math.log(row.reduce((a, x) => a + Math.exp(x - m), 0));
              const want = row[tr.tokensT[t]] - lse;
              const err = Math.abs(tr.logprobsT[t] - want) / Math.abs(want);
              worst.set('agent rollout', Math.max(worst.get('agent rollout') ?? 0, err));
              assert.isAtMost(err, 1e-4, `trajectory ${tr.episodeId} token ${t}`);
              checked++;
            }
          }
        }
        assert.isAtLeast(checked, 4 * 2, 'policy tokens checked');
      });
    },
  },
];

/** Cases for suites whose adapter has shader-f16 (Deno on llvmpipe; SwiftShader has none). */
export const generateF16Cases: GpuCase[] = [
  {
    name: 'generate: f16-stored linear weights (shader-f16 devices) match the reference over the f16-rounded weights',
    fn: async (ctx) => {
      // Registered only by suites whose adapter has shader-f16 (Deno on llvmpipe); fail loudly elsewhere.
      assert.isTrue(ctx.hasF16, 'this case needs shader-f16');
      for (const cfg of FAMILIES) {
        const params = roundLinearsToF16(cfg, testParams(cfg, 8));
        const w = new HostWeights(ctx, cfg, params, { f16: true });
        try {
          assert.strictEqual(w.param('layers.0.attn.q.weight').dtype, 'f16');
          const r = await generate(ctx, w, null, PROMPTS.slice(1), greedy({ maxTokens: 4 }));
          checkGreedy(cfg, params, r, PROMPTS.slice(1), `${cfg.name} f16 weights`);
        } finally {
          w.release();
        }
      }
    },
  },
];

/** Register last: prints the largest errors of the cases above. */
export const generateReportCase: GpuCase = {
  name: 'generate: largest logprob errors vs the reference (printed for the report)',
  fn: async () => {
    console.log(`generate — largest relative logprob error vs tfjs per check:\n${[...worst].map(([k, v]) => `  ${k}: ${v.toExponential(2)}`).join('\n')}`);
    for (const [k, v] of worst) assert.isAtMost(v, 1e-4, k);
  },
};
