/**
 * GELU (tanh) and SwiGLU cases (kernels/gelu.wgsl, kernels/swiglu.wgsl), run by both GPU suites:
 * GPU vs the CPU reference and vs tfjs autograd (values and gradients) on odd sizes including
 * large |x|, bitwise-identical reruns, and typed errors for bad input.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { geluBackward, geluForward } from '../../../src/ops/gelu.ts';
import { geluBackwardRef, geluForwardRef } from '../../../src/ops/gelu.ref.ts';
import { type GateActivation, swigluBackward, swigluForward } from '../../../src/ops/swiglu.ts';
import { swigluBackwardRef, swigluForwardRef } from '../../../src/ops/swiglu.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import type { GpuCase } from '../register.ts';
import { firstBitDiff } from '../gpu.ts';
import { assertClose, empty, maxErrors, releaseAll, reportErrors, run, up } from './helpers.ts';

const SIZES = [1, 7, 33, 100, 257, 4099, 70_001];
const TOL = 1e-5;
const S = Math.sqrt(2 / Math.PI);

/** Normal inputs with a wide spread, plus extreme values where tanh/exp saturate. */
function wide(rng: Rng, n: number): Float32Array {
  const x = rng.normalArray(n, 3);
  const extremes = [-100, -20, -9, 9, 20, 100, 0];
  for (let i = 0; i < Math.min(n, extremes.length); i++) x[(i * 7919) % n] = extremes[i];
  return x;
}

async function runGelu(ctx: GpuContext, x: Float32Array, g: Float32Array): Promise<Float32Array[]> {
  const tx = up(ctx, x), tg = up(ctx, g), out = empty(ctx, [x.length]), dx = empty(ctx, [x.length]);
  const r = await run(ctx, [out, dx], (rec) => {
    geluForward(rec, out, tx);
    geluBackward(rec, dx, tx, tg);
  }) as Float32Array[];
  releaseAll(tx, tg, out, dx);
  return r;
}

async function runSwiglu(ctx: GpuContext, gate: Float32Array, u: Float32Array, g: Float32Array, shape: number[], act: GateActivation = 'silu'): Promise<Float32Array[]> {
  const tgate = up(ctx, gate, shape), tu = up(ctx, u, shape), tg = up(ctx, g, shape);
  const out = empty(ctx, shape), dgate = empty(ctx, shape), dup = empty(ctx, shape);
  const r = await run(ctx, [out, dgate, dup], (rec) => {
    swigluForward(rec, out, tgate, tu, { act });
    swigluBackward(rec, dgate, dup, tg, tgate, tu, { act });
  }) as Float32Array[];
  releaseAll(tgate, tu, tg, out, dgate, dup);
  return r;
}

