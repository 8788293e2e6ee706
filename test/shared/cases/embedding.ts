/**
 * Embedding cases (kernels/embedding.wgsl), run by both GPU suites: lookup (with and without a
 * position table) and the scatter-add backward vs the CPU reference (bitwise: both sum a row's
 * tokens in increasing order) and vs tfjs autograd (tf.grad of Σ gather(table, ids)∘G), write and
 * accumulate modes, many repeated ids, ids outside the table, a 32k vocabulary, bitwise-identical
 * reruns, and typed errors.
 */
import { assert } from 'chai';
import { LimitError, ShapeError } from '../../../src/errors.ts';
import { f16ToF32Array, f32ToF16Array } from '../../../src/model/f16.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { embeddingBackward, embeddingForward, embeddingScratchSize } from '../../../src/ops/embedding.ts';
import { embeddingBackwardRef, embeddingForwardRef } from '../../../src/ops/embedding.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { assertClose, empty, releaseAll, run, up } from './helpers.ts';

/** [N tokens, R table rows, C channels]: odd sizes, then a 32k vocabulary with N in the thousands. */
const SHAPES: [number, number, number][] = [[1, 1, 1], [7, 5, 3], [33, 100, 7], [100, 257, 33], [257, 1000, 100], [2000, 32768, 8]];

function randomIds(rng: Rng, n: number, rows: number, distinct = rows): Int32Array {
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = rng.nextInt(Math.min(rows, distinct));
  return ids;
}

interface BwOut { dtable: Float32Array }

async function runBackward(ctx: GpuContext, dout: Float32Array, ids: Int32Array, rows: number, c: number,
  init?: Float32Array): Promise<BwOut> {
  const n = ids.length;
  const tg = up(ctx, dout, [n, c]), ti = up(ctx, ids), dt = init ? up(ctx, init, [rows, c]) : empty(ctx, [rows, c]);
  const scratch = empty(ctx, [embeddingScratchSize(n, rows)], 'u32');
  const [d] = await run(ctx, [dt], (rec) => embeddingBackward(rec, dt, tg, ti, scratch, { accumulate: Boolean(init) }));
  releaseAll(tg, ti, dt, scratch);
  return { dtable: d as Float32Array };
}

function tfGather(table: Float32Array, ids: Int32Array, g: Float32Array, rows: number, c: number) {
  return tf.tidy(() => {
    const T = tf.tensor2d(table, [rows, c]);
    const I = tf.tensor1d(ids, 'int32');
    const G = tf.tensor2d(g, [ids.length, c]);
    const out = tf.gather(T, I).dataSync() as Float32Array;
    const grad = tf.grad((t: tf.Tensor) => tf.gather(t, I).mul(G).sum())(T).dataSync() as Float32Array;
    return { out, grad };
  });
}

