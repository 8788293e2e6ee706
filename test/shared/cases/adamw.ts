/**
 * Fused AdamW and the clip scale, run by both GPU suites: a hand-computed step, several steps vs
 * the plain TS reference on odd sizes, gradient clipping entirely on the GPU (norm → scale →
 * update in one recording), bitwise reproducibility, typed errors.
 */
import { assert } from 'chai';
import { ConfigError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor, type Tensor, tensorFrom, zerosTensor } from '../../../src/gpu/tensor.ts';
import { adamw, adamwCheck, adamwGuardReset, type AdamWOptions, clipScale } from '../../../src/ops/adamw.ts';
import { adamwRef, adamwStepFiniteRef, clipScaleRef } from '../../../src/ops/adamw.ref.ts';
import { globalL2Norm, reduceScratchSize } from '../../../src/ops/reduce.ts';
import { globalL2NormRef } from '../../../src/ops/reduce.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { relL2 } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';

const o = { owner: 'adamw-case' };

interface State {
  p: Float32Array;
  m: Float32Array;
  v: Float32Array;
}

/**
 * `steps` AdamW steps on the GPU, one recording per step; with `maxNorm`, each step first clips
 * the gradients of all tensors by their global norm, on the GPU.
 */
async function runSteps(ctx: GpuContext, init: Float32Array[], grads: Float32Array[][], opts: Omit<AdamWOptions, 'step'>, maxNorm?: number): Promise<State[]> {
  const p = init.map((a) => tensorFrom(ctx, a, [a.length], o));
  const m = init.map((a) => zerosTensor(ctx, [a.length], 'f32', o));
  const v = init.map((a) => zerosTensor(ctx, [a.length], 'f32', o));
  const norm = emptyTensor(ctx, [1], 'f32', o);
  const scale = emptyTensor(ctx, [1], 'f32', o);
  const scratch = emptyTensor(ctx, [reduceScratchSize(...init.map((a) => a.length))], 'f32', o);
  for (const [k, gs] of grads.entries()) {
    const g = gs.map((a) => tensorFrom(ctx, a, [a.length], o));
    const rec = new Recorder(ctx, { label: `adamw step ${k + 1}` });
    if (maxNorm !== undefined) {
      globalL2Norm(rec, norm, g, scratch);
      clipScale(rec, scale, norm, maxNorm);
    }
    p.forEach((_, i) => adamw(rec, p[i], m[i], v[i], g[i], { ...opts, step: k + 1 }, maxNorm !== undefined ? scale : null));
    await rec.submit();
    for (const t of g) t.release();
  }
  const rec = new Recorder(ctx);
  const reads = p.map((_, i) => [rec.read(p[i]), rec.read(m[i]), rec.read(v[i])]);
  await rec.submit();
  const out = await Promise.all(reads.map(async (r) => {
    const [pp, mm, vv] = (await Promise.all(r)) as Float32Array[];
    return { p: pp, m: mm, v: vv };
  }));
  for (const t of [...p, ...m, ...v, norm, scale, scratch]) t.release();
  return out;
}

/** The same steps on the CPU reference. */
function refSteps(init: Float32Array[], grads: Float32Array[][], opts: Omit<AdamWOptions, 'step'>, maxNorm?: number): State[] {
  const st = init.map((a) => ({ p: a.slice(), m: new Float32Array(a.length), v: new Float32Array(a.length) }));
  grads.forEach((gs, k) => {
    const s = maxNorm === undefined ? 1 : clipScaleRef(globalL2NormRef(gs), maxNorm);
    st.forEach((x, i) => adamwRef(x.p, x.m, x.v, gs[i], { ...opts, step: k + 1 }, s));
  });
  return st;
}

function randomRun(seed: number, sizes: number[], steps: number, gradStd = 1) {
  const rng = new Rng(seed, 4);
  const init = sizes.map((n) => rng.normalArray(n));
  const grads = Array.from({ length: steps }, () => sizes.map((n) => rng.normalArray(n, gradStd)));
  return { init, grads };
}