export const activationCases: GpuCase[] = [
  {
    name: 'gelu: forward and backward match the CPU reference and tfjs autograd on odd sizes',
    async fn(ctx) {
      const rng = new Rng(21, 0);
      for (const n of SIZES) {
        const x = wide(rng, n), g = rng.normalArray(n);
        const [out, dx] = await runGelu(ctx, x, g);
        const rOut = new Float32Array(n), rDx = new Float32Array(n);
        geluForwardRef(rOut, x);
        geluBackwardRef(rDx, x, g);
        assertClose(out, rOut, TOL, `gelu out vs ref n=${n}`);
        assertClose(dx, rDx, TOL, `gelu dinp vs ref n=${n}`);
        assert.isTrue(out.every(Number.isFinite) && dx.every(Number.isFinite), 'finite at extreme inputs');
        const [tOut, tDx] = tf.tidy(() => {
          const f = (t: tf.Tensor) => t.mul(0.5).mul(tf.tanh(t.add(t.pow(3).mul(0.044715)).mul(S)).add(1));
          const xt = tf.tensor1d(x);
          const G = tf.tensor1d(g);
          return [f(xt).dataSync() as Float32Array, tf.grad((t: tf.Tensor) => f(t).mul(G).sum())(xt).dataSync() as Float32Array];
        });
        assertClose(out, tOut, TOL, `gelu out vs tfjs n=${n}`);
        assertClose(dx, tDx, TOL, `gelu dinp vs tfjs n=${n}`);
      }
    },
  },
  {
    name: 'swiglu: forward and backward match the CPU reference and tfjs autograd on odd shapes',
    async fn(ctx) {
      const rng = new Rng(22, 0);
      for (const shape of [[1, 1], [7, 1], [3, 11], [4, 257], [33, 100], [5, 4099]]) {
        const n = shape[0] * shape[1];
        const gate = wide(rng, n), u = rng.normalArray(n), g = rng.normalArray(n);
        const [out, dgate, dup] = await runSwiglu(ctx, gate, u, g, shape);
        const rOut = new Float32Array(n), rDg = new Float32Array(n), rDu = new Float32Array(n);
        swigluForwardRef(rOut, gate, u);
        swigluBackwardRef(rDg, rDu, g, gate, u);
        const at = `N=${shape[0]} F=${shape[1]}`;
        assertClose(out, rOut, TOL, `swiglu out vs ref ${at}`);
        assertClose(dgate, rDg, TOL, `swiglu dgate vs ref ${at}`);
        assertClose(dup, rDu, TOL, `swiglu dup vs ref ${at}`);
        const t = tf.tidy(() => {
          const f = (a: tf.Tensor, b: tf.Tensor) => a.mul(tf.sigmoid(a)).mul(b);
          const at2 = tf.tensor2d(gate, shape as [number, number]), bt = tf.tensor2d(u, shape as [number, number]);
          const G = tf.tensor2d(g, shape as [number, number]);
          const grads = tf.grads((a: tf.Tensor, b: tf.Tensor) => f(a, b).mul(G).sum())([at2, bt]);
          return [f(at2, bt), ...grads].map((x) => x.dataSync() as Float32Array);
        });
        assertClose(out, t[0], TOL, `swiglu out vs tfjs ${at}`);
        assertClose(dgate, t[1], TOL, `swiglu dgate vs tfjs ${at}`);
        assertClose(dup, t[2], TOL, `swiglu dup vs tfjs ${at}`);
      }
    },
  },
  {
    name: "geglu (swiglu with act 'gelu', Gemma 3): forward and backward match the CPU reference and tfjs autograd on odd shapes",
    async fn(ctx) {
      const rng = new Rng(24, 0);
      for (const shape of [[1, 1], [3, 11], [33, 100], [5, 4099]]) {
        const n = shape[0] * shape[1];
        const gate = wide(rng, n), u = rng.normalArray(n), g = rng.normalArray(n);
        const [out, dgate, dup] = await runSwiglu(ctx, gate, u, g, shape, 'gelu');
        const rOut = new Float32Array(n), rDg = new Float32Array(n), rDu = new Float32Array(n);
        swigluForwardRef(rOut, gate, u, 'gelu');
        swigluBackwardRef(rDg, rDu, g, gate, u, 'gelu');
        const at = `N=${shape[0]} F=${shape[1]}`;
        assertClose(out, rOut, TOL, `geglu out vs ref ${at}`);
        assertClose(dgate, rDg, TOL, `geglu dgate vs ref ${at}`);
        assertClose(dup, rDu, TOL, `geglu dup vs ref ${at}`);
        const t = tf.tidy(() => {
          const gelu = (a: tf.Tensor) => a.mul(0.5).mul(tf.tanh(a.add(a.pow(3).mul(0.044715)).mul(S)).add(1));
          const f = (a: tf.Tensor, b: tf.Tensor) => gelu(a).mul(b);
          const at2 = tf.tensor2d(gate, shape as [number, number]), bt = tf.tensor2d(u, shape as [number, number]);
          const G = tf.tensor2d(g, shape as [number, number]);
          const grads = tf.grads((a: tf.Tensor, b: tf.Tensor) => f(a, b).mul(G).sum())([at2, bt]);
          return [f(at2, bt), ...grads].map((x) => x.dataSync() as Float32Array);
        });
        assertClose(out, t[0], TOL, `geglu out vs tfjs ${at}`);
        assertClose(dgate, t[1], TOL, `geglu dgate vs tfjs ${at}`);
        assertClose(dup, t[2], TOL, `geglu dup vs tfjs ${at}`);
      }
    },
  },
  {
    name: 'gelu/swiglu: two runs give bitwise-identical output',
    async fn(ctx) {
      const rng = new Rng(23, 0);
      const n = 5000;
      const x = wide(rng, n), u = rng.normalArray(n), g = rng.normalArray(n);
      const a = await runGelu(ctx, x, g), b = await runGelu(ctx, x, g);
      a.forEach((v, i) => assert.strictEqual(firstBitDiff(v, b[i]), -1, `gelu output ${i}`));
      const c = await runSwiglu(ctx, x, u, g, [50, 100]), d = await runSwiglu(ctx, x, u, g, [50, 100]);
      c.forEach((v, i) => assert.strictEqual(firstBitDiff(v, d[i]), -1, `swiglu output ${i}`));
    },
  },
  {
    name: 'gelu/swiglu: mismatched shapes, wrong dtypes and aliasing are refused before dispatch',
    async fn(ctx) {
      const a = empty(ctx, [3, 4], 'f32', 'a'), b = empty(ctx, [4, 3], 'f32', 'b'), c = empty(ctx, [3, 4], 'f32', 'c');
      const i = empty(ctx, [3, 4], 'i32', 'ids');
      const rec = new Recorder(ctx);
      assert.throws(() => geluForward(rec, b, a), ShapeError, /gelu\.forward: shapes differ: out \[4, 3\], inp \[3, 4\]/);
      assert.throws(() => geluBackward(rec, c, a, i), ShapeError, /gelu\.backward: dout \(Tensor\(ids: i32\[3, 4\]\)\) must be f32/);
      assert.throws(() => geluForward(rec, a, a), ShapeError, /gelu\.forward: out .* must not alias inp/);
      assert.throws(() => swigluForward(rec, c, a, b), ShapeError, /swiglu\.forward: shapes differ: out \[3, 4\], gate \[3, 4\], up \[4, 3\]/);
      assert.throws(() => swigluBackward(rec, c, c, a, a, a), ShapeError, /swiglu\.backward: dgate .* must not alias dup/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(a, b, c, i);
    },
  },
  {
    name: 'activation: largest errors (printed for the report) stay within tolerance',
    async fn() {
      reportErrors('activation');
      for (const [k, v] of maxErrors) if (/gelu|swiglu/.test(k)) assert.isAtMost(v, TOL, k);
    },
  },
];
