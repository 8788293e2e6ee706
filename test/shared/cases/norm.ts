/**
 * LayerNorm and RMSNorm cases (kernels/layernorm.wgsl, kernels/rmsnorm.wgsl), run by both GPU
 * suites: GPU vs the CPU reference and vs tfjs autograd (forward values and every gradient) on
 * sizes that are not multiples of any workgroup, write and accumulate modes, bitwise-identical
 * reruns, and typed errors for bad input.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { layernormBackward, layernormForward, layernormScratchSize } from '../../../src/ops/layernorm.ts';
import { layernormBackwardRef, layernormForwardRef } from '../../../src/ops/layernorm.ref.ts';
import { rmsnormBackward, rmsnormForward, rmsnormScratchSize } from '../../../src/ops/rmsnorm.ts';
import { rmsnormBackwardRef, rmsnormForwardRef } from '../../../src/ops/rmsnorm.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import type { GpuCase } from '../register.ts';
import { firstBitDiff } from '../gpu.ts';
import { assertClose, empty, maxErrors, releaseAll, reportErrors, run, up } from './helpers.ts';

/** [N, C]: odd sizes, C from the brief, one shape with several rows per backward block (N > 256). */
const SHAPES: [number, number][] = [[1, 1], [7, 7], [5, 33], [3, 100], [4, 257], [2, 768], [600, 33]];
const TOL = 1e-5;

interface LnResult { out: Float32Array; mean: Float32Array; rstd: Float32Array; dinp: Float32Array; dw: Float32Array; db: Float32Array }

async function runLayernorm(ctx: GpuContext, x: Float32Array, w: Float32Array, b: Float32Array, g: Float32Array, n: number, c: number,
  eps: number, dw0?: Float32Array, db0?: Float32Array): Promise<LnResult> {
  const tx = up(ctx, x, [n, c]), tw = up(ctx, w), tb = up(ctx, b), tg = up(ctx, g, [n, c]);
  const out = empty(ctx, [n, c]), mean = empty(ctx, [n]), rstd = empty(ctx, [n]), dinp = empty(ctx, [n, c]);
  const dw = dw0 ? up(ctx, dw0) : empty(ctx, [c]);
  const db = db0 ? up(ctx, db0) : empty(ctx, [c]);
  const scratch = empty(ctx, [layernormScratchSize(n, c)]);
  const r = await run(ctx, [out, mean, rstd, dinp, dw, db], (rec) => {
    layernormForward(rec, out, mean, rstd, tx, tw, tb, eps);
    layernormBackward(rec, dinp, dw, db, tg, tx, tw, mean, rstd, scratch, { accumulate: Boolean(dw0) });
  }) as Float32Array[];
  releaseAll(tx, tw, tb, tg, out, mean, rstd, dinp, dw, db, scratch);
  return { out: r[0], mean: r[1], rstd: r[2], dinp: r[3], dw: r[4], db: r[5] };
}

async function runRmsnorm(ctx: GpuContext, x: Float32Array, w: Float32Array, g: Float32Array, n: number, c: number, eps: number,
  dw0?: Float32Array, offset = 0): Promise<{ out: Float32Array; rstd: Float32Array; dinp: Float32Array; dw: Float32Array }> {
  const tx = up(ctx, x, [n, c]), tw = up(ctx, w), tg = up(ctx, g, [n, c]);
  const out = empty(ctx, [n, c]), rstd = empty(ctx, [n]), dinp = empty(ctx, [n, c]);
  const dw = dw0 ? up(ctx, dw0) : empty(ctx, [c]);
  const scratch = empty(ctx, [rmsnormScratchSize(n, c)]);
  const r = await run(ctx, [out, rstd, dinp, dw], (rec) => {
    rmsnormForward(rec, out, rstd, tx, tw, eps, { offset });
    rmsnormBackward(rec, dinp, dw, tg, tx, tw, rstd, scratch, { accumulate: Boolean(dw0), offset });
  }) as Float32Array[];
  releaseAll(tx, tw, tg, out, rstd, dinp, dw, scratch);
  return { out: r[0], rstd: r[1], dinp: r[2], dw: r[3] };
}

function tfLayernorm(x: Float32Array, w: Float32Array, b: Float32Array, g: Float32Array, n: number, c: number, eps: number) {
  return tf.tidy(() => {
    const G = tf.tensor2d(g, [n, c]);
    const f = (xt: tf.Tensor, wt: tf.Tensor, bt: tf.Tensor) => {
      const { mean, variance } = tf.moments(xt, -1, true);
      return xt.sub(mean).mul(tf.rsqrt(variance.add(eps))).mul(wt).add(bt);
    };
    const args = [tf.tensor2d(x, [n, c]), tf.tensor1d(w), tf.tensor1d(b)];
    const out = f(args[0], args[1], args[2]).dataSync() as Float32Array;
    const grads = tf.grads((a: tf.Tensor, bb: tf.Tensor, cc: tf.Tensor) => f(a, bb, cc).mul(G).sum())(args);
    return { out, dinp: grads[0].dataSync() as Float32Array, dw: grads[1].dataSync() as Float32Array, db: grads[2].dataSync() as Float32Array };
  });
}

