/**
 * RoPE cases (kernels/rope.wgsl), run by both GPU suites: the forward vs the CPU reference and vs
 * tfjs (Hugging Face rotate_half), the backward vs tf.grad of Σ RoPE(x)∘G, for q- and k-shaped
 * tensors, θ bases 1e4 and 1e6 and positions that restart per packed sequence; large positions
 * (range reduction before sin / cos); in place = out of place; bitwise reruns; typed errors.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { ropeBackward, ropeForward } from '../../../src/ops/rope.ts';
import { ropeRef } from '../../../src/ops/rope.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { relL2 } from '../../reference/tf.ts';
import { tfRope } from '../attention_oracle.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { tensorMaker } from './helpers.ts';

const OWNER = 'rope-case';
const TOL = 1e-5;

type Shape = [number, number, number, number];

interface RopeRun {
  y: Float32Array;
  dx: Float32Array;
  inPlace: Float32Array;
}

/** Forward, backward (of g) and the in-place forward, in one submission. */
async function runRope(ctx: GpuContext, x: Float32Array, g: Float32Array, shape: Shape, positions: Int32Array, base: number): Promise<RopeRun> {
  const opts = { owner: OWNER };
  const tx = tensorFrom(ctx, x, shape, opts), tg = tensorFrom(ctx, g, shape, opts);
  const tp = tensorFrom(ctx, positions, [shape[0], shape[1]], opts);
  const y = emptyTensor(ctx, shape, 'f32', opts), dx = emptyTensor(ctx, shape, 'f32', opts);
  const rec = new Recorder(ctx, { label: 'rope case' });
  ropeForward(rec, y, tx, tp, { base });
  ropeBackward(rec, dx, tg, tp, { base });
  ropeForward(rec, tx, tx, tp, { base });
  const reads = [y, dx, tx].map((t) => rec.read(t));
  await rec.submit();
  const [ry, rdx, rin] = (await Promise.all(reads)) as Float32Array[];
  for (const t of [tx, tg, tp, y, dx]) t.release();
  return { y: ry, dx: rdx, inPlace: rin };
}

/** Positions per token: packed sequences of the given lengths restart at 0 (the rest repeats). */
function packedPositions(B: number, T: number, runs: number[]): Int32Array {
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    let t = 0;
    for (let r = 0; t < T; r = (r + 1) % runs.length) {
      for (let i = 0; i < runs[r] && t < T; i++) pos[b * T + t++] = i + b;
    }
  }
  return pos;
}

const CASES: { shape: Shape; base: number; runs: number[] }[] = [
  { shape: [2, 7, 3, 8], base: 10000, runs: [3, 4] }, // q-shaped, packed sequences restart
  { shape: [1, 33, 2, 64], base: 1e6, runs: [33] }, // k-shaped, Qwen2's base
  { shape: [3, 5, 1, 128], base: 10000, runs: [2, 100] },
  { shape: [1, 100, 2, 6], base: 500, runs: [100] }, // D not a multiple of 4
];

export const ropeCases: GpuCase[] = [
  {
    name: 'rope: forward vs reference and tfjs rotate_half, backward vs tf.grad (bases 1e4, 1e6; packed positions)',
    async fn(ctx) {
      const rng = new Rng(21, 0);
      for (const { shape, base, runs } of CASES) {
        const n = shape.reduce((a, b) => a * b);
        const x = rng.normalArray(n), g = rng.normalArray(n);
        const positions = packedPositions(shape[0], shape[1], runs);
        const got = await runRope(ctx, x, g, shape, positions, base);
        const tag = `[${shape.join(', ')}] base ${base}`;
        const ref = new Float32Array(n), refBack = new Float32Array(n);
        const dims = { B: shape[0], T: shape[1], H: shape[2], D: shape[3] };
        ropeRef(ref, x, positions, dims, base);
        ropeRef(refBack, g, positions, dims, base, -1);
        const tfr = tfRope(x, shape, positions, base, g);
        assert.isAtMost(relL2(got.y, ref), TOL, `forward vs reference ${tag}`);
        assert.isAtMost(relL2(got.y, tfr.y), TOL, `forward vs tfjs ${tag}`);
        assert.isAtMost(relL2(got.dx, refBack), TOL, `backward vs reference ${tag}`);
        assert.isAtMost(relL2(got.dx, tfr.dx), TOL, `backward vs tf.grad ${tag}`);
        assert.strictEqual(firstBitDiff(got.inPlace, got.y), -1, `in place = out of place ${tag}`);
      }
    },
  },
  {
    name: 'rope: large positions (to 32767) keep f32 accuracy; two runs are bitwise identical',
    async fn(ctx) {
      const shape: Shape = [2, 50, 2, 32];
      const rng = new Rng(22, 0);
      const n = shape.reduce((a, b) => a * b);
      const x = rng.normalArray(n), g = rng.normalArray(n);
      const positions = Int32Array.from({ length: 100 }, (_, i) => (i === 99 ? 32767 : rng.nextInt(32768)));
      const r1 = await runRope(ctx, x, g, shape, positions, 10000);
      const r2 = await runRope(ctx, x, g, shape, positions, 10000);
      const ref = new Float32Array(n);
      ropeRef(ref, x, positions, { B: 2, T: 50, H: 2, D: 32 }, 10000);
      assert.isAtMost(relL2(r1.y, ref), TOL, 'forward vs reference');
      assert.strictEqual(firstBitDiff(r1.y, r2.y), -1, 'forward reruns');
      assert.strictEqual(firstBitDiff(r1.dx, r2.dx), -1, 'backward reruns');
    },
  },
  {
    name: 'rope: odd or oversized head size, wrong dtypes and shapes are refused before anything is recorded',
    async fn(ctx) {
      const { make: f, release } = tensorMaker(ctx);
      const x = f([2, 3, 4, 8], 'f32', 'x'), pos = f([2, 3], 'i32', 'pos');
      const rec = new Recorder(ctx);
      const throws = (fn: () => void, re: RegExp) => assert.throws(fn, ShapeError, re);
      throws(() => ropeForward(rec, f([2, 3, 4, 7]), f([2, 3, 4, 7], 'f32', 'x7'), pos), /rope: unsupported head size D=7 \(x \[2, 3, 4, 7\]\)/);
      throws(() => ropeForward(rec, f([1, 1, 1, 258]), f([1, 1, 1, 258]), f([1, 1], 'i32')), /unsupported head size D=258/);
      throws(() => ropeForward(rec, f([2, 3, 4, 8]), x, f([2, 3], 'f32', 'posf')), /rope: positions .* must be i32, got f32/);
      throws(() => ropeForward(rec, f([2, 3, 4, 8]), x, f([3, 2], 'i32')), /positions \[3, 2\] must be \[B, T\] = \[2, 3\]/);
      throws(() => ropeBackward(rec, f([2, 3, 4, 8], 'i32', 'dxi'), x, pos), /rope: dx .* must be f32, got i32/);
      throws(() => ropeForward(rec, f([2, 3, 8]), x, pos), /out \[2, 3, 8\] must have the shape of x \[2, 3, 4, 8\]/);
      throws(() => ropeForward(rec, f([24, 8]), f([24, 8]), pos), /x \[24, 8\] must be \[B, T, H, D\]/);
      assert.strictEqual(rec.pending, 0, 'nothing was recorded');
      release();
    },
  },
];
