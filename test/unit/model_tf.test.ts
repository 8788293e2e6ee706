// The tfjs reference model against an independent f64 plain-loop transformer (forward), against
// finite differences of that loop model (gradients), and against itself under identities that must
// hold: GQA = MHA with repeated kv heads, packed = separate, padded = packed, LoRA with B = 0 = base,
// LoRA = merged weights, tied = untied with a copied head.
import { describe, expect, it } from 'vitest';
import { relL2, tf } from '../reference/tf.ts';
import { maskedCrossEntropy, type RefBatch, refForward, refLossAndGrads, refPositions } from '../reference/model_tf.ts';
import { type ModelConfig, validateLora } from '../../src/model/config.ts';
import { mergeLora } from '../../src/model/peft.ts';
import { parameterSpecs } from '../../src/model/params.ts';
import { initLora } from '../../src/model/init.ts';
import { Rng } from '../../src/util/rng.ts';
import { loopForward, loopLoss } from './model_loops.ts';
import { randomLora, randomParams, tinyGpt2, tinyLlama } from './model_fixtures.ts';

const families: [string, () => ModelConfig][] = [
  ['gpt2', () => tinyGpt2()],
  ['llama (GQA 4/2, q/k/v bias, untied)', () => tinyLlama()],
  ['llama (Hq·D ≠ C, all biases, tied)', () => tinyLlama({ nHead: 3, nKvHead: 1, headDim: 8, qkvBias: true, oBias: true, mlpBias: true, tieEmbeddings: true })],
];

function tokens(cfg: ModelConfig, n: number, seed: number): number[] {
  const rng = new Rng(seed, 3);
  return Array.from({ length: n }, () => rng.nextInt(cfg.vocabSize));
}

function plainBatch(rows: number[][]): RefBatch {
  const B = rows.length;
  const T = rows[0].length;
  return { B, T, tokens: Int32Array.from(rows.flat()) };
}

describe.each(families)('reference model %s', (_name, make) => {
  it('forward matches the f64 plain-loop model (logits and values)', () => {
    const cfg = make();
    const params = randomParams(cfg, 1, { valueHead: true });
    const seq = tokens(cfg, 7, 2);
    const ref = refForward(cfg, params, plainBatch([seq]), { valueHead: true });
    const loop = loopForward(cfg, params, seq, { valueHead: true });
    expect(relL2(ref.logits, loop.logits.flat())).toBeLessThan(2e-6);
    expect(relL2(ref.values as Float32Array, loop.values)).toBeLessThan(2e-6);
    // Not a degenerate model: logits vary across the vocabulary and across time.
    expect(Math.abs(loop.logits[0][0] - loop.logits[0][1])).toBeGreaterThan(1e-3);
    expect(Math.abs(loop.logits[0][0] - loop.logits[6][0])).toBeGreaterThan(1e-3);
  });

  it('every parameter and LoRA gradient matches central differences of the f64 loop model', () => {
    const cfg = make();
    const params = randomParams(cfg, 4, { valueHead: true });
    const targets = cfg.family === 'gpt2' ? (['q', 'v', 'o', 'up', 'down'] as const) : (['q', 'k', 'o', 'gate', 'down'] as const);
    const lora = randomLora(cfg, { targets: [...targets] }, 5);
    // Padded batch: row 0 has 6 live tokens, row 1 has 4; the loss skips one live token.
    const T = 6;
    const rows = [tokens(cfg, T, 6), tokens(cfg, T, 7)];
    const lengths = Int32Array.of(6, 4);
    const tgt = [tokens(cfg, T, 8), tokens(cfg, T, 9)];
    const mask = [[1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 0, 0]];
    const batch: RefBatch = { B: 2, T, tokens: Int32Array.from(rows.flat()), lengths, targets: Int32Array.from(tgt.flat()), lossMask: Float32Array.from(mask.flat()) };
    const valueTargets = Float32Array.from({ length: 2 * T }, (_, i) => Math.sin(i));
    // CE plus a masked value regression, so the value head's gradient is checked too.
    const loss = (out: { logits: tf.Tensor2D; values?: tf.Tensor1D }, b: RefBatch) =>
      tf.add(maskedCrossEntropy(out.logits, b.targets as Int32Array, b.lossMask as Float32Array),
        tf.div(tf.sum(tf.mul(tf.square(tf.sub(out.values as tf.Tensor1D, valueTargets)), b.lossMask as Float32Array)), 2 * 9)) as tf.Scalar;
    const opts = { lora, valueHead: true };
    const { loss: refLoss, grads } = refLossAndGrads(cfg, params, batch, { ...opts, loss });

    const loopRows = rows.map((r, b) => ({ tokens: r.slice(0, lengths[b]), targets: tgt[b].slice(0, lengths[b]), mask: mask[b].slice(0, lengths[b]) }));
    const lossOf = (p: Record<string, Float32Array>, l: Record<string, Float32Array>) => {
      let v = loopLoss(cfg, p, loopRows, { lora: { config: lora.config, tensors: l }, valueHead: true });
      let sq = 0;
      loopRows.forEach((r, b) => {
        const { values } = loopForward(cfg, p, r.tokens, { lora: { config: lora.config, tensors: l }, valueHead: true });
        values.forEach((x, t) => (sq += r.mask[t] * (x - valueTargets[b * T + t]) ** 2));
      });
      v += sq / 18;
      return v;
    };
    expect(Math.abs(refLoss - lossOf(params, lora.tensors))).toBeLessThan(1e-5 * Math.abs(refLoss));

    const rng = new Rng(10, 0);
    const names = [...Object.keys(params), ...Object.keys(lora.tensors)];
    expect(Object.keys(grads).sort()).toEqual([...names].sort());
    let checked = 0;
    for (const name of names) {
      const isLora = name in lora.tensors;
      const arr = isLora ? lora.tensors : params;
      const n = arr[name].length;
      // Embedding rows of tokens not in the batch have zero gradient: probe used rows.
      const pick = () => (name === 'tok_emb.weight' ? rows[0][rng.nextInt(4)] * cfg.dModel + rng.nextInt(cfg.dModel) : name === 'pos_emb.weight' ? rng.nextInt(4 * cfg.dModel) : rng.nextInt(n));
      for (let k = 0; k < 2; k++) {
        const i = pick();
        const orig = arr[name][i];
        const h = 1e-3 * Math.max(1, Math.abs(orig));
        arr[name][i] = orig + h;
        const up = arr[name][i];
        const lUp = lossOf(params, lora.tensors);
        arr[name][i] = orig - h;
        const down = arr[name][i];
        const lDown = lossOf(params, lora.tensors);
        arr[name][i] = orig;
        const fd = (lUp - lDown) / (up - down);
        const g = grads[name][i];
        expect(Math.abs(g - fd), `${name}[${i}]: autograd ${g}, finite difference ${fd}`).toBeLessThan(2e-3 * Math.abs(fd) + 2e-5);
        checked++;
      }
    }
    expect(checked).toBe(2 * names.length);
  });
});

