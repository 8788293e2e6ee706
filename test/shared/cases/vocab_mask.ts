/**
 * The sampler's vocabulary mask (kernels/vocab_mask.wgsl, generate's `vocabMask`), run by both GPU
 * suites: the kernel equals its CPU reference bit for bit on shapes that are not multiples of 32
 * or of the workgroup; generate with a mask never returns a masked id, greedy picks the argmax
 * over the allowed ids of the tfjs reference, and log-probs are the reference's renormalized over
 * the allowed ids; a mask that excludes everything is a ConfigError before any allocation; a
 * model with more embedding rows than its tokenizer has ids (as Qwen2.5's) rolls out episodes
 * with tokenizerVocabMask, where without it the rollout aborts on the first id past the tokenizer.
 * A request's own `allowedTokens` (engineSampleFn): only those ids come out, greedy is the
 * reference argmax over them and log-probs are renormalised over them, the other requests of the
 * call are sampled as if alone, and a bad list is a ConfigError naming the request; an Agent with
 * `allowedTokens` rolls out episodes whose every action token is listed.
 */
import { assert } from 'chai';
import { ConfigError } from '../../../src/errors.ts';
import { Agent } from '../../../src/env/agent.ts';
import { SampleContractError } from '../../../src/env/errors.ts';
import { rolloutGroups } from '../../../src/env/rollout.ts';
import type { EnvSpec } from '../../../src/env/types.ts';
import { validateConfig } from '../../../src/model/config.ts';
import { generate, type GenerateOptions } from '../../../src/model/generate.ts';
import { engineSampleFn, tokenizerVocabMask } from '../../../src/model/sample_fn.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { TokenizerError } from '../../../src/model/tokenizer/tokenizer.ts';
import { PRESETS } from '../../../src/model/presets.ts';
import { allowedBy, vocabBitmask, vocabMask } from '../../../src/ops/vocab_mask.ts';
import { vocabMaskRef } from '../../../src/ops/vocab_mask.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import type { GpuCase } from '../register.ts';
import { HostWeights, OWNER, refNextLogprobs, testParams } from './generate_helpers.ts';
import { releaseAll, run, up } from './helpers.ts';

const PROMPTS = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [70, 71, 72, 73, 74, 75, 76, 77]];

/**
 * Greedy tokens against the reference's per-step log-probs `logp`: each token allowed by `bits` and
 * the argmax over the allowed ids, its log-prob the reference's renormalised over them.
 */
function greedyOverAllowed(logp: readonly Float64Array[], tokens: readonly number[], logprobs: readonly number[], bits: Uint32Array, what: string): void {
  tokens.forEach((t, i) => {
    assert.isTrue(allowedBy(bits, t), `${what} step ${i}: token ${t} is masked`);
    let best = -1;
    let lse = -Infinity;
    for (let j = 0; j < logp[i].length; j++) {
      if (!allowedBy(bits, j)) continue;
      if (best < 0 || logp[i][j] > logp[i][best]) best = j;
      lse = Math.max(lse, logp[i][j]) + Math.log1p(Math.exp(-Math.abs(lse - logp[i][j])));
    }
    assert.strictEqual(t, best, `${what} step ${i}: greedy over allowed ids`);
    const want = logp[i][t] - lse;
    assert.isAtMost(Math.abs(logprobs[i] - want), 1e-4 * Math.max(1, Math.abs(want)), `${what} step ${i}: logprob ${logprobs[i]} vs ${want}`);
  });
}

