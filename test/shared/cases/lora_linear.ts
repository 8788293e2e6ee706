/**
 * LoRA linear cases (src/ops/lora_linear.ts on kernels/matmul*.wgsl and kernels/lora_linear.wgsl),
 * run by both GPU suites: forward (y and the saved u) and every gradient (dx, dA, dB, dW, db) vs the
 * CPU reference and vs tfjs autograd (tf.grads of Σ y·G), ranks 1, 7, 64 on odd shapes including
 * one row, an f16 base W where shader-f16 exists, accumulate modes, bitwise-identical reruns,
 * texture-read matmuls bitwise equal to buffer-read ones,
 * and typed errors naming the kernel and the shapes.
 */
import { assert } from 'chai';
import { ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import type { Tensor } from '../../../src/gpu/tensor.ts';
import type { MatmulConfig } from '../../../src/ops/matmul.ts';
import { loraLinearBackward, loraLinearForward } from '../../../src/ops/lora_linear.ts';
import { type LoraRefDims, loraLinearBackwardRef, loraLinearForwardRef } from '../../../src/ops/lora_linear.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { assertClose, empty, releaseAll, run, up } from './helpers.ts';
import { configs, ODD_TILED, toF16 } from './matmul_helpers.ts';

/** [N, In, Out, R] */
/** [N, In, Out, R]: one row, odd sizes (scalar loads), multiples of 4 (4-wide loads); the last two share pipelines. */
const SHAPES: [number, number, number, number][] = [[1, 7, 5, 1], [9, 33, 17, 7], [33, 36, 20, 64], [100, 64, 48, 8]];
const TOL_REF = 2e-6;
const TOL_TF = 1e-5;
const ALPHA = 16;

interface Inputs { x: Float32Array; w: Float32Array; a: Float32Array; b: Float32Array; bias: Float32Array; dy: Float32Array }
interface Outputs { y: Float32Array; u: Float32Array; dx: Float32Array; dA: Float32Array; dB: Float32Array; dW: Float32Array; db: Float32Array }

function inputs(seed: number, d: LoraRefDims): Inputs {
  const rng = new Rng(seed, d.N * 1_000_003 + d.In * 1009 + d.Out * 31 + d.R);
  const s = (n: number, scale = 1) => rng.normalArray(n, scale);
  return { x: s(d.N * d.In), w: s(d.Out * d.In, 0.2), a: s(d.R * d.In, 0.2), b: s(d.Out * d.R, 0.2), bias: s(d.Out), dy: s(d.N * d.Out) };
}

/** Forward then backward in one recording; `wBits` stores W as f16. */
async function gpuLora(ctx: GpuContext, d: LoraRefDims, v: Inputs, cfg: MatmulConfig, opts: { wBits?: Uint16Array; init?: Outputs; xShape?: number[] } = {}): Promise<Outputs> {
  const { N, In, Out, R } = d;
  const x = up(ctx, v.x, opts.xShape ?? [N, In], 'x'), w = up(ctx, opts.wBits ?? v.w, [Out, In], 'w');
  const a = up(ctx, v.a, [R, In], 'lora_a'), b = up(ctx, v.b, [Out, R], 'lora_b'), bias = up(ctx, v.bias, [Out], 'bias');
  const dy = up(ctx, v.dy, [...(opts.xShape ?? [N, In]).slice(0, -1), Out], 'dy');
  const y = empty(ctx, dy.shape, 'f32', 'y'), u = empty(ctx, [N, R], 'f32', 'u');
  const g = opts.init;
  const dx = g ? up(ctx, g.dx, x.shape, 'dx') : empty(ctx, x.shape, 'f32', 'dx');
  const dA = g ? up(ctx, g.dA, [R, In], 'dA') : empty(ctx, [R, In], 'f32', 'dA');
  const dB = g ? up(ctx, g.dB, [Out, R], 'dB') : empty(ctx, [Out, R], 'f32', 'dB');
  const dW = g ? up(ctx, g.dW, [Out, In], 'dW') : empty(ctx, [Out, In], 'f32', 'dW');
  const db = g ? up(ctx, g.db, [Out], 'db') : empty(ctx, [Out], 'f32', 'db');
  const r = await run<Float32Array>(ctx, [y, u, dx, dA, dB, dW, db], (rec) => {
    loraLinearForward(rec, y, u, x, w, a, b, { alpha: ALPHA, bias, config: cfg });
    loraLinearBackward(rec, dx, dA, dB, dW, db, dy, x, u, w, a, b, { alpha: ALPHA, config: cfg, accumulate: Boolean(g), accumulateDx: Boolean(g) });
  });
  releaseAll(x, w, a, b, bias, dy, y, u, dx, dA, dB, dW, db);
  return { y: r[0], u: r[1], dx: r[2], dA: r[3], dB: r[4], dW: r[5], db: r[6] };
}

function refLora(d: LoraRefDims, v: Inputs, w = v.w): Outputs {
  const o: Outputs = {
    y: new Float32Array(d.N * d.Out), u: new Float32Array(d.N * d.R), dx: new Float32Array(d.N * d.In),
    dA: new Float32Array(d.R * d.In), dB: new Float32Array(d.Out * d.R), dW: new Float32Array(d.Out * d.In), db: new Float32Array(d.Out),
  };
  loraLinearForwardRef(o.y, o.u, v.x, w, v.a, v.b, v.bias, d, ALPHA);
  loraLinearBackwardRef(o, v.dy, v.x, o.u, w, v.a, v.b, d, ALPHA);
  return o;
}

/** tfjs autograd of L = Σ y·dy with y = x·Wᵀ + bias + (α/R)·(x·Aᵀ)·Bᵀ. */
function tfLora(d: LoraRefDims, v: Inputs, wv = v.w): Outputs {
  return tf.tidy(() => {
    const { N, In, Out, R } = d;
    const G = tf.tensor2d(v.dy, [N, Out]);
    const f = (x: tf.Tensor, w: tf.Tensor, bias: tf.Tensor, a: tf.Tensor, b: tf.Tensor) =>
      tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D, false, true).add(bias)
        .add(tf.matMul(tf.matMul(x as tf.Tensor2D, a as tf.Tensor2D, false, true), b as tf.Tensor2D, false, true).mul(ALPHA / R));
    const args = [tf.tensor2d(v.x, [N, In]), tf.tensor2d(wv, [Out, In]), tf.tensor1d(v.bias), tf.tensor2d(v.a, [R, In]), tf.tensor2d(v.b, [Out, R])];
    const y = f(args[0], args[1], args[2], args[3], args[4]).dataSync() as Float32Array;
    const u = tf.matMul(args[0] as tf.Tensor2D, args[3] as tf.Tensor2D, false, true).dataSync() as Float32Array;
    const gr = tf.grads((x: tf.Tensor, w: tf.Tensor, bias: tf.Tensor, a: tf.Tensor, b: tf.Tensor) => f(x, w, bias, a, b).mul(G).sum())(args)
      .map((t) => t.dataSync() as Float32Array);
    return { y, u, dx: gr[0], dW: gr[1], db: gr[2], dA: gr[3], dB: gr[4] };
  });
}

