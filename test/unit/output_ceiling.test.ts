// outputCeiling (src/model/output_ceiling.ts): the highest probability a token can take against the
// others of its set when only the final hidden state moves — checked against closed forms, and
// against the probabilities of many random states the final norm can output (never above it).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/model/config.ts';
import { outputCeiling } from '../../src/model/output_ceiling.ts';
import { ShapeError } from '../../src/errors.ts';

const cfgOf = (family: ModelConfig['family'], C: number, V: number, tied = true) => ({ family, dModel: C, vocabSize: V, tieEmbeddings: tied }) as ModelConfig;
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** Params with the given output rows (token i = row i), norm weight and bias. */
function params(rows: number[][], w: number[], b?: number[], tied = true): Record<string, Float32Array> {
  return { [tied ? 'tok_emb.weight' : 'lm_head.weight']: Float32Array.from(rows.flat()), 'final_norm.weight': Float32Array.from(w), ...(b ? { 'final_norm.bias': Float32Array.from(b) } : {}) };
}

describe('outputCeiling', () => {
  it('two opposite rows: σ(2·s·√C) (RMSNorm), the same with Gemma’s 1 + w and an untied head', () => {
    const s = 0.3, C = 4;
    const rows = [[s, 0, 0, 0], [-s, 0, 0, 0], [0, 0, 0, 0]];
    const want = sigmoid(2 * s * Math.sqrt(C));
    const [a, b] = outputCeiling(params(rows, [1, 1, 1, 1]), cfgOf('llama', C, 3), [0, 1]);
    expect(a).toBeCloseTo(want, 6);
    expect(b).toBeCloseTo(want, 6);
    expect(outputCeiling(params(rows, [0, 0, 0, 0]), cfgOf('gemma3', C, 3), [0, 1])[0]).toBeCloseTo(want, 6);
    expect(outputCeiling(params(rows, [1, 1, 1, 1], undefined, false), cfgOf('qwen3', C, 3, false), [1, 0])[0]).toBeCloseTo(want, 6);
    // The norm weight scales what the state can do: a gain of 2 on the only useful coordinate doubles the gap.
    expect(outputCeiling(params(rows, [2, 1, 1, 1]), cfgOf('llama', C, 3), [0, 1])[0]).toBeCloseTo(sigmoid(4 * s * Math.sqrt(C)), 6);
  });

  it('LayerNorm’s output has mean 0: a row along the all-ones direction cannot be told from zero', () => {
    const C = 5;
    const rows = [[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]];
    expect(outputCeiling(params(rows, [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]), cfgOf('gpt2', C, 2), [0, 1])).toEqual([0.5, 0.5].map((x) => expect.closeTo(x, 9)));
    // An RMSNorm has no such constraint: the same rows separate (σ(√C·√C)).
    expect(outputCeiling(params(rows, [1, 1, 1, 1, 1]), cfgOf('llama', C, 2), [0, 1])[0]).toBeCloseTo(sigmoid(C), 6);
  });

  it('identical rows stay at 1/n; rows far apart reach 1', () => {
    const same = [[0.1, -0.2, 0.3], [0.1, -0.2, 0.3], [0.1, -0.2, 0.3]];
    for (const x of outputCeiling(params(same, [1, 1, 1]), cfgOf('llama', 3, 3), [0, 1, 2])) expect(x).toBeCloseTo(1 / 3, 9);
    const apart = [[5, 0, 0], [0, 5, 0], [0, 0, 5]];
    for (const x of outputCeiling(params(apart, [1, 1, 1]), cfgOf('llama', 3, 3), [0, 1, 2])) expect(x).toBeGreaterThan(0.999);
  });

  it('no state the norm can output makes a token likelier than its ceiling (random models, random states)', () => {
    const C = 6, V = 4;
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: V * C, maxLength: V * C }),
        fc.array(fc.double({ min: 0.2, max: 2, noNaN: true }), { minLength: C, maxLength: C }),
        fc.array(fc.double({ min: -0.5, max: 0.5, noNaN: true }), { minLength: C, maxLength: C }),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (flat, w, bias, layer, seed) => {
          const rows = Array.from({ length: V }, (_, i) => flat.slice(i * C, (i + 1) * C));
          const cfg = cfgOf(layer ? 'gpt2' : 'llama', C, V);
          const p = params(rows, w, layer ? bias : undefined);
          const ids = [0, 1, 2, 3];
          const ceil = outputCeiling(p, cfg, ids, { iterations: 3000 });
          let state = seed;
          const rand = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
          for (let trial = 0; trial < 200; trial++) {
            // A state the norm outputs: mean 0 (LayerNorm) and length √C.
            let u = Array.from({ length: C }, rand);
            if (layer) {
              const m = u.reduce((s, x) => s + x, 0) / C;
              u = u.map((x) => x - m);
            }
            const len = Math.hypot(...u);
            u = u.map((x) => (x * Math.sqrt(C)) / len);
            const y = u.map((x, i) => w[i] * x + (layer ? bias[i] : 0));
            const z = rows.map((r) => r.reduce((s, x, i) => s + x * y[i], 0));
            const m = Math.max(...z);
            const e = z.map((x) => Math.exp(x - m));
            const total = e.reduce((s, x) => s + x, 0);
            ids.forEach((a) => expect(e[a] / total).toBeLessThanOrEqual(ceil[a] + 1e-6));
          }
        },
      ),
      { numRuns: 40, seed: 11 },
    );
  });

  it('refuses bad input by name', () => {
    const rows = [[1, 0], [0, 1], [1, 1]];
    const p = params(rows, [1, 1]);
    const cfg = cfgOf('llama', 2, 3);
    expect(() => outputCeiling(p, cfg, [0])).toThrow(/at least 2 tokens/);
    expect(() => outputCeiling(p, cfg, [0, 0])).toThrow(/distinct token ids in \[0, 3\)/);
    expect(() => outputCeiling(p, cfg, [0, 3])).toThrow(/distinct token ids/);
    expect(() => outputCeiling(p, cfg, [0, 1], { iterations: 0 })).toThrow(/iterations/);
    expect(() => outputCeiling({ ...p, 'final_norm.weight': new Float32Array(3) }, cfg, [0, 1])).toThrow(ShapeError);
    expect(() => outputCeiling(p, cfgOf('llama', 2, 3, false), [0, 1])).toThrow(/lm_head\.weight must be \[3, 2\]/);
    expect(() => outputCeiling(p, cfgOf('gpt2', 2, 3), [0, 1])).toThrow(/final_norm\.bias/);
  });
});