export const embeddingCases: GpuCase[] = [
  {
    name: 'embedding: lookup and backward (=) match the CPU reference bitwise and tfjs autograd on odd sizes',
    async fn(ctx) {
      const rng = new Rng(41, 0);
      for (const [n, rows, c] of SHAPES) {
        const table = rng.normalArray(rows * c), g = rng.normalArray(n * c), ids = randomIds(rng, n, rows);
        const tt = up(ctx, table, [rows, c]), ti = up(ctx, ids), out = empty(ctx, [n, c]);
        const [o] = await run(ctx, [out], (rec) => embeddingForward(rec, out, ti, tt)) as Float32Array[];
        releaseAll(tt, ti, out);
        const rOut = new Float32Array(n * c);
        embeddingForwardRef(rOut, ids, table, rows, c);
        const at = `N=${n} R=${rows} C=${c}`;
        assert.strictEqual(firstBitDiff(o, rOut), -1, `forward ${at}`);
        const { dtable } = await runBackward(ctx, g, ids, rows, c);
        const rD = new Float32Array(rows * c);
        embeddingBackwardRef(rD, g, ids, rows, c);
        assert.strictEqual(firstBitDiff(dtable, rD), -1, `backward ${at}`);
        // tfjs's cpu gather gradient costs O(N·R·C) (minutes at the largest shape): oracle on the small ones.
        if (n * rows * c <= 1e6) {
          const t = tfGather(table, ids, g, rows, c);
          assertClose(o, t.out, 0, `embedding out vs tfjs ${at}`);
          assertClose(dtable, t.grad, 1e-6, `embedding dtable vs tfjs ${at}`);
        }
      }
    },
  },
  {
    name: 'embedding: position table forward, its backward through pos, and accumulate (+=) mode',
    async fn(ctx) {
      const rng = new Rng(42, 0);
      const [b, t, v, c] = [3, 37, 300, 19];
      const n = b * t;
      const wte = rng.normalArray(v * c), wpe = rng.normalArray(t * c), g = rng.normalArray(n * c);
      const ids = randomIds(rng, n, v);
      const pos = Int32Array.from({ length: n }, (_, i) => i % t);
      const twte = up(ctx, wte, [v, c]), twpe = up(ctx, wpe, [t, c]), ti = up(ctx, ids, [b, t]), tp = up(ctx, pos, [b, t]);
      const out = empty(ctx, [b, t, c]);
      const [o] = await run(ctx, [out], (rec) => embeddingForward(rec, out, ti, twte, { wpe: twpe, pos: tp })) as Float32Array[];
      releaseAll(twte, twpe, ti, tp, out);
      const rOut = new Float32Array(n * c);
      embeddingForwardRef(rOut, ids, wte, v, c, wpe, pos, t);
      assert.strictEqual(firstBitDiff(o, rOut), -1, 'forward with positions');
      const tOut = tf.tidy(() => tf.gather(tf.tensor2d(wte, [v, c]), tf.tensor1d(ids, 'int32'))
        .add(tf.gather(tf.tensor2d(wpe, [t, c]), tf.tensor1d(pos, 'int32'))).dataSync() as Float32Array);
      assertClose(o, tOut, 0, 'embedding out with positions vs tfjs');
      // dwpe through the same scatter-add, keyed by positions.
      const { dtable: dwpe } = await runBackward(ctx, g, pos, t, c);
      assertClose(dwpe, tfGather(wpe, pos, g, t, c).grad, 1e-6, 'embedding dwpe vs tfjs');
      // += leaves rows without tokens untouched and adds to the others.
      const init = rng.normalArray(v * c);
      const few = randomIds(rng, n, v, 20);
      const { dtable: acc } = await runBackward(ctx, g, few, v, c, init);
      const rAcc = init.slice();
      embeddingBackwardRef(rAcc, g, few, v, c, true);
      assert.strictEqual(firstBitDiff(acc, rAcc), -1, 'accumulate vs reference');
      assert.strictEqual(acc[(v - 1) * c], init[(v - 1) * c], 'a row without tokens is untouched');
    },
  },
  {
    name: 'embedding: many repeated ids and ids outside the table — bitwise reference, bitwise reruns',
    async fn(ctx) {
      const rng = new Rng(43, 0);
      const [n, rows, c] = [1500, 4000, 24];
      const g = rng.normalArray(n * c);
      const cases: [string, Int32Array][] = [
        ['all the same id', new Int32Array(n).fill(7)],
        ['three ids', randomIds(rng, n, rows, 3)],
        ['runs and strays', Int32Array.from({ length: n }, (_, i) => (i % 97 === 0 ? -1 : i % 89 === 0 ? rows : (i >> 4) % 50))],
      ];
      for (const [label, ids] of cases) {
        const first = await runBackward(ctx, g, ids, rows, c);
        const second = await runBackward(ctx, g, ids, rows, c);
        assert.strictEqual(firstBitDiff(first.dtable, second.dtable), -1, `rerun: ${label}`);
        const rD = new Float32Array(rows * c);
        embeddingBackwardRef(rD, g, ids, rows, c);
        assert.strictEqual(firstBitDiff(first.dtable, rD), -1, `reference: ${label}`);
      }
      // Out-of-range ids look up zeros.
      const table = rng.normalArray(rows * c);
      const ids = Int32Array.of(-1, 0, rows, rows - 1);
      const tt = up(ctx, table, [rows, c]), ti = up(ctx, ids), out = empty(ctx, [4, c]);
      const [o] = await run(ctx, [out], (rec) => embeddingForward(rec, out, ti, tt)) as Float32Array[];
      releaseAll(tt, ti, out);
      assert.deepEqual([...o.subarray(0, c)], new Array(c).fill(0));
      assert.deepEqual([...o.subarray(2 * c, 3 * c)], new Array(c).fill(0));
      assert.deepEqual([...o.subarray(c, 2 * c)], [...table.subarray(0, c)]);
    },
  },
  {
    name: 'embedding: f16 tables (frozen weights, the embedding_f16 variant of kernels/embedding.wgsl) give their exact f32 values; refused without shader-f16',
    async fn(ctx) {
      const rng = new Rng(44, 0);
      const [n, v, t, c] = [57, 301, 19, 33];
      const wte = f32ToF16Array(rng.normalArray(v * c)), wpe = f32ToF16Array(rng.normalArray(t * c));
      const ids = randomIds(rng, n, v), pos = Int32Array.from({ length: n }, (_, i) => i % t);
      const twte = up(ctx, wte, [v, c]), twpe = up(ctx, wpe, [t, c]), ti = up(ctx, ids), tp = up(ctx, pos), out = empty(ctx, [n, c]);
      if (!ctx.hasF16) {
        assert.throws(() => embeddingForward(new Recorder(ctx), out, ti, twte), LimitError, /embedding\.forward: table .* is f16 but the device has no shader-f16/);
      } else {
        const [o] = await run(ctx, [out], (rec) => embeddingForward(rec, out, ti, twte, { wpe: twpe, pos: tp })) as Float32Array[];
        const want = new Float32Array(n * c);
        embeddingForwardRef(want, ids, f16ToF32Array(wte), v, c, f16ToF32Array(wpe), pos, t);
        assert.strictEqual(firstBitDiff(o, want), -1);
      }
      releaseAll(twte, twpe, ti, tp, out);
    },
  },
  {
    name: 'embedding: on llvmpipe, shapes past its per-invocation loop limit are refused with a LimitError',
    async fn(ctx) {
      // Mesa's llvmpipe ends loops silently after 65535 iterations per invocation; building the
      // index of 40000 tokens takes ~80000 in one thread, so the wrapper refuses it there.
      const n = 40_000;
      const ids = empty(ctx, [n], 'i32', 'ids'), dout = empty(ctx, [n, 1], 'f32', 'dout'), d = empty(ctx, [10, 1], 'f32', 'dt');
      const scratch = empty(ctx, [embeddingScratchSize(n, 10)], 'u32', 'scratch');
      const rec = new Recorder(ctx);
      if (ctx.kind === 'llvmpipe') {
        assert.throws(() => embeddingBackward(rec, d, dout, ids, scratch), LimitError, /embedding\.backward: the index of ids .* over llvmpipe's limit of 65535/);
        assert.strictEqual(rec.pending, 0);
      } else {
        embeddingBackward(rec, d, dout, ids, scratch);
        assert.strictEqual(rec.pending, 2);
      }
      releaseAll(ids, dout, d, scratch);
    },
  },
  {
    name: 'embedding: bad shapes, dtypes and a small scratch are refused before dispatch',
    async fn(ctx) {
      const table = empty(ctx, [10, 4], 'f32', 'wte'), ids = empty(ctx, [2, 3], 'i32', 'ids'), fids = empty(ctx, [6], 'f32', 'fids');
      const out = empty(ctx, [2, 3, 4], 'f32', 'out'), bad = empty(ctx, [6, 5], 'f32', 'bad'), wpe = empty(ctx, [3, 5], 'f32', 'wpe');
      const small = empty(ctx, [5], 'u32', 'small'), fscr = empty(ctx, [64], 'f32', 'fscr'), scr = empty(ctx, [64], 'u32', 'scr');
      const rec = new Recorder(ctx);
      assert.throws(() => embeddingForward(rec, out, fids, table), ShapeError, /embedding\.forward: ids \(Tensor\(fids: f32\[6\]\)\) must be i32/);
      assert.throws(() => embeddingForward(rec, bad, ids, table), ShapeError, /embedding\.forward: out \(Tensor\(bad: f32\[6, 5\]\)\) must be \[\.\.\., 4\] with N = 6 rows for ids Tensor\(ids: i32\[2, 3\]\)/);
      assert.throws(() => embeddingForward(rec, out, ids, table, { wpe, pos: ids }), ShapeError, /embedding\.forward: wpe .* must have C = 4/);
      assert.throws(() => embeddingBackward(rec, table, out, ids, small), ShapeError, /embedding\.backward: scratch \(Tensor\(small: u32\[5\]\)\) holds 5 elements, needs at least 34/);
      assert.throws(() => embeddingBackward(rec, table, out, ids, fscr), ShapeError, /embedding\.backward: scratch .* must be u32/);
      assert.throws(() => embeddingBackward(rec, table, bad, ids, scr), ShapeError, /embedding\.backward: dout .* must be \[\.\.\., 4\]/);
      const d = empty(ctx, [6, 4], 'f32', 'd');
      assert.throws(() => embeddingBackward(rec, d, d, ids, scr), ShapeError, /embedding\.backward: dtable \(Tensor\(d: f32\[6, 4\]\)\) must not alias dout/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(table, ids, fids, out, bad, wpe, small, fscr, scr, d);
    },
  },
];