const KEYS = ['y', 'u', 'dx', 'dA', 'dB', 'dW', 'db'] as const;
const tag = (d: LoraRefDims) => `[N=${d.N} In=${d.In} Out=${d.Out} R=${d.R}]`;

export const loraLinearCases: GpuCase[] = [
  {
    name: 'lora_linear: forward and every gradient match the reference and tfjs autograd (ranks 1, 7, 64, 8; N=1)',
    async fn(ctx) {
      for (const { name, cfg } of [...configs(ctx).slice(0, 2), { name: 'odd tiled', cfg: ODD_TILED }]) {
        // Every shape on the adapter's default tiles; one on the other entry point and an odd tile.
        for (const [N, In, Out, R] of name === 'default' ? SHAPES : SHAPES.slice(2, 3)) {
          const d = { N, In, Out, R };
          const v = inputs(21, d);
          const got = await gpuLora(ctx, d, v, cfg);
          const ref = refLora(d, v);
          for (const k of KEYS) assertClose(got[k], ref[k], TOL_REF, `lora ${k} vs ref (${name}) ${tag(d)}`);
          if (name !== 'default') continue;
          const t = tfLora(d, v);
          for (const k of KEYS) assertClose(got[k], t[k], TOL_TF, `lora ${k} vs tfjs ${tag(d)}`);
        }
      }
    },
  },
  {
    name: 'lora_linear: f16 base W (where shader-f16 exists) vs an f32 reference of the f16-rounded W',
    async fn(ctx) {
      if (!ctx.hasF16) return; // SwiftShader: W stays f32 there
      for (const { name, cfg } of configs(ctx).slice(0, 2)) {
        const shapes: [number, number, number, number][] = [[1, 7, 5, 1], [9, 33, 17, 7], [33, 36, 20, 64]];
        for (const [N, In, Out, R] of name === 'default' ? shapes : shapes.slice(2)) {
          const d = { N, In, Out, R };
          const v = inputs(22, d);
          const h = toF16(v.w);
          const got = await gpuLora(ctx, d, v, cfg, { wBits: h.bits });
          const ref = refLora(d, v, h.values);
          for (const k of KEYS) assertClose(got[k], ref[k], TOL_REF, `lora f16 W ${k} vs ref (${name}) ${tag(d)}`);
          if (name !== 'default') continue;
          const t = tfLora(d, v, h.values);
          for (const k of KEYS) assertClose(got[k], t[k], TOL_TF, `lora f16 W ${k} vs tfjs ${tag(d)}`);
        }
      }
    },
  },
  {
    name: 'lora_linear: accumulate adds every gradient to what was there; [B, T, In] inputs work as rows',
    async fn(ctx) {
      const d = { N: 12, In: 20, Out: 12, R: 8 };
      const v = inputs(23, d);
      const rng = new Rng(24, 0);
      const init: Outputs = {
        y: new Float32Array(0), u: new Float32Array(0), dx: rng.normalArray(d.N * d.In), dA: rng.normalArray(d.R * d.In),
        dB: rng.normalArray(d.Out * d.R), dW: rng.normalArray(d.Out * d.In), db: rng.normalArray(d.Out),
      };
      const got = await gpuLora(ctx, d, v, configs(ctx)[0].cfg, { init, xShape: [3, 4, d.In] });
      const ref = refLora(d, v);
      for (const k of ['dx', 'dA', 'dB', 'dW', 'db'] as const) {
        const want = Float32Array.from(ref[k], (x, i) => x + init[k][i]);
        assertClose(got[k], want, TOL_REF, `lora accumulate ${k} vs ref ${tag(d)}`);
      }
      assertClose(got.y, ref.y, TOL_REF, `lora 3-D x: y vs ref ${tag(d)}`);
    },
  },
  {
    name: 'lora_linear: two runs give bitwise-identical outputs and gradients',
    async fn(ctx) {
      const d = { N: 64, In: 96, Out: 80, R: 16 };
      const v = inputs(25, d);
      for (const { name, cfg } of configs(ctx).slice(0, 2)) {
        const r1 = await gpuLora(ctx, d, v, cfg);
        const r2 = await gpuLora(ctx, d, v, cfg);
        for (const k of KEYS) assert.strictEqual(firstBitDiff(r1[k], r2[k]), -1, `${k} differs between runs (${name})`);
      }
    },
  },
  {
    name: 'lora_linear: texture reads of the matmuls (llvmpipe default) give bitwise the buffer path (f32 and f16 W; ranks 1, 7, 64 on odd sizes)',
    async fn(ctx) {
      const buf: MatmulConfig = { kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16, reads: 'buffer' };
      const tex: MatmulConfig = { ...buf, reads: 'texture' };
      // Ranks 1, 7, 64 (and 8) on odd sizes: one row, scalar-loaded factors (R % 4 ≠ 0), a rank
      // larger than In and Out.
      const shapes: [number, number, number, number][] = [...SHAPES, [37, 45, 29, 1], [13, 33, 19, 64], [21, 5, 3, 7]];
      for (const [N, In, Out, R] of shapes) {
        const d = { N, In, Out, R };
        const v = inputs(26, d);
        for (const wBits of ctx.hasF16 ? [undefined, toF16(v.w).bits] : [undefined]) {
          const want = await gpuLora(ctx, d, v, buf, { wBits });
          const got = await gpuLora(ctx, d, v, tex, { wBits });
          for (const k of KEYS) assert.strictEqual(firstBitDiff(got[k], want[k]), -1, `${k}: texture vs buffer reads${wBits ? ' (f16 W)' : ''} ${tag(d)}`);
        }
      }
    },
  },
  {
    name: 'lora_linear: bad shapes, dtypes and ranks are refused before dispatch, naming the tensors',
    async fn(ctx) {
      const made: Tensor[] = [];
      const t = (shape: number[], label: string, dtype: 'f32' | 'i32' | 'f16' = 'f32') => {
        const x = empty(ctx, shape, dtype, label);
        made.push(x);
        return x;
      };
      const [N, In, Out, R] = [5, 8, 6, 4];
      const x = t([N, In], 'x'), w = t([Out, In], 'w'), a = t([R, In], 'a'), b = t([Out, R], 'b'), y = t([N, Out], 'y'), u = t([N, R], 'u');
      const rec = new Recorder(ctx);
      const fwd = (o: Record<string, unknown>) => () => loraLinearForward(rec, (o.y ?? y) as typeof y, (o.u ?? u) as typeof u, (o.x ?? x) as typeof x,
        (o.w ?? w) as typeof w, (o.a ?? a) as typeof a, (o.b ?? b) as typeof b, { alpha: 8 });
      assert.throws(fwd({ w: t([Out, In + 1], 'w2') }), ShapeError, /lora_linear: w \[6, 9\] should be \[Out, 8\] for x \[5, 8\]/);
      assert.throws(fwd({ a: t([65, In], 'a65'), u: t([N, 65], 'u65') }), ShapeError, /lora_linear: rank R = 65 \(a \[65, 8\]\) must be in 1\.\.64/);
      assert.throws(fwd({ b: t([Out, R + 1], 'b5') }), ShapeError, /lora_linear: adapter b \[6, 5\] should be \[6, 4\] for w \[6, 8\] and a \[4, 8\]/);
      assert.throws(fwd({ a: t([R, In], 'ai', 'i32') }), ShapeError, /lora_linear: a \(Tensor\(ai: i32\[4, 8\]\)\) must be f32/);
      assert.throws(fwd({ u: t([N, R + 1], 'u5') }), ShapeError, /lora_linear: u \[5, 5\] should be \[5, 4\]/);
      assert.throws(fwd({ y: t([N, Out + 1], 'y7') }), ShapeError, /lora_linear: y \[5, 7\] should be \[5, 6\]/);
      const dA = t([R, In], 'dA'), dB = t([Out, R], 'dB');
      assert.throws(() => loraLinearBackward(rec, null, dA, t([R, Out], 'dBt'), null, null, y, x, u, w, a, b, { alpha: 8 }), ShapeError,
        /lora_linear: dB must have shape \[6, 4\], got Tensor\(dBt: f32\[4, 6\]\)/);
      assert.throws(() => loraLinearBackward(rec, t([N, In + 1], 'dx'), dA, dB, null, null, y, x, u, w, a, b, { alpha: 8 }), ShapeError,
        /lora_linear: dx \[5, 9\] should be \[5, 8\]/);
      assert.strictEqual(rec.pending, 0);
      releaseAll(...made);
    },
  },
];
