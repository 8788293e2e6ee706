/**
 * Residual add-and-scale cases (kernels/residual.wgsl), run by both GPU suites: GPU vs the CPU
 * reference (bitwise at s = 1) and vs tfjs (value and, through `scaleInPlace`, the gradient with
 * respect to b), the in-place forms, bitwise-identical reruns, and typed errors.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { residualAdd, residualAddInPlace, scaleInPlace } from '../../../src/ops/residual.ts';
import { residualAddInPlaceRef, residualAddRef, scaleInPlaceRef } from '../../../src/ops/residual.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import type { GpuCase } from '../register.ts';
import { firstBitDiff } from '../gpu.ts';
import { assertClose, empty, releaseAll, run, up } from './helpers.ts';

const SIZES = [1, 7, 33, 100, 257, 4099, 100_003];

export const residualCases: GpuCase[] = [
  {
    name: 'residual: add, in-place add and scale match the CPU reference (bitwise at s = 1) on odd sizes',
    async fn(ctx) {
      const rng = new Rng(31, 0);
      for (const n of SIZES) {
        for (const s of [1, 0.37, -2.5]) {
          const a = rng.normalArray(n), b = rng.normalArray(n);
          const ta = up(ctx, a), tb = up(ctx, b), out = empty(ctx, [n]), acc = up(ctx, a), x = up(ctx, b);
          const [gOut, gAcc, gX] = await run(ctx, [out, acc, x], (rec) => {
            residualAdd(rec, out, ta, tb, s);
            residualAddInPlace(rec, acc, tb, s);
            scaleInPlace(rec, x, s);
          }) as Float32Array[];
          releaseAll(ta, tb, out, acc, x);
          const rOut = new Float32Array(n), rAcc = a.slice(), rX = b.slice();
          residualAddRef(rOut, a, b, s);
          residualAddInPlaceRef(rAcc, b, s);
          scaleInPlaceRef(rX, s);
          const at = `n=${n} s=${s}`;
          assert.strictEqual(firstBitDiff(gX, rX), -1, `scale ${at}`);
          if (s === 1) {
            assert.strictEqual(firstBitDiff(gOut, rOut), -1, `add ${at}`);
            assert.strictEqual(firstBitDiff(gAcc, rAcc), -1, `accumulate ${at}`);
          } else {
            // A fused multiply-add on the adapter may round once instead of twice.
            assertClose(gOut, rOut, 1e-6, `residual add vs ref ${at}`);
            assertClose(gAcc, rAcc, 1e-6, `residual accumulate vs ref ${at}`);
          }
        }
      }
    },
  },
  {
    name: 'residual: value and gradients match tfjs autograd (da = dout, db = s·dout via scaleInPlace)',
    async fn(ctx) {
      const rng = new Rng(32, 0);
      for (const n of [33, 257, 4099]) {
        const s = 0.61;
        const a = rng.normalArray(n), b = rng.normalArray(n), g = rng.normalArray(n);
        const ta = up(ctx, a), tb = up(ctx, b), out = empty(ctx, [n]), db = up(ctx, g);
        const [gOut, gDb] = await run(ctx, [out, db], (rec) => {
          residualAdd(rec, out, ta, tb, s);
          scaleInPlace(rec, db, s);
        }) as Float32Array[];
        releaseAll(ta, tb, out, db);
        const t = tf.tidy(() => {
          const G = tf.tensor1d(g);
          const f = (x: tf.Tensor, y: tf.Tensor) => x.add(y.mul(s));
          const args = [tf.tensor1d(a), tf.tensor1d(b)];
          const grads = tf.grads((x: tf.Tensor, y: tf.Tensor) => f(x, y).mul(G).sum())(args);
          return [f(args[0], args[1]), ...grads].map((v) => v.dataSync() as Float32Array);
        });
        assertClose(gOut, t[0], 1e-6, `residual out vs tfjs n=${n}`);
        assertClose(g, t[1], 0, `residual da vs tfjs n=${n}`);
        assertClose(gDb, t[2], 1e-6, `residual db vs tfjs n=${n}`);
      }
    },
  },
  {
    name: 'residual: two runs give bitwise-identical output',
    async fn(ctx) {
      const rng = new Rng(33, 0);
      const n = 5000, a = rng.normalArray(n), b = rng.normalArray(n);
      const once = async () => {
        const ta = up(ctx, a), tb = up(ctx, b), out = empty(ctx, [n]), acc = up(ctx, a);
        const r = await run(ctx, [out, acc], (rec) => {
          residualAdd(rec, out, ta, tb, 0.3);
          residualAddInPlace(rec, acc, tb, 0.3);
          scaleInPlace(rec, acc, 1.7);
        });
        releaseAll(ta, tb, out, acc);
        return r;
      };
      const r1 = await once(), r2 = await once();
      r1.forEach((v, i) => assert.strictEqual(firstBitDiff(v, r2[i]), -1, `output ${i}`));
    },
  },
  {
    name: 'residual: mismatched shapes, wrong dtypes and aliasing are refused before dispatch',
    async fn(ctx) {
      const a = empty(ctx, [3, 4], 'f32', 'a'), b = empty(ctx, [12], 'f32', 'b'), c = empty(ctx, [3, 4], 'f32', 'c');
      const i = empty(ctx, [3, 4], 'i32', 'ids');
      const rec = new Recorder(ctx);
      assert.throws(() => residualAdd(rec, c, a, b), ShapeError, /residual\.add: shapes differ: out \[3, 4\], a \[3, 4\], b \[12\]/);
      assert.throws(() => residualAdd(rec, a, a, c), ShapeError, /residual\.add: out .* must not alias a/);
      assert.throws(() => residualAddInPlace(rec, a, a), ShapeError, /residual\.accumulate: acc .* must not alias b/);
      assert.throws(() => residualAddInPlace(rec, a, i), ShapeError, /residual\.accumulate: b \(Tensor\(ids: i32\[3, 4\]\)\) must be f32/);
      assert.throws(() => scaleInPlace(rec, i, 2), ShapeError, /residual\.scale: x .* must be f32/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(a, b, c, i);
    },
  },
];
