/**
 * The committed goldens (test/goldens/, scripts/goldens/make_goldens.py) are complete and agree
 * with themselves — for every case, also those the GPU suites do not run yet (llama32, qwen3,
 * gemma3), so their fixtures are known good before the engine learns them:
 *   - a gradient for every checkpoint tensor and every adapter tensor, of its shape, and nothing else;
 *   - shapes from config.json (V, B, T, G) and meta.json; the published dtypes (GPT-2 f32, else bf16;
 *     the adapter f32);
 *   - log-probs = log softmax(logits) at the next token, recomputed here in f64 from the stored
 *     f32 logits, and loss = −mean(log-probs), with and without the adapter;
 *   - greedy tokens inside the vocabulary;
 *   - for the families the engine runs (GOLDEN_ROWS): configFromHf reads the config transformers 5
 *     would save (rope_parameters instead of rope_theta, dtype) as it reads the published one.
 * Reads the files through test/shared/goldens.ts (file: URLs under Node).
 */
import { assert } from 'chai';
import { describe, it } from 'vitest';
import { configFromHf } from '../../src/model/hf_config.ts';
import { GOLDEN_NAMES, GOLDEN_ROWS, type Golden, loadGolden } from '../shared/goldens.ts';

/** f64 log softmax(logits[r])[target] for row r of a [rows, V] array. */
function logSoftmaxAt(logits: Float32Array, r: number, V: number, target: number): number {
  let m = -Infinity;
  for (let v = 0; v < V; v++) m = Math.max(m, logits[r * V + v]);
  let s = 0;
  for (let v = 0; v < V; v++) s += Math.exp(logits[r * V + v] - m);
  return logits[r * V + target] - m - Math.log(s);
}

async function checkSelfConsistent(g: Golden, prefix: '' | 'lora.', V: number): Promise<void> {
  const { B, T } = g;
  const logits = await g.f32(`${prefix}logits`);
  const lp = await g.f32(`${prefix}logprobs`);
  assert.deepEqual(g.golden.info(`${prefix}logits`).shape, [B, T, V]);
  assert.deepEqual(g.golden.info(`${prefix}logprobs`).shape, [B, T - 1]);
  let sum = 0;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T - 1; t++) {
      const want = logSoftmaxAt(logits, b * T + t, V, g.inputIds[b * T + t + 1]);
      const got = lp[b * (T - 1) + t];
      assert.approximately(got, want, 1e-5 * Math.max(1, Math.abs(want)), `${g.name} ${prefix}logprobs[${b}, ${t}]`);
      sum += got;
    }
  }
  const loss = (await g.f32(`${prefix}loss`))[0];
  assert.approximately(loss, -sum / (B * (T - 1)), 1e-6 * loss, `${g.name} ${prefix}loss is the mean next-token cross entropy`);
}

describe('goldens written by transformers', () => {
  for (const name of GOLDEN_NAMES) {
    it(`${name}: complete (every checkpoint and adapter tensor has its gradient), shapes and dtypes as published, log-probs and loss consistent with the logits`, async () => {
      const g = await loadGolden(name);
      try {
        const config = g.config as Record<string, unknown>;
        const V = config.vocab_size as number;
        assert.strictEqual(g.meta.model_type, config.model_type);
        assert.deepEqual([g.B, g.T], [g.meta.inputs.B, g.meta.inputs.T]);
        const grads = (prefix: string) => g.golden.names().filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
        assert.sameMembers(grads('grad.'), g.checkpoint.names(), 'a gradient for every checkpoint tensor');
        for (const n of g.checkpoint.names()) assert.deepEqual(g.golden.info(`grad.${n}`).shape, g.checkpoint.info(n).shape, n);
        assert.sameMembers(grads('lora.grad.'), g.adapter.names(), 'a gradient for every adapter tensor');
        for (const n of g.adapter.names()) assert.deepEqual(g.golden.info(`lora.grad.${n}`).shape, g.adapter.info(n).shape, n);
        const dtypes = (f: Golden['checkpoint']) => [...new Set(f.names().map((n) => f.info(n).dtype))];
        assert.deepEqual(dtypes(g.checkpoint), [name === 'gpt2' ? 'F32' : 'BF16']);
        assert.deepEqual(dtypes(g.adapter), ['F32']);
        for (const n of g.golden.names()) assert.strictEqual(g.golden.info(n).dtype, n === 'input_ids' || n === 'greedy' ? 'I32' : 'F32', n);
        await checkSelfConsistent(g, '', V);
        await checkSelfConsistent(g, 'lora.', V);
        assert.deepEqual(g.golden.info('greedy').shape, [g.B, g.meta.greedy.new_tokens]);
        for (const t of [...g.greedy, ...g.inputIds]) assert.isTrue(t >= 0 && t < V, `token ${t} in [0, ${V})`);
        assert.isAtLeast(g.meta.greedy.min_top2_logit_gap, 1e-2, 'no greedy near-tie an f32 engine could flip');
      } finally {
        await g.close();
      }
    });
  }

  for (const name of GOLDEN_ROWS) {
    it(`${name}: configFromHf reads transformers 5's layout of the config (rope_parameters, dtype) as the published layout`, async () => {
      const g = await loadGolden(name);
      try {
        assert.deepEqual(configFromHf(g.meta.transformers_saved_config, { name }), configFromHf(g.config, { name }));
      } finally {
        await g.close();
      }
    });
  }
});
