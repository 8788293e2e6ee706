/**
 * Sampler cases (kernels/sample.wgsl), run by both GPU suites: greedy = argmax; a seed fixes the
 * tokens and another seed changes them; the CPU reference with src/util/rng.ts's Philox draws the
 * same tokens (away from f32 rounding at a boundary); empirical frequencies over 2000 rows match
 * softmax(logits/T), also renormalized under top-k and top-p; top-k and top-p never pick outside
 * their set; logprobs vs the reference and tfjs; per-row keys; typed errors.
 */
import { assert } from 'chai';
import { ConfigError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { NON_FINITE_TOKEN, sample, type SampleOptions } from '../../../src/ops/sample.ts';
import { sampleRef } from '../../../src/ops/sample.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import type { GpuCase } from '../register.ts';
import { firstBitDiff } from '../gpu.ts';
import { assertClose, empty, releaseAll, run, up } from './helpers.ts';

interface GpuSample { tokens: Int32Array; logprobs: Float32Array; logprobsRaw: Float32Array }

async function runSample(ctx: GpuContext, logits: Float32Array, b: number, v: number, opts: Omit<SampleOptions, 'keys'>,
  keys?: Uint32Array): Promise<GpuSample> {
  const tl = up(ctx, logits, [b, v]), tk = keys ? up(ctx, keys, [b, 2]) : undefined;
  const tokens = empty(ctx, [b], 'i32'), lp = empty(ctx, [b]), lpr = empty(ctx, [b]);
  const [t, l, r] = await run(ctx, [tokens, lp, lpr], (rec) => sample(rec, tokens, lp, lpr, tl, { ...opts, keys: tk }));
  releaseAll(tl, tk, tokens, lp, lpr);
  return { tokens: t as Int32Array, logprobs: l as Float32Array, logprobsRaw: r as Float32Array };
}

/** `rows` copies of one row. */
function tile(row: Float32Array, rows: number): Float32Array {
  const out = new Float32Array(row.length * rows);
  for (let r = 0; r < rows; r++) out.set(row, r * row.length);
  return out;
}

function softmax(x: ArrayLike<number>, t: number, keep?: Set<number>): number[] {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) if (!keep || keep.has(i)) m = Math.max(m, x[i]);
  const e = Array.from(x, (v, i) => (!keep || keep.has(i) ? Math.exp((v - m) / t) : 0));
  const z = e.reduce((a, c) => a + c, 0);
  return e.map((v) => v / z);
}

/** Frequencies of `tokens` over V match `probs`: each within 4.5 σ of a binomial (+ 1e-3). */
function assertFrequencies(tokens: Int32Array, probs: number[], label: string): void {
  const n = tokens.length;
  const counts = new Array(probs.length).fill(0);
  for (const t of tokens) counts[t]++;
  probs.forEach((p, i) => {
    const f = counts[i] / n;
    const tol = 4.5 * Math.sqrt((p * (1 - p)) / n) + 1e-3;
    assert.isAtMost(Math.abs(f - p), tol, `${label}: token ${i} frequency ${f.toFixed(4)} vs p ${p.toFixed(4)}`);
  });
}

/** Logits with a spread like a model's, and a few exact ties. */
function modelLogits(rng: Rng, n: number): Float32Array {
  const x = rng.normalArray(n, 2.5);
  if (n > 8) x[3] = x[5] = x[7];
  return x;
}

/** GPU and reference tokens agree on every row whose margin is clear of f32 rounding. */
const compared = { rows: 0, borderline: 0 };

function assertMatchesRef(got: GpuSample, ref: ReturnType<typeof sampleRef>, label: string): number {
  let borderline = 0;
  compared.rows += got.tokens.length;
  for (let r = 0; r < got.tokens.length; r++) {
    if (ref.margin[r] < 4e-6) {
      borderline++;
      continue;
    }
    assert.strictEqual(got.tokens[r], ref.tokens[r], `${label}: row ${r} (margin ${ref.margin[r].toExponential(1)})`);
  }
  assert.isAtMost(borderline, Math.max(2, got.tokens.length / 10), `${label}: too many rows near a boundary`);
  compared.borderline += borderline;
  return borderline;
}