describe('reference model identities', () => {
  it('GQA equals multi-head attention whose k/v weights repeat each kv head over its group', () => {
    const gqa = tinyLlama({ nHead: 4, nKvHead: 2 });
    const mha = tinyLlama({ nHead: 4, nKvHead: 4 });
    const p = randomParams(gqa, 11);
    const q = { ...p };
    const D = gqa.headDim;
    const C = gqa.dModel;
    for (let l = 0; l < gqa.nLayer; l++) {
      for (const t of ['k', 'v']) {
        const w = p[`layers.${l}.attn.${t}.weight`];
        const b = p[`layers.${l}.attn.${t}.bias`];
        const w2 = new Float32Array(4 * D * C);
        const b2 = new Float32Array(4 * D);
        for (let h = 0; h < 4; h++) {
          const kv = Math.floor(h / 2);
          w2.set(w.subarray(kv * D * C, (kv + 1) * D * C), h * D * C);
          b2.set(b.subarray(kv * D, (kv + 1) * D), h * D);
        }
        q[`layers.${l}.attn.${t}.weight`] = w2;
        q[`layers.${l}.attn.${t}.bias`] = b2;
      }
    }
    const batch = plainBatch([tokens(gqa, 9, 12), tokens(gqa, 9, 13)]);
    expect(relL2(refForward(mha, q, batch).logits, refForward(gqa, p, batch).logits)).toBeLessThan(1e-6);
  });

  for (const make of [() => tinyGpt2(), () => tinyLlama()]) {
    it(`a packed batch equals each segment run alone (${make().family}; positions restart per segment)`, () => {
      const cfg = make();
      const p = randomParams(cfg, 14);
      const seq = tokens(cfg, 10, 15);
      const segments = Int32Array.of(0, 0, 0, 1, 1, 1, 1, -1, 2, 2);
      const packed = refForward(cfg, p, { B: 1, T: 10, tokens: Int32Array.from(seq), segments });
      expect([...refPositions({ B: 1, T: 10, tokens: Int32Array.from(seq), segments })]).toEqual([0, 1, 2, 0, 1, 2, 3, 0, 0, 1]);
      const V = cfg.vocabSize;
      for (const [from, to] of [[0, 3], [3, 7], [8, 10]]) {
        const alone = refForward(cfg, p, plainBatch([seq.slice(from, to)]));
        expect(relL2(packed.logits.subarray(from * V, to * V), alone.logits)).toBeLessThan(1e-6);
      }
      expect(packed.logits.every(Number.isFinite)).toBe(true);
    });
  }

  it('a padded batch equals the packed batch with one segment per row', () => {
    for (const cfg of [tinyGpt2(), tinyLlama()]) {
      const p = randomParams(cfg, 16);
      const toks = Int32Array.from([...tokens(cfg, 6, 17), ...tokens(cfg, 6, 18)]);
      const padded = refForward(cfg, p, { B: 2, T: 6, tokens: toks, lengths: Int32Array.of(6, 3) });
      const packed = refForward(cfg, p, { B: 2, T: 6, tokens: toks, segments: Int32Array.of(0, 0, 0, 0, 0, 0, 5, 5, 5, -1, -1, -1) });
      expect(relL2(padded.logits, packed.logits)).toBeLessThan(1e-7);
    }
  });

  it('LoRA with B = 0 is exactly the base model; its A gradients are 0 and its B gradients are not', () => {
    for (const cfg of [tinyGpt2(), tinyLlama()]) {
      const p = randomParams(cfg, 19);
      const config = validateLora(cfg, { rank: 3, alpha: 6, targets: cfg.family === 'gpt2' ? ['q', 'k', 'v', 'o', 'up', 'down'] : ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] });
      const fresh = { config, tensors: initLora(cfg, config, 20) };
      const batch = { ...plainBatch([tokens(cfg, 8, 21)]), targets: Int32Array.from(tokens(cfg, 8, 22)) };
      expect(refForward(cfg, p, batch, { lora: fresh }).logits).toEqual(refForward(cfg, p, batch).logits);
      const { grads } = refLossAndGrads(cfg, p, batch, { lora: fresh, trainable: 'lora' });
      for (const [n, g] of Object.entries(grads)) {
        if (n.endsWith('lora_a')) expect(g.every((x) => x === 0), n).toBe(true);
        else expect(g.some((x) => Math.abs(x) > 1e-6), n).toBe(true);
      }
    }
  });

  it('LoRA equals the base model with the adapter merged into its weights', () => {
    for (const cfg of [tinyGpt2(), tinyLlama()]) {
      const p = randomParams(cfg, 23);
      const lora = randomLora(cfg, { targets: cfg.family === 'gpt2' ? ['k', 'o', 'down'] : ['v', 'gate', 'up'], rank: 3, alpha: 5 }, 24);
      const batch = plainBatch([tokens(cfg, 8, 25)]);
      const merged = mergeLora(cfg, p, lora.config, lora.tensors);
      expect(relL2(refForward(cfg, merged, batch).logits, refForward(cfg, p, batch, { lora }).logits)).toBeLessThan(1e-6);
      expect(relL2(refForward(cfg, p, batch).logits, refForward(cfg, p, batch, { lora }).logits)).toBeGreaterThan(1e-3);
    }
  });

  it('tied equals untied with lm_head = tok_emb; the tied embedding gradient is the sum of both', () => {
    for (const family of ['gpt2', 'llama'] as const) {
      const tied = family === 'gpt2' ? tinyGpt2() : tinyLlama({ tieEmbeddings: true });
      const untied = family === 'gpt2' ? tinyGpt2({ tieEmbeddings: false }) : tinyLlama({ tieEmbeddings: false });
      const p = randomParams(tied, 26);
      const q = { ...p, 'lm_head.weight': p['tok_emb.weight'].slice() };
      const batch = { ...plainBatch([tokens(tied, 7, 27)]), targets: Int32Array.from(tokens(tied, 7, 28)) };
      expect(relL2(refForward(untied, q, batch).logits, refForward(tied, p, batch).logits)).toBeLessThan(1e-7);
      const gt = refLossAndGrads(tied, p, batch).grads;
      const gu = refLossAndGrads(untied, q, batch).grads;
      const sum = gu['tok_emb.weight'].map((x, i) => x + gu['lm_head.weight'][i]);
      expect(relL2(gt['tok_emb.weight'], sum)).toBeLessThan(1e-5);
      expect(Object.keys(gt).sort()).toEqual(parameterSpecs(tied).map((s) => s.name).sort());
    }
  });

  it("trainable 'lora' gives exactly the adapter and value-head gradients of 'all'", () => {
    const cfg = tinyLlama();
    const p = randomParams(cfg, 29, { valueHead: true });
    const lora = randomLora(cfg, { targets: ['q', 'down'] }, 30);
    const batch = { ...plainBatch([tokens(cfg, 6, 31)]), targets: Int32Array.from(tokens(cfg, 6, 32)) };
    const loss = (out: { logits: tf.Tensor2D; values?: tf.Tensor1D }, b: RefBatch) => tf.add(maskedCrossEntropy(out.logits, b.targets as Int32Array, new Float32Array(6).fill(1)), tf.mean(tf.square(out.values as tf.Tensor1D))) as tf.Scalar;
    const all = refLossAndGrads(cfg, p, batch, { lora, valueHead: true, loss }).grads;
    const only = refLossAndGrads(cfg, p, batch, { lora, valueHead: true, loss, trainable: 'lora' }).grads;
    expect(Object.keys(only).sort()).toEqual([...Object.keys(lora.tensors), 'value_head.bias', 'value_head.weight'].sort());
    for (const n of Object.keys(only)) expect(only[n]).toEqual(all[n]);
  });

  it('an all-zero loss mask gives loss 0 and zero gradients', () => {
    const cfg = tinyGpt2();
    const p = randomParams(cfg, 33);
    const batch = { ...plainBatch([tokens(cfg, 5, 34)]), targets: Int32Array.from(tokens(cfg, 5, 35)), lossMask: new Float32Array(5) };
    const { loss, grads } = refLossAndGrads(cfg, p, batch);
    expect(Math.abs(loss)).toBe(0);
    for (const g of Object.values(grads)) expect(g.every((x) => x === 0)).toBe(true);
  });
});