export const vocabMaskCases: GpuCase[] = [
  {
    name: 'vocab_mask: −Inf exactly on the masked columns of every row (vs the CPU reference, bitwise)',
    async fn(ctx) {
      const rng = new Rng(7, 0);
      for (const [B, V] of [[1, 1], [3, 1000], [5, 67]]) {
        const logits = rng.normalArray(B * V, 3);
        const masked = Array.from({ length: Math.floor(V / 3) }, () => rng.nextInt(V));
        const bits = vocabBitmask({ limit: Math.max(1, V - 5), masked: masked.filter((id) => id !== 0) }, V);
        const tl = up(ctx, logits, [B, V]);
        const tb = up(ctx, bits, [bits.length]);
        const [got] = await run(ctx, [tl], (rec) => vocabMask(rec, tl, tb));
        releaseAll(tl, tb);
        const want = vocabMaskRef(logits, B, V, bits);
        assert.deepEqual(Array.from(got as Float32Array), Array.from(want), `B=${B} V=${V}`);
      }
    },
  },
  {
    name: 'vocab_mask: generate never returns a masked id; greedy = the reference argmax over allowed ids, log-probs renormalized over them',
    async fn(ctx) {
      const cfg = PRESETS['tiny-llama'];
      const params = testParams(cfg, 3);
      const w = new HostWeights(ctx, cfg, params);
      try {
        const V = cfg.vocabSize;
        // Unmasked greedy first, to mask exactly the ids the model prefers.
        const base: GenerateOptions = { maxTokens: 5, temperature: 0, seed: 1, chunk: 4, owner: OWNER };
        const free = await generate(ctx, w, null, PROMPTS, base);
        const limit = V - 37;
        const masked = [...new Set(free.tokens.flat())].filter((t) => t < limit);
        assert.isAbove(masked.length, 0, 'the unmasked run chose ids below the limit');
        const mask = { limit, masked };
        const bits = vocabBitmask(mask, V);
        const r = await generate(ctx, w, null, PROMPTS, { ...base, vocabMask: mask });
        PROMPTS.forEach((p, b) => greedyOverAllowed(refNextLogprobs(cfg, params, p, r.tokens[b]).logp, r.tokens[b], r.logprobs[b], bits, `seq ${b}`));
        // Sampling at T = 1 from a mask leaving a handful of ids: only those come out.
        const few = { limit: 12, masked: [0, 3, 5] };
        const fewBits = vocabBitmask(few, V);
        const s = await generate(ctx, w, null, PROMPTS, { ...base, maxTokens: 16, temperature: 1, vocabMask: few });
        for (const seq of s.tokens) for (const t of seq) assert.isTrue(allowedBy(fewBits, t), `sampled ${t}`);
        assert.isAbove(new Set(s.tokens.flat()).size, 1, 'sampling drew more than one id');
        // Everything masked: refused before anything is allocated.
        const owner = 'vocab-mask-refused';
        await generate(ctx, w, null, PROMPTS, { ...base, owner, vocabMask: { limit: 1, masked: [0] } }).then(
          () => assert.fail('expected a ConfigError'),
          (e) => {
            assert.instanceOf(e, ConfigError);
            assert.match((e as ConfigError).field, /generate\.vocabMask/);
          },
        );
        assert.strictEqual(ctx.pool.owner(owner).peakBytes, 0);
      } finally {
        w.release();
      }
    },
  },
  {
    name: 'vocab_mask: a model with more rows than its tokenizer has ids rolls out with tokenizerVocabMask (without it: the rollout aborts)',
    async fn(ctx) {
      // 300 embedding rows over the 259-id byte tokenizer, like Qwen2.5's 151936 rows over 151665 ids.
      const cfg = validateConfig({ ...PRESETS['tiny-llama'], name: 'tiny-llama-v300', vocabSize: 300, maxSeqLen: 64 });
      const params = testParams(cfg, 5);
      const w = new HostWeights(ctx, cfg, params);
      const tokenizer = new ByteTokenizer();
      const spec: EnvSpec = {
        name: 'echo',
        create: () => ({ name: 'echo', reset: async (seed) => `say ${seed}`, step: async () => ({ observation: 'ok', reward: 1, done: true }) }),
      };
      const agentWith = (vocabMask?: ReturnType<typeof tokenizerVocabMask>) => new Agent({
        sample: engineSampleFn({ weights: w, decode: (ids) => tokenizer.decode(ids), chunk: 4, ...(vocabMask ? { vocabMask } : {}) }),
        tokenizer, maxTurns: 1, maxNewTokens: 12, maxSequenceTokens: 64, temperature: 1,
      });
      try {
        const batch = await rolloutGroups(spec, agentWith(tokenizerVocabMask(tokenizer)), { groups: 2, groupSize: 4, seed: 11 });
        assert.strictEqual(batch.metrics.kept, 8, JSON.stringify(batch.dropped));
        assert.isAbove(batch.metrics.sampledTokens, 8);
        for (const g of batch.groups) for (const t of g.trajectories) for (const id of t.tokensT) assert.isBelow(id, tokenizer.vocabSize);
        // The control: without the mask an id the tokenizer lacks is sampled and the rollout aborts
        // (the stop-string check cannot decode it, or the agent's contract check refuses it).
        await rolloutGroups(spec, agentWith(), { groups: 2, groupSize: 4, seed: 11 }).then(
          () => assert.fail('expected the unmasked rollout to sample an id past the tokenizer'),
          (e) => assert.isTrue(e instanceof SampleContractError || e instanceof TokenizerError, String(e)),
        );
      } finally {
        w.release();
      }
    },
  },
  {
    name: 'vocab_mask: a request\'s allowedTokens — only those ids, greedy = the reference argmax over them, log-probs renormalised; its neighbours sampled as if alone',
    async fn(ctx) {
      const cfg = PRESETS['tiny-llama'];
      const params = testParams(cfg, 4);
      const w = new HostWeights(ctx, cfg, params);
      const tokenizer = new ByteTokenizer();
      try {
        const V = cfg.vocabSize;
        const sample = engineSampleFn({ weights: w, chunk: 3, vocabMask: tokenizerVocabMask(tokenizer), owner: OWNER });
        const req = (p: number, extra: { allowedTokens?: number[]; temperature?: number } = {}) => ({
          promptTokens: PROMPTS[p], maxTokens: 5, stopStrings: [], stopTokens: [], temperature: 0, seed: 3 + p, ...extra,
        });
        // Unrestricted greedy first, to restrict to ids the model does not prefer.
        const [free] = await sample([req(0)]);
        const allowed = [97, 101, 105, 111, 200].filter((id) => !free.tokens.includes(id));
        const bits = vocabBitmask({ limit: V, allowed }, V);
        const [a, b] = await sample([req(0, { allowedTokens: allowed }), req(1)]);
        for (const t of a.tokens) assert.include(allowed, t);
        greedyOverAllowed(refNextLogprobs(cfg, params, PROMPTS[0], a.tokens).logp, a.tokens, a.logprobs, bits, 'restricted request');
        // The unrestricted request of the same call is what it is alone.
        const [alone] = await sample([req(1)]);
        assert.deepEqual(b.tokens, alone.tokens);
        assert.deepEqual(b.logprobs, alone.logprobs);
        // Sampling at T = 1 over two ids: both come out, nothing else.
        const two = await sample(Array.from({ length: 6 }, (_, i) => ({ ...req(i % 2, { allowedTokens: [40, 41], temperature: 1 }), maxTokens: 8, seed: i })));
        const drawn = new Set(two.flatMap((r) => r.tokens));
        assert.sameMembers([...drawn], [40, 41]);
        // A bad list is refused by name before anything is allocated.
        const owner = 'allowed-tokens-refused';
        const refusing = engineSampleFn({ weights: w, owner });
        for (const [bad, msg] of [[[], /non-empty/], [[3, V], /not a token id/], [[1.5], /not a token id/]] as const) {
          await refusing([req(0), req(1, { allowedTokens: [...bad] })]).then(
            () => assert.fail(`expected a ConfigError for ${JSON.stringify(bad)}`),
            (e) => {
              assert.instanceOf(e, ConfigError);
              assert.strictEqual((e as ConfigError).field, 'requests[1].allowedTokens');
              assert.match(String(e), msg);
            },
          );
        }
        assert.strictEqual(ctx.pool.owner(owner).peakBytes, 0);
      } finally {
        w.release();
      }
    },
  },
  {
    name: 'vocab_mask: an Agent with allowedTokens rolls out episodes whose every action token is listed; a sampler ignoring them breaks the contract',
    async fn(ctx) {
      const cfg = PRESETS['tiny-llama'];
      const w = new HostWeights(ctx, cfg, testParams(cfg, 6));
      const tokenizer = new ByteTokenizer();
      const spec: EnvSpec = {
        name: 'echo',
        create: () => ({ name: 'echo', reset: async (seed) => `say ${seed}`, step: async () => ({ observation: 'ok', reward: 1, done: true }) }),
      };
      const letters = [...'aeio'].map((c) => tokenizer.encode(c)[0]);
      try {
        const engine = engineSampleFn({ weights: w, decode: (ids) => tokenizer.decode(ids), chunk: 4 });
        const agent = new Agent({ sample: engine, tokenizer, maxTurns: 1, maxNewTokens: 3, maxSequenceTokens: 64, temperature: 1, allowedTokens: letters });
        const batch = await rolloutGroups(spec, agent, { groups: 3, groupSize: 4, seed: 5 });
        assert.strictEqual(batch.metrics.kept, 12, JSON.stringify(batch.dropped));
        const said = batch.groups.flatMap((g) => g.trajectories.flatMap((t) => t.tokensT.filter((_, i) => t.policyMaskT[i] > 0)));
        assert.strictEqual(said.length, 36, 'no stop token is allowed: every action runs to maxNewTokens');
        for (const id of said) assert.include(letters, id);
        assert.isAbove(new Set(said).size, 1);
        // A sampler that drops the restriction is caught by the agent's contract check.
        const ignoring = new Agent({
          sample: (reqs) => engine(reqs.map(({ allowedTokens: _, ...r }) => ({ ...r, allowedTokens: [tokenizer.encode('z')[0]] }))),
          tokenizer, maxTurns: 1, maxNewTokens: 3, maxSequenceTokens: 64, temperature: 1, allowedTokens: letters,
        });
        await rolloutGroups(spec, ignoring, { groups: 1, groupSize: 2, seed: 5 }).then(
          () => assert.fail('expected a SampleContractError'),
          (e) => assert.match(String(e), /not among the request's allowedTokens/),
        );
      } finally {
        w.release();
      }
    },
  },
];