export const sampleCases: GpuCase[] = [
  {
    name: 'sample: greedy (T = 0) is the argmax, lowest index on ties; logprobs 0 and log softmax (vs tfjs)',
    async fn(ctx) {
      const rng = new Rng(51, 0);
      for (const v of [1, 7, 100, 4099]) {
        const b = 9;
        const logits = rng.normalArray(b * v, 3);
        if (v > 5) logits[v + 2] = logits[v + 4] = 50; // row 1: a tie for the top, lowest index wins
        const got = await runSample(ctx, logits, b, v, { temperature: 0, seed: 1 });
        const ref = sampleRef(logits, b, v, { temperature: 0, seed: 1 });
        assert.deepEqual([...got.tokens], [...ref.tokens], `V=${v}`);
        if (v > 5) assert.strictEqual(got.tokens[1], 2);
        assert.deepEqual([...got.logprobs], new Array(b).fill(0));
        const want = tf.tidy(() => {
          const ls = tf.logSoftmax(tf.tensor2d(logits, [b, v]));
          return tf.gatherND(ls, Array.from(got.tokens, (t, r) => [r, t])).dataSync() as Float32Array;
        });
        assertClose(got.logprobsRaw, want, 1e-5, `sample greedy logprobsRaw vs tfjs V=${v}`);
      }
    },
  },
  {
    name: 'sample: the same seed gives the same tokens bitwise, other seeds and steps give others',
    async fn(ctx) {
      const rng = new Rng(52, 0);
      const [b, v] = [64, 50];
      const logits = tile(rng.normalArray(v, 0.3), b);
      const opts = { temperature: 1, topK: 40, topP: 0.95, seed: 1234, step: 7 };
      const a = await runSample(ctx, logits, b, v, opts);
      const again = await runSample(ctx, logits, b, v, opts);
      for (const k of ['tokens', 'logprobs', 'logprobsRaw'] as const) assert.strictEqual(firstBitDiff(a[k], again[k]), -1, k);
      const otherSeed = await runSample(ctx, logits, b, v, { ...opts, seed: 1235 });
      const otherStep = await runSample(ctx, logits, b, v, { ...opts, step: 8 });
      const differ = (x: Int32Array) => x.reduce((n, t, i) => n + (t !== a.tokens[i] ? 1 : 0), 0);
      assert.isAbove(differ(otherSeed.tokens), b / 2, 'another seed');
      assert.isAbove(differ(otherStep.tokens), b / 2, 'another step');
      // Rows are separate streams: identical rows get different tokens.
      assert.isAbove(new Set(a.tokens).size, 10);
    },
  },
  {
    name: 'sample: the CPU reference with the same Philox draws the same tokens; logprobs agree',
    async fn(ctx) {
      const rng = new Rng(53, 0);
      const settings: Omit<SampleOptions, 'keys' | 'seed'>[] = [
        { temperature: 1 }, { temperature: 0.7, topK: 5 }, { temperature: 1.3, topP: 0.8 },
        { temperature: 0.9, topK: 20, topP: 0.9 }, { temperature: 1, topK: 1 }, { temperature: 2, topP: 0.05 },
      ];
      for (const [b, v] of [[33, 7], [40, 257], [6, 4099]]) {
        const logits = new Float32Array(b * v);
        for (let r = 0; r < b; r++) logits.set(modelLogits(rng, v), r * v);
        for (const [j, o] of settings.entries()) {
          const opts = { ...o, seed: 99 + j, step: 3, streamBase: 10 };
          const got = await runSample(ctx, logits, b, v, opts);
          const ref = sampleRef(logits, b, v, opts);
          const label = `B=${b} V=${v} ${JSON.stringify(o)}`;
          assertMatchesRef(got, ref, label);
          for (let r = 0; r < b; r++) assert.include(ref.kept[r], got.tokens[r], `${label}: row ${r} outside the kept set`);
          const same = Array.from(got.tokens, (t, r) => t === ref.tokens[r]);
          const pick = (a: Float32Array) => a.filter((_, r) => same[r]);
          assertClose(pick(got.logprobs), pick(ref.logprobs), 1e-5, `sample logprobs vs ref ${label}`);
          assertClose(pick(got.logprobsRaw), pick(ref.logprobsRaw), 1e-5, `sample logprobsRaw vs ref ${label}`);
        }
      }
      console.log(`sample vs reference: ${compared.rows} rows, ${compared.borderline} within 4e-6 of a boundary (not compared)`);
    },
  },
  {
    name: 'sample: frequencies over 2000 rows match softmax(logits/T), and under top-k / top-p renormalized',
    async fn(ctx) {
      const b = 2000;
      const row = Float32Array.of(1.5, -0.5, 0.3, 2.2, 0, -1.2, 0.9, 1.1, -2, 0.4);
      const v = row.length;
      const logits = tile(row, b);
      const byValue = Array.from({ length: v }, (_, i) => i).sort((a, c) => row[c] - row[a]);
      const t1 = await runSample(ctx, logits, b, v, { temperature: 0.8, seed: 5 });
      assertFrequencies(t1.tokens, softmax(row, 0.8), 'T=0.8');
      const t2 = await runSample(ctx, logits, b, v, { temperature: 1.5, seed: 6, step: 2 });
      assertFrequencies(t2.tokens, softmax(row, 1.5), 'T=1.5');
      const top3 = new Set(byValue.slice(0, 3));
      const t3 = await runSample(ctx, logits, b, v, { temperature: 1, topK: 3, seed: 7 });
      assert.isTrue(t3.tokens.every((t) => top3.has(t)), 'top-k never returns outside the top 3');
      assertFrequencies(t3.tokens, softmax(row, 1, top3), 'top-k 3');
      // Nucleus at p = 0.7 under T = 1: the shortest prefix by probability with mass ≥ 0.7.
      const probs = softmax(row, 1);
      const nucleus = new Set<number>();
      let cum = 0;
      for (const i of byValue) {
        if (cum >= 0.7) break;
        nucleus.add(i);
        cum += probs[i];
      }
      const t4 = await runSample(ctx, logits, b, v, { temperature: 1, topP: 0.7, seed: 8 });
      assert.isTrue(t4.tokens.every((t) => nucleus.has(t)), 'top-p never returns outside the nucleus');
      assertFrequencies(t4.tokens, softmax(row, 1, nucleus), 'top-p 0.7');
      // The logprob reported is the renormalized one.
      const want = softmax(row, 1, nucleus);
      t4.tokens.forEach((t, r) => assert.approximately(t4.logprobs[r], Math.log(want[t]), 1e-5));
    },
  },
  {
    name: 'sample: masked (-Infinity) logits are never drawn, also when top-k reaches into them',
    async fn(ctx) {
      const rng = new Rng(55, 0);
      const [b, v] = [300, 37];
      const logits = new Float32Array(b * v).fill(-Infinity);
      const allowed = new Set([2, 11, 12, 30]);
      for (let r = 0; r < b; r++) for (const i of allowed) logits[r * v + i] = rng.normalArray(1)[0];
      for (const opts of [{ temperature: 1, seed: 3 }, { temperature: 0.7, topK: 10, seed: 4 }, { temperature: 1, topP: 0.99, seed: 5 },
        { temperature: 0, seed: 6 }]) {
        const got = await runSample(ctx, logits, b, v, opts);
        assert.isTrue(got.tokens.every((t) => allowed.has(t)), JSON.stringify(opts));
        assert.isTrue(got.logprobs.every(Number.isFinite) && got.logprobsRaw.every(Number.isFinite), JSON.stringify(opts));
        const ref = sampleRef(logits, b, v, opts);
        assertMatchesRef(got, ref, `masked ${JSON.stringify(opts)}`);
      }
    },
  },
  {
    name: 'sample: a row with a NaN or +Inf logit, or no finite one, gets NON_FINITE_TOKEN; the other rows are sampled as usual',
    async fn(ctx) {
      const rng = new Rng(56, 0);
      const [b, v] = [6, 301];
      const logits = rng.normalArray(b * v, 2);
      logits[1 * v + 17] = NaN; // row 1: one NaN
      logits[2 * v + 300] = Infinity; // row 2: one +Inf (the last entry)
      logits.fill(-Infinity, 3 * v, 4 * v); // row 3: all masked
      logits[4 * v + 5] = -Infinity; // row 4: one masked entry, otherwise fine
      new Uint32Array(logits.buffer)[5 * v] = 0xffc00000; // row 5: a NaN with the sign bit set (its order key is the smallest)
      for (const opts of [{ temperature: 1, seed: 3 }, { temperature: 0, seed: 1 }, { temperature: 0.8, topK: 20, topP: 0.9, seed: 2 }]) {
        const got = await runSample(ctx, logits, b, v, opts);
        const ref = sampleRef(logits, b, v, opts);
        assert.deepEqual([...got.tokens].map((t, r) => (t === NON_FINITE_TOKEN ? r : -1)).filter((r) => r >= 0), [1, 2, 3, 5], JSON.stringify(opts));
        assert.deepEqual([...ref.tokens], [...got.tokens].map((t, r) => (r === 0 || r === 4 ? ref.tokens[r] : t)), 'the reference flags the same rows');
        for (const r of [0, 4]) assert.isTrue(got.tokens[r] >= 0 && got.tokens[r] < v && Number.isFinite(got.logprobs[r]), `row ${r}`);
        assert.strictEqual(got.tokens[0], ref.tokens[0]);
      }
    },
  },
  {
    name: 'sample: V = 50k with top-k and top-p matches the reference; per-row keys equal the uniform keys',
    async fn(ctx) {
      const rng = new Rng(54, 0);
      const [b, v] = [3, 50_000];
      const logits = new Float32Array(b * v);
      for (let r = 0; r < b; r++) logits.set(modelLogits(rng, v), r * v);
      const opts = { temperature: 0.8, topK: 50, topP: 0.9, seed: 2024, step: 11, streamBase: 4 };
      const got = await runSample(ctx, logits, b, v, opts);
      const ref = sampleRef(logits, b, v, opts);
      assertMatchesRef(got, ref, 'V=50000');
      for (let r = 0; r < b; r++) assert.include(ref.kept[r], got.tokens[r]);
      const keys = Uint32Array.from({ length: 2 * b }, (_, i) => (i % 2 === 0 ? 4 + i / 2 : 11));
      const viaKeys = await runSample(ctx, logits, b, v, { ...opts, step: 0, streamBase: 0 }, keys);
      for (const k of ['tokens', 'logprobs', 'logprobsRaw'] as const) assert.strictEqual(firstBitDiff(got[k], viaKeys[k]), -1, k);
    },
  },
  {
    name: 'sample: a top-p cut inside a run of tied logits keeps the lowest indices, inside a top-k (gathered list) and without one',
    async fn(ctx) {
      // x[0] = 3, x[10..29] = 1 (20 ties), the rest −2. Top-k 12 keeps 0 and ties 10..20 (mass
      // e^3 + 11e ≈ 49.99); top-p 0.7 of that needs 6 ties: {0, 10..15}. Without top-k, top-p 0.5
      // of the total (≈ 112.2) needs 14 ties: {0, 10..23}.
      const v = 300, b = 400;
      const row = new Float32Array(v).fill(-2);
      row[0] = 3;
      row.fill(1, 10, 30);
      const range = (a: number, z: number) => Array.from({ length: z - a }, (_, i) => a + i);
      for (const [opts, want] of [[{ topK: 12, topP: 0.7 }, [0, ...range(10, 16)]], [{ topP: 0.5 }, [0, ...range(10, 24)]]] as const) {
        const o = { temperature: 1, seed: 21, ...opts };
        const ref = sampleRef(tile(row, 1), 1, v, o);
        assert.deepEqual([...ref.kept[0]].sort((x, y) => x - y), [...want], `reference kept set ${JSON.stringify(opts)}`);
        const got = await runSample(ctx, tile(row, b), b, v, o);
        assert.deepEqual([...new Set(got.tokens)].sort((x, y) => x - y), [...want], `drawn tokens ${JSON.stringify(opts)}`);
      }
    },
  },
  {
    name: 'sample: bad shapes, dtypes and settings are refused before dispatch',
    async fn(ctx) {
      const logits = empty(ctx, [4, 10], 'f32', 'logits'), tok = empty(ctx, [4], 'i32', 'tok'), ftok = empty(ctx, [4], 'f32', 'ftok');
      const lp = empty(ctx, [4], 'f32', 'lp'), lpr = empty(ctx, [4], 'f32', 'lpr'), lp3 = empty(ctx, [3], 'f32', 'lp3');
      const keys = empty(ctx, [4], 'u32', 'keys');
      const rec = new Recorder(ctx);
      assert.throws(() => sample(rec, ftok, lp, lpr, logits, { seed: 1 }), ShapeError, /sample: tokens \(Tensor\(ftok: f32\[4\]\)\) must be i32/);
      assert.throws(() => sample(rec, tok, lp3, lpr, logits, { seed: 1 }), ShapeError, /sample: logprobs \(Tensor\(lp3: f32\[3\]\)\) must hold B = 4 values for logits Tensor\(logits: f32\[4, 10\]\)/);
      assert.throws(() => sample(rec, tok, lp, lpr, logits, { seed: 1, keys }), ShapeError, /sample: keys .* must be \[4, 2\]/);
      assert.throws(() => sample(rec, tok, lp, lp, logits, { seed: 1 }), ShapeError, /must not alias/);
      assert.throws(() => sample(rec, tok, lp, lpr, logits, { seed: 1, topP: 0 }), ConfigError, /sample\.topP: must be in \(0, 1\]/);
      assert.throws(() => sample(rec, tok, lp, lpr, logits, { seed: 1, temperature: -1 }), ConfigError, /sample\.temperature/);
      assert.throws(() => sample(rec, tok, lp, lpr, logits, { seed: -3 }), ConfigError, /sample\.seed: must be a u32/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(logits, tok, ftok, lp, lpr, lp3, keys);
    },
  },
];
