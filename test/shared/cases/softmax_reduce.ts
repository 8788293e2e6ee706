/**
 * Row softmax (forward, backward) and reductions (row sums, whole-tensor sum, global L2 norm),
 * run by both GPU suites: GPU vs the CPU reference and vs tfjs (tf.softmax, tf.grad, tf.sum,
 * tf.norm) on odd shapes, bitwise reproducibility, typed errors.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { globalL2Norm, reduceScratchSize, sumAll, sumRows } from '../../../src/ops/reduce.ts';
import { globalL2NormRef, sumRowsRef } from '../../../src/ops/reduce.ref.ts';
import { softmaxBackward, softmaxForward } from '../../../src/ops/softmax.ts';
import { softmaxBackwardRef, softmaxForwardRef } from '../../../src/ops/softmax.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { relL2, tf } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';

const o = { owner: 'softmax-reduce-case' };
const SOFTMAX_SHAPES: number[][] = [[1, 1], [7, 7], [33, 33], [5, 257], [3, 1000], [2, 4099], [2, 3, 17]];

async function runSoftmax(ctx: GpuContext, x: Float32Array, dy: Float32Array, shape: number[]): Promise<{ y: Float32Array; dx: Float32Array }> {
  const tx = tensorFrom(ctx, x, shape, o);
  const tdy = tensorFrom(ctx, dy, shape, o);
  const y = emptyTensor(ctx, shape, 'f32', o);
  const dx = emptyTensor(ctx, shape, 'f32', o);
  const rec = new Recorder(ctx, { label: 'softmax case' });
  softmaxForward(rec, y, tx);
  softmaxBackward(rec, dx, tdy, y);
  const reads = [rec.read(y), rec.read(dx)];
  await rec.submit();
  const [gy, gdx] = (await Promise.all(reads)) as Float32Array[];
  for (const t of [tx, tdy, y, dx]) t.release();
  return { y: gy, dx: gdx };
}

/** Level-1 + level-2 sums on the GPU: [row sums, total, global norm of [x, ...extra]]. */
async function runReduce(ctx: GpuContext, x: Float32Array, shape: number[], extra: Float32Array[]) {
  const tx = tensorFrom(ctx, x, shape, o);
  const others = extra.map((a) => tensorFrom(ctx, a, [a.length], o));
  const rows = emptyTensor(ctx, shape.length === 1 ? [1] : shape.slice(0, -1), 'f32', o);
  const total = emptyTensor(ctx, [1], 'f32', o);
  const norm = emptyTensor(ctx, [1], 'f32', o);
  const scratch = emptyTensor(ctx, [reduceScratchSize(x.length, ...extra.map((a) => a.length))], 'f32', o);
  const rec = new Recorder(ctx, { label: 'reduce case' });
  sumRows(rec, rows, tx);
  sumAll(rec, total, tx, scratch);
  globalL2Norm(rec, norm, [tx, ...others], scratch);
  const reads = [rec.read(rows), rec.read(total), rec.read(norm)];
  await rec.submit();
  const [r, t, n] = (await Promise.all(reads)) as Float32Array[];
  for (const tt of [tx, ...others, rows, total, norm, scratch]) tt.release();
  return { rows: r, total: t[0], norm: n[0] };
}