export const adamwCases: GpuCase[] = [
  {
    name: 'adamw: one step matches a hand-computed update',
    async fn(ctx) {
      // p = 1, g = 0.5, t = 1, lr = 0.1, wd = 0.01: m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25,
      // p = 1·(1 − 0.001) − 0.1·0.5/(0.5 + 1e-8) = 0.8990000002.
      // p = −2, g = −4: m = −0.4, v = 0.016, m̂ = −4, v̂ = 16, p = −2·0.999 + 0.1·4/(4 + 1e-8) = −1.898.
      const [got] = await runSteps(ctx, [Float32Array.of(1, -2)], [[Float32Array.of(0.5, -4)]], { lr: 0.1, weightDecay: 0.01 });
      assert.approximately(got.p[0], 0.8990000002, 1e-7);
      assert.approximately(got.p[1], -1.898, 1e-7);
      assert.approximately(got.m[0], 0.05, 1e-8);
      assert.approximately(got.v[0], 0.00025, 1e-10);
      assert.approximately(got.m[1], -0.4, 1e-7);
      assert.approximately(got.v[1], 0.016, 1e-9);
    },
  },
  {
    name: 'adamw: several steps match the TS reference on odd sizes; two runs are bitwise identical',
    async fn(ctx) {
      const sizes = [1, 7, 257, 100_003];
      const { init, grads } = randomRun(31, sizes, 5);
      const opts = { lr: 3e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1 };
      const got = await runSteps(ctx, init, grads, opts);
      const want = refSteps(init, grads, opts);
      for (const [i, n] of sizes.entries()) {
        for (const k of ['p', 'm', 'v'] as const) assert.isAtMost(relL2(got[i][k], want[i][k]), 1e-6, `n=${n} ${k}`);
      }
      const again = await runSteps(ctx, init, grads, opts);
      for (const [i] of sizes.entries()) for (const k of ['p', 'm', 'v'] as const) assert.strictEqual(firstBitDiff(got[i][k], again[i][k]), -1);
    },
  },
  {
    name: 'adamw: gradient clipping on the GPU (global norm → clip scale → update), with and without clipping active',
    async fn(ctx) {
      const sizes = [33, 4099, 5];
      const opts = { lr: 1e-2, weightDecay: 0.01 };
      for (const [maxNorm, std] of [[1.0, 1], [1e4, 1]] as const) {
        const { init, grads } = randomRun(32, sizes, 3, std);
        const norm = globalL2NormRef(grads[0]);
        assert.strictEqual(norm > maxNorm, maxNorm === 1.0, 'clipping is active exactly in the first setting');
        const got = await runSteps(ctx, init, grads, opts, maxNorm);
        const want = refSteps(init, grads, opts, maxNorm);
        for (const [i] of sizes.entries()) {
          for (const k of ['p', 'm', 'v'] as const) assert.isAtMost(relL2(got[i][k], want[i][k]), 2e-6, `maxNorm=${maxNorm} tensor ${i} ${k}`);
        }
      }
    },
  },
  {
    name: 'adamw: clip scale is min(1, maxNorm / (norm + 1e-6))',
    async fn(ctx) {
      for (const [norm, maxNorm] of [[10, 1], [0.5, 1], [0, 1], [3, 3]]) {
        const tn = tensorFrom(ctx, Float32Array.of(norm), [1], o);
        const ts = emptyTensor(ctx, [1], 'f32', o);
        const rec = new Recorder(ctx);
        clipScale(rec, ts, tn, maxNorm);
        const r = rec.read(ts);
        await rec.submit();
        const got = ((await r) as Float32Array)[0];
        assert.approximately(got, clipScaleRef(norm, maxNorm), 1e-7, `norm=${norm} max=${maxNorm}`);
        assert.approximately(got, Math.min(1, maxNorm / (norm + 1e-6)), 1e-6);
        tn.release();
        ts.release();
      }
    },
  },
  {
    name: 'adamw: the non-finite guard applies a step to every tensor or, when any new value would be NaN or ±Inf, to none',
    async fn(ctx) {
      // Two tensors of odd sizes; in the bad step one element's gradient is 1e30, so v = g² overflows.
      const sizes = [257, 1001];
      const { init, grads } = randomRun(33, sizes, 2);
      const bad = grads[1].map((g, i) => (i === 1 ? Float32Array.from(g, (x, j) => (j === 500 ? 1e30 : x)) : g));
      const opts = { lr: 1e-2, weightDecay: 0.01 };
      const p = init.map((a) => tensorFrom(ctx, a, [a.length], o));
      const m = init.map((a) => zerosTensor(ctx, [a.length], 'f32', o));
      const v = init.map((a) => zerosTensor(ctx, [a.length], 'f32', o));
      const guard = zerosTensor(ctx, [1], 'u32', o);
      const step = async (gs: Float32Array[], t: number) => {
        const g = gs.map((a) => tensorFrom(ctx, a, [a.length], o));
        const rec = new Recorder(ctx, { label: `guarded step ${t}` });
        adamwGuardReset(rec, guard);
        p.forEach((_, i) => adamwCheck(rec, p[i], m[i], v[i], g[i], { ...opts, step: t }, null, guard));
        p.forEach((_, i) => adamw(rec, p[i], m[i], v[i], g[i], { ...opts, step: t }, null, guard));
        const flag = rec.read(guard);
        const reads = p.map((_, i) => [rec.read(p[i]), rec.read(m[i]), rec.read(v[i])]);
        await rec.submit();
        for (const x of g) x.release();
        const state = await Promise.all(reads.map(async (r) => (await Promise.all(r)) as Float32Array[]));
        return { flag: ((await flag) as Uint32Array)[0], state };
      };
      try {
        // A clean step: applied, as the unguarded update (the reference) computes it.
        const first = await step(grads[0], 1);
        assert.strictEqual(first.flag, 0);
        const want = refSteps(init, [grads[0]], opts);
        sizes.forEach((n, i) => ['p', 'm', 'v'].forEach((k, j) => assert.isAtMost(relL2(first.state[i][j], want[i][k as 'p']), 1e-6, `n=${n} ${k}`)));
        // The reference agrees that the bad step is not finite and the clean one is.
        assert.isFalse(adamwStepFiniteRef(want[1].p, want[1].m, want[1].v, bad[1], { ...opts, step: 2 }));
        assert.isTrue(adamwStepFiniteRef(want[0].p, want[0].m, want[0].v, bad[0], { ...opts, step: 2 }));
        // The bad step: flagged, and neither tensor changed — not even the one whose update was finite.
        const second = await step(bad, 2);
        assert.strictEqual(second.flag, 1);
        sizes.forEach((_, i) => [0, 1, 2].forEach((j) => assert.strictEqual(firstBitDiff(second.state[i][j], first.state[i][j]), -1, `tensor ${i} part ${j} changed`)));
        // The guard is reset by the next step: a clean one applies again.
        assert.strictEqual((await step(grads[1], 2)).flag, 0);
      } finally {
        for (const t of [...p, ...m, ...v, guard]) t.release();
      }
    },
  },
  {
    name: 'adamw: bad input gives typed errors naming the kernel and shapes, before recording',
    async fn(ctx) {
      const t = (shape: number[], label: string, dtype: 'f32' | 'i32' = 'f32') => emptyTensor(ctx, shape, dtype, { ...o, label });
      const [p, m, v, g] = [t([4, 3], 'p'), t([4, 3], 'm'), t([4, 3], 'v'), t([4, 3], 'g')];
      const [m2, gi, s2, one] = [t([3, 4], 'm2'), t([4, 3], 'gi', 'i32'), t([2], 's2'), t([1], 'one')];
      const rec = new Recorder(ctx);
      const opts = { lr: 1e-3, step: 1 };
      assert.throws(() => adamw(rec, p, m2, v, g, opts), ShapeError, /adamw: m must have shape \[4, 3\], got Tensor\(m2: f32\[3, 4\]\)/);
      assert.throws(() => adamw(rec, p, m, v, gi, opts), ShapeError, /adamw: grad \(Tensor\(gi: i32\[4, 3\]\)\) must be f32/);
      assert.throws(() => adamw(rec, p, m, v, p, opts), ShapeError, /adamw: param .* must not alias grad/);
      assert.throws(() => adamw(rec, p, m, v, g, opts, s2), ShapeError, /adamw: gradScale must have shape \[1\]/);
      assert.throws(() => adamw(rec, p, m, v, g, { lr: 1e-3, step: 0 }), ConfigError, /adamw.step/);
      assert.throws(() => adamw(rec, p, m, v, g, { ...opts, beta2: 1 }), ConfigError, /adamw.beta/);
      assert.throws(() => clipScale(rec, one, s2, 1), ShapeError, /adamw: norm must have shape \[1\], got Tensor\(s2: f32\[2\]\)/);
      assert.throws(() => clipScale(rec, one, one, 0), ConfigError, /maxNorm/);
      assert.throws(() => adamw(rec, p, m, v, g, opts, null, one), ShapeError, /adamw: guard .* must be u32/);
      assert.throws(() => adamwGuardReset(rec, one), ShapeError, /adamw: guard/);
      assert.strictEqual(rec.pending, 0);
      for (const x of [p, m, v, g, m2, gi, s2, one] as Tensor[]) x.release();
    },
  },
];