function tfRmsnorm(x: Float32Array, w: Float32Array, g: Float32Array, n: number, c: number, eps: number, offset = 0) {
  return tf.tidy(() => {
    const G = tf.tensor2d(g, [n, c]);
    const f = (xt: tf.Tensor, wt: tf.Tensor) => xt.mul(tf.rsqrt(xt.square().mean(-1, true).add(eps))).mul(wt.add(offset));
    const args = [tf.tensor2d(x, [n, c]), tf.tensor1d(w)];
    const out = f(args[0], args[1]).dataSync() as Float32Array;
    const grads = tf.grads((a: tf.Tensor, bb: tf.Tensor) => f(a, bb).mul(G).sum())(args);
    return { out, dinp: grads[0].dataSync() as Float32Array, dw: grads[1].dataSync() as Float32Array };
  });
}

function inputs(seed: number, n: number, c: number) {
  const rng = new Rng(seed, n * 1000 + c);
  // An offset mean makes the two-pass variance matter.
  const x = rng.normalArray(n * c, 2).map((v) => v + 3);
  return { x, w: rng.normalArray(c), b: rng.normalArray(c), g: rng.normalArray(n * c) };
}

export const normCases: GpuCase[] = [
  {
    name: 'layernorm: forward and backward match the CPU reference and tfjs autograd on odd shapes',
    async fn(ctx) {
      const eps = 1e-5;
      for (const [n, c] of SHAPES) {
        const { x, w, b, g } = inputs(11, n, c);
        const got = await runLayernorm(ctx, x, w, b, g, n, c, eps);
        const out = new Float32Array(n * c), mean = new Float32Array(n), rstd = new Float32Array(n);
        const dinp = new Float32Array(n * c), dw = new Float32Array(c), db = new Float32Array(c);
        layernormForwardRef(out, mean, rstd, x, w, b, n, c, eps);
        layernormBackwardRef(dinp, dw, db, g, x, w, mean, rstd, n, c);
        const at = `N=${n} C=${c}`;
        assertClose(got.out, out, TOL, `layernorm out vs ref ${at}`);
        assertClose(got.mean, mean, TOL, `layernorm mean vs ref ${at}`);
        assertClose(got.rstd, rstd, TOL, `layernorm rstd vs ref ${at}`);
        assertClose(got.dinp, dinp, TOL, `layernorm dinp vs ref ${at}`);
        assertClose(got.dw, dw, TOL, `layernorm dweight vs ref ${at}`);
        assertClose(got.db, db, TOL, `layernorm dbias vs ref ${at}`);
        const t = tfLayernorm(x, w, b, g, n, c, eps);
        assertClose(got.out, t.out, TOL, `layernorm out vs tfjs ${at}`);
        assertClose(got.dinp, t.dinp, 1e-4, `layernorm dinp vs tfjs ${at}`);
        assertClose(got.dw, t.dw, TOL, `layernorm dweight vs tfjs ${at}`);
        assertClose(got.db, t.db, TOL, `layernorm dbias vs tfjs ${at}`);
      }
    },
  },
  {
    name: 'layernorm: accumulate mode adds to dweight/dbias; two runs are bitwise identical',
    async fn(ctx) {
      const [n, c] = [300, 100];
      const { x, w, b, g } = inputs(12, n, c);
      const rng = new Rng(5, 5);
      const dw0 = rng.normalArray(c), db0 = rng.normalArray(c);
      const acc = await runLayernorm(ctx, x, w, b, g, n, c, 1e-5, dw0, db0);
      const fresh = await runLayernorm(ctx, x, w, b, g, n, c, 1e-5);
      assertClose(acc.dw, fresh.dw.map((v, i) => v + dw0[i]), TOL, 'layernorm dweight accumulate');
      assertClose(acc.db, fresh.db.map((v, i) => v + db0[i]), TOL, 'layernorm dbias accumulate');
      const again = await runLayernorm(ctx, x, w, b, g, n, c, 1e-5);
      for (const k of ['out', 'mean', 'rstd', 'dinp', 'dw', 'db'] as const) assert.strictEqual(firstBitDiff(fresh[k], again[k]), -1, k);
    },
  },
  {
    name: 'rmsnorm: forward and backward match the CPU reference and tfjs autograd on odd shapes',
    async fn(ctx) {
      const eps = 1e-6;
      for (const [n, c] of SHAPES) {
        const { x, w, g } = inputs(13, n, c);
        const got = await runRmsnorm(ctx, x, w, g, n, c, eps);
        const out = new Float32Array(n * c), rstd = new Float32Array(n), dinp = new Float32Array(n * c), dw = new Float32Array(c);
        rmsnormForwardRef(out, rstd, x, w, n, c, eps);
        rmsnormBackwardRef(dinp, dw, g, x, w, rstd, n, c);
        const at = `N=${n} C=${c}`;
        assertClose(got.out, out, TOL, `rmsnorm out vs ref ${at}`);
        assertClose(got.rstd, rstd, TOL, `rmsnorm rstd vs ref ${at}`);
        assertClose(got.dinp, dinp, TOL, `rmsnorm dinp vs ref ${at}`);
        assertClose(got.dw, dw, TOL, `rmsnorm dweight vs ref ${at}`);
        const t = tfRmsnorm(x, w, g, n, c, eps);
        assertClose(got.out, t.out, TOL, `rmsnorm out vs tfjs ${at}`);
        assertClose(got.dinp, t.dinp, TOL, `rmsnorm dinp vs tfjs ${at}`);
        assertClose(got.dw, t.dw, TOL, `rmsnorm dweight vs tfjs ${at}`);
      }
    },
  },
  {
    name: "rmsnorm with Gemma's (1 + w) offset: forward and backward match the CPU reference and tfjs autograd on odd shapes",
    async fn(ctx) {
      const eps = 1e-6;
      for (const [n, c] of [[7, 33], [130, 256]]) {
        const { x, g } = inputs(16, n, c);
        const w = new Rng(16, c).normalArray(c, 0.1); // Gemma's weights sit around 0: the scale is 1 + w
        const got = await runRmsnorm(ctx, x, w, g, n, c, eps, undefined, 1);
        const out = new Float32Array(n * c), rstd = new Float32Array(n), dinp = new Float32Array(n * c), dw = new Float32Array(c);
        rmsnormForwardRef(out, rstd, x, w, n, c, eps, 1);
        rmsnormBackwardRef(dinp, dw, g, x, w, rstd, n, c, false, 1);
        const at = `N=${n} C=${c} offset 1`;
        assertClose(got.out, out, TOL, `rmsnorm out vs ref ${at}`);
        assertClose(got.dinp, dinp, TOL, `rmsnorm dinp vs ref ${at}`);
        assertClose(got.dw, dw, TOL, `rmsnorm dweight vs ref ${at}`);
        const t = tfRmsnorm(x, w, g, n, c, eps, 1);
        assertClose(got.out, t.out, TOL, `rmsnorm out vs tfjs ${at}`);
        assertClose(got.dinp, t.dinp, TOL, `rmsnorm dinp vs tfjs ${at}`);
        assertClose(got.dw, t.dw, TOL, `rmsnorm dweight vs tfjs ${at}`);
        // Not the plain norm: the offset changes the output.
        const plain = await runRmsnorm(ctx, x, w, g, n, c, eps);
        assert.isAbove(Math.max(...got.out.map((v, i) => Math.abs(v - plain.out[i]))), 0.1);
      }
    },
  },
  {
    name: 'rmsnorm: accumulate mode adds to dweight; two runs are bitwise identical',
    async fn(ctx) {
      const [n, c] = [300, 100];
      const { x, w, g } = inputs(14, n, c);
      const dw0 = new Rng(6, 6).normalArray(c);
      const acc = await runRmsnorm(ctx, x, w, g, n, c, 1e-6, dw0);
      const fresh = await runRmsnorm(ctx, x, w, g, n, c, 1e-6);
      assertClose(acc.dw, fresh.dw.map((v, i) => v + dw0[i]), TOL, 'rmsnorm dweight accumulate');
      const again = await runRmsnorm(ctx, x, w, g, n, c, 1e-6);
      for (const k of ['out', 'rstd', 'dinp', 'dw'] as const) assert.strictEqual(firstBitDiff(fresh[k], again[k]), -1, k);
    },
  },
  {
    name: 'layernorm/rmsnorm: more rows than one grid dimension holds (N = 70 000, a 2-D grid) match the reference',
    async fn(ctx) {
      const [n, c] = [70_000, 3];
      const { x, w, b, g } = inputs(15, n, c);
      const ln = await runLayernorm(ctx, x, w, b, g, n, c, 1e-5);
      const out = new Float32Array(n * c), mean = new Float32Array(n), rstd = new Float32Array(n);
      const dinp = new Float32Array(n * c), dw = new Float32Array(c), db = new Float32Array(c);
      layernormForwardRef(out, mean, rstd, x, w, b, n, c, 1e-5);
      layernormBackwardRef(dinp, dw, db, g, x, w, mean, rstd, n, c);
      assertClose(ln.out, out, TOL, 'layernorm out vs ref N=70000');
      // With C = 3 some of the 70 000 rows have three nearly equal values: rstd ≫ 1 and the dinp
      // formula cancels, so f32 against the f64 reference is only good to ~3e-5 there.
      assertClose(ln.dinp, dinp, 1e-4, 'layernorm dinp vs ref N=70000');
      assertClose(ln.dw, dw, TOL, 'layernorm dweight vs ref N=70000');
      assertClose(ln.db, db, TOL, 'layernorm dbias vs ref N=70000');
      const rms = await runRmsnorm(ctx, x, w, g, n, c, 1e-6);
      const rOut = new Float32Array(n * c), rRstd = new Float32Array(n), rDinp = new Float32Array(n * c), rDw = new Float32Array(c);
      rmsnormForwardRef(rOut, rRstd, x, w, n, c, 1e-6);
      rmsnormBackwardRef(rDinp, rDw, g, x, w, rRstd, n, c);
      assertClose(rms.out, rOut, TOL, 'rmsnorm out vs ref N=70000');
      assertClose(rms.dinp, rDinp, TOL, 'rmsnorm dinp vs ref N=70000');
      assertClose(rms.dw, rDw, TOL, 'rmsnorm dweight vs ref N=70000');
    },
  },
  {
    name: 'layernorm/rmsnorm: bad shapes, dtypes and a small scratch are refused before dispatch',
    async fn(ctx) {
      const x = empty(ctx, [4, 8], 'f32', 'x'), w = empty(ctx, [8], 'f32', 'w'), w7 = empty(ctx, [7], 'f32', 'w7');
      const out = empty(ctx, [4, 8], 'f32', 'out'), m = empty(ctx, [4], 'f32', 'mean'), r = empty(ctx, [4], 'f32', 'rstd');
      const r3 = empty(ctx, [3], 'f32', 'r3'), xi = empty(ctx, [4, 8], 'i32', 'xi'), small = empty(ctx, [8], 'f32', 'small');
      const rec = new Recorder(ctx);
      assert.throws(() => layernormForward(rec, out, m, r, x, w7, w), ShapeError, /layernorm\.forward: weight must have shape \[8\], got Tensor\(w7: f32\[7\]\)/);
      assert.throws(() => layernormForward(rec, out, m, r3, x, w, w), ShapeError, /layernorm\.forward: rstd \(Tensor\(r3: f32\[3\]\)\) must hold N = 4/);
      assert.throws(() => layernormForward(rec, out, m, r, xi, w, w), ShapeError, /layernorm\.forward: inp \(Tensor\(xi: i32\[4, 8\]\)\) must be f32/);
      assert.throws(() => layernormForward(rec, x, m, r, x, w, w), ShapeError, /must not alias/);
      assert.throws(() => layernormBackward(rec, out, w, w7, x, x, w, m, r, small), ShapeError, /layernorm\.backward: dbias must have shape \[8\]/);
      const w2 = empty(ctx, [8], 'f32', 'w2'), dx = empty(ctx, [4, 8], 'f32', 'dx');
      const big = empty(ctx, [64], 'f32', 'big');
      assert.throws(() => layernormBackward(rec, dx, w2, small, dx, x, w, m, r, big), ShapeError, /layernorm\.backward: dinp \(Tensor\(dx: f32\[4, 8\]\)\) must not alias dout/);
      const s2 = empty(ctx, [2], 'f32', 's2');
      assert.throws(() => layernormBackward(rec, dx, w2, small, out, x, w, m, r, s2), ShapeError, /layernorm\.backward: scratch \(Tensor\(s2: f32\[2\]\)\) holds 2 elements, needs at least 64/);
      assert.throws(() => rmsnormForward(rec, out, r, x, w7), ShapeError, /rmsnorm\.forward: weight must have shape \[8\]/);
      assert.throws(() => rmsnormBackward(rec, dx, w2, out, x, w, r, s2), ShapeError, /rmsnorm\.backward: scratch .* needs at least 32/);
      assert.throws(() => rmsnormBackward(rec, dx, w2, xi, x, w, r, small), ShapeError, /rmsnorm\.backward: dout .* must be f32/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(x, w, w7, out, m, r, r3, xi, small, w2, dx, s2, big);
    },
  },
  {
    name: 'norm: largest errors (printed for the report) stay within tolerance',
    async fn() {
      reportErrors('norm');
      for (const [k, v] of maxErrors) if (k.includes('norm')) assert.isAtMost(v, 1e-4, k);
    },
  },
];