export const softmaxReduceCases: GpuCase[] = [
  {
    name: 'softmax: forward and backward match the reference and tfjs (tf.softmax, tf.grad) on odd shapes',
    async fn(ctx) {
      const rng = new Rng(21, 1);
      let worst = [0, 0];
      for (const shape of SOFTMAX_SHAPES) {
        const size = shape.reduce((a, b) => a * b, 1);
        const c = shape[shape.length - 1];
        const x = rng.normalArray(size, 8); // wide logits: the max subtraction matters
        const dy = rng.normalArray(size);
        const got = await runSoftmax(ctx, x, dy, shape);
        const y = new Float32Array(size);
        const dx = new Float32Array(size);
        softmaxForwardRef(y, x, c);
        softmaxBackwardRef(dx, dy, got.y, c);
        const [tfY, tfDx] = tf.tidy(() => {
          const dyT = tf.tensor(dy, shape);
          const f = (xx: tf.Tensor) => tf.sum(tf.mul(tf.softmax(xx), dyT));
          const xt = tf.tensor(x, shape);
          return [tf.softmax(xt).dataSync() as Float32Array, tf.grad(f)(xt).dataSync() as Float32Array];
        });
        const what = `shape [${shape}]`;
        assert.isAtMost(relL2(got.y, y), 1e-6, `${what}: y vs reference`);
        assert.isAtMost(relL2(got.dx, dx), 1e-6, `${what}: dx vs reference`);
        const e = [relL2(got.y, tfY), relL2(got.dx, tfDx)];
        worst = [Math.max(worst[0], e[0]), Math.max(worst[1], e[1])];
        assert.isAtMost(e[0], 1e-5, `${what}: y vs tf.softmax`);
        assert.isAtMost(e[1], 1e-5, `${what}: dx vs tf.grad`);
      }
      console.log(`softmax worst relL2 vs tfjs: y ${worst[0].toExponential(1)}, dx ${worst[1].toExponential(1)}`);
    },
  },
  {
    name: 'softmax: two runs are bitwise identical; bad input gives typed errors',
    async fn(ctx) {
      const rng = new Rng(22, 1);
      const x = rng.normalArray(9 * 301);
      const dy = rng.normalArray(9 * 301);
      const a = await runSoftmax(ctx, x, dy, [9, 301]);
      const b = await runSoftmax(ctx, x, dy, [9, 301]);
      assert.strictEqual(firstBitDiff(a.y, b.y), -1);
      assert.strictEqual(firstBitDiff(a.dx, b.dx), -1);
      const t = emptyTensor(ctx, [4, 5], 'f32', { ...o, label: 'x' });
      const u = emptyTensor(ctx, [5, 4], 'f32', { ...o, label: 'u' });
      const i = emptyTensor(ctx, [4, 5], 'i32', { ...o, label: 'ids' });
      const rec = new Recorder(ctx);
      assert.throws(() => softmaxForward(rec, u, t), ShapeError, /softmax: y must have shape \[4, 5\], got Tensor\(u: f32\[5, 4\]\)/);
      assert.throws(() => softmaxForward(rec, t, i), ShapeError, /softmax: x \(Tensor\(ids: i32\[4, 5\]\)\) must be f32/);
      assert.throws(() => softmaxForward(rec, t, t), ShapeError, /must not alias/);
      assert.throws(() => softmaxBackward(rec, t, u, t), ShapeError, /softmax: dy must have shape \[4, 5\]/);
      assert.strictEqual(rec.pending, 0);
      for (const tt of [t, u, i]) tt.release();
    },
  },
  {
    name: 'reduce: row sums, total and global L2 norm match the reference and tfjs on odd sizes',
    async fn(ctx) {
      const rng = new Rng(23, 1);
      const cases: [number[], number[]][] = [[[1], []], [[7, 1], [1]], [[33, 7], [7, 33]], [[3, 4099], [4096]], [[101, 999], [4097, 1]]];
      for (const [shape, extraSizes] of cases) {
        const size = shape.reduce((a, b) => a * b, 1);
        const x = rng.normalArray(size);
        const extra = extraSizes.map((n) => rng.normalArray(n, 0.5));
        const got = await runReduce(ctx, x, shape, extra);
        const what = `shape [${shape}] + [${extraSizes}]`;
        const c = shape[shape.length - 1];
        const rows = new Float32Array(size / c);
        sumRowsRef(rows, x, c);
        let abs = 0;
        for (const v of x) abs += Math.abs(v);
        const [tfRows, tfTotal, tfNorm] = tf.tidy(() => {
          const xt = tf.tensor(x, shape);
          const sq = [xt, ...extra.map((a) => tf.tensor1d(a))].map((t) => tf.sum(tf.square(t)));
          return [tf.sum(xt, -1).dataSync(), tf.sum(xt).dataSync()[0], tf.sqrt(tf.addN(sq)).dataSync()[0]];
        });
        assert.isAtMost(relL2(got.rows, rows), 1e-6, `${what}: row sums vs reference`);
        assert.isAtMost(relL2(got.rows, tfRows), 1e-5, `${what}: row sums vs tf.sum`);
        let want = 0;
        for (const v of x) want += v;
        assert.approximately(got.total, want, 1e-6 * abs, `${what}: total vs reference`);
        assert.approximately(got.total, tfTotal as number, 1e-5 * abs, `${what}: total vs tf.sum`);
        const norm = globalL2NormRef([x, ...extra]);
        assert.approximately(got.norm, norm, 1e-6 * norm, `${what}: norm vs reference`);
        assert.approximately(got.norm, tfNorm as number, 1e-5 * norm, `${what}: norm vs tfjs`);
      }
    },
  },
  {
    name: 'reduce: two runs are bitwise identical; bad input gives typed errors',
    async fn(ctx) {
      const rng = new Rng(24, 1);
      const x = rng.normalArray(50_001);
      const extra = [rng.normalArray(4097), rng.normalArray(3)];
      const a = await runReduce(ctx, x, [50_001], extra);
      const b = await runReduce(ctx, x, [50_001], extra);
      assert.strictEqual(firstBitDiff(Float32Array.of(a.total, a.norm, ...a.rows), Float32Array.of(b.total, b.norm, ...b.rows)), -1);
      const t = emptyTensor(ctx, [5000], 'f32', { ...o, label: 'g' });
      const one = emptyTensor(ctx, [1], 'f32', { ...o, label: 'norm' });
      const two = emptyTensor(ctx, [2], 'f32', { ...o, label: 'two' });
      const small = emptyTensor(ctx, [1], 'f32', { ...o, label: 'small' });
      const ids = emptyTensor(ctx, [5], 'i32', { ...o, label: 'ids' });
      const rec = new Recorder(ctx);
      assert.throws(() => globalL2Norm(rec, one, [], small), ShapeError, /reduce: globalL2Norm needs at least one tensor/);
      assert.throws(() => globalL2Norm(rec, one, [t], small), ShapeError, /reduce: scratch \(Tensor\(small: f32\[1\]\)\) holds 1 elements, needs at least 2/);
      assert.throws(() => globalL2Norm(rec, two, [t], two), ShapeError, /reduce: norm must have shape \[1\], got Tensor\(two: f32\[2\]\)/);
      assert.throws(() => sumAll(rec, one, ids, two), ShapeError, /reduce: tensors\[0\] \(Tensor\(ids: i32\[5\]\)\) must be f32/);
      assert.throws(() => sumRows(rec, two, t), ShapeError, /reduce: out must have shape \[1\]/);
      assert.strictEqual(rec.pending, 0);
      for (const tt of [t, one, two, small, ids] as Tensor[]) tt.release();
    },
  },
];
