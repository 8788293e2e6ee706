/**
 * lora_linear — a linear layer with a LoRA adapter, forward and backward (host side of
 * kernels/matmul.wgsl (and its f16-B variant matmul_f16) and kernels/lora_linear.wgsl).
 *
 *   forward:  u = x·Aᵀ                                  [N, R]   (saved for backward)
 *             y = x·Wᵀ (+ b) + s·u·Bᵀ,   s = α / R       [N, Out]
 *   backward: v  = dy·B                                 [N, R]   (scratch of the recording)
 *             dx = dy·W + s·v·A                         [N, In]
 *             dA = s·vᵀ·x,  dB = s·dyᵀ·u                [R, In], [Out, R]
 *             dW = dyᵀ·x,   db = Σ_rows dy               [Out, In], [Out]   (trainable base only)
 *
 * Shapes: x [N, In] (or [B, T, In]: leading dimensions are rows), W [Out, In] (f32, or f16 where
 * the device has shader-f16 — frozen base weights), b [Out], A [R, In], B [Out, R], rank R in
 * 1..64. The low-rank term rides in the base product's epilogue (matmul's lowRank), so the forward
 * pass is two dispatches and never makes a second pass over [N, Out]; dx likewise. All sums are
 * in f32 in a fixed order (deterministic). Gradients are written (=) unless `accumulate` (+=),
 * dx unless `accumulateDx` (+=, e.g. into a residual stream's gradient).
 */
import { ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { type MatmulConfig, type MatmulPlan, planMatmul, recordMatmul } from './matmul.ts';
import { expectDistinct, expectDtype, expectLoopBudget, expectShape } from '../gpu/checks.ts';

const OP = 'lora_linear';
export const LORA_MAX_RANK = 64;
const SUM_WG = 64;

export interface LoraLinearOptions {
  /** LoRA α; the low-rank term is scaled by α / R. */
  alpha: number;
  /** The low-rank term's scale when it is not α / R of this module (an adapter's own per-module scale). */
  scale?: number;
  /** [Out], forward only. */
  bias?: Tensor | null;
  /** y += the result instead of y = (inference accumulating straight into the residual stream). */
  accumulate?: boolean;
  /** GELU of the result, in the product's epilogue (matmul's `activation`). */
  activation?: 'gelu';
  /** Matmul tile configuration (default: matmulConfigFor(ctx)). */
  config?: MatmulConfig;
}

export interface LoraLinearBackwardOptions {
  alpha: number;
  /** dA, dB, dW, db += instead of =. */
  accumulate?: boolean;
  /** dx += instead of =. */
  accumulateDx?: boolean;
  config?: MatmulConfig;
}

const fmt = (t: Tensor) => `[${t.shape.join(', ')}]`;

/** x viewed as [rows, last dimension] (leading dimensions flattened; the buffer is shared). */
function rows2d(t: Tensor): Tensor {
  if (t.shape.length === 2) return t;
  const cols = t.shape[t.shape.length - 1] ?? 0;
  return t.view([cols === 0 ? 0 : t.size / cols, cols]);
}

interface Dims { N: number; In: number; Out: number; R: number }

function expect(cond: boolean, msg: string): void {
  if (!cond) throw new ShapeError(OP, msg);
}

/** Checks x, W, A, B (and u) against each other; returns the dimensions. */
function loraDims(ctx: GpuContext, x: Tensor, w: Tensor, a: Tensor, b: Tensor, u: Tensor): Dims {
  for (const [name, t] of [['x', x], ['w', w], ['a', a], ['b', b], ['u', u]] as const) {
    t.assertLive();
    expect(t.shape.length >= 2, `${name} ${fmt(t)} must have at least 2 dimensions`);
    if (name !== 'w') expectDtype(OP, name, t, 'f32');
  }
  expect(w.dtype === 'f32' || w.dtype === 'f16', `w (${w}) must be f32 or f16, got ${w.dtype}`);
  expect(w.dtype !== 'f16' || ctx.hasF16, `w (${w}) is f16 but this device has no shader-f16; store it as f32`);
  const In = x.shape[x.shape.length - 1];
  const N = In === 0 ? 0 : x.size / In;
  expect(w.shape.length === 2 && w.shape[1] === In, `w ${fmt(w)} should be [Out, ${In}] for x ${fmt(x)}`);
  const Out = w.shape[0];
  expect(a.shape.length === 2 && a.shape[1] === In, `adapter a ${fmt(a)} should be [R, ${In}] for x ${fmt(x)}`);
  const R = a.shape[0];
  expect(R >= 1 && R <= LORA_MAX_RANK, `rank R = ${R} (a ${fmt(a)}) must be in 1..${LORA_MAX_RANK}`);
  expect(b.shape.length === 2 && b.shape[0] === Out && b.shape[1] === R,
    `adapter b ${fmt(b)} should be [${Out}, ${R}] for w ${fmt(w)} and a ${fmt(a)}`);
  expect(u.size === N * R && u.shape[u.shape.length - 1] === R, `u ${fmt(u)} should be [${N}, ${R}] (x ${fmt(x)}, rank ${R})`);
  return { N, In, Out, R };
}

function expectRows(t: Tensor, name: string, rows: number, cols: number, like: string): void {
  t.assertLive();
  expectDtype(OP, name, t, 'f32');
  expect(t.shape.length >= 2 && t.shape[t.shape.length - 1] === cols && t.size === rows * cols,
    `${name} ${fmt(t)} should be [${rows}, ${cols}] (${like})`);
}

/** A live f32 tensor of exactly this shape (gradients and the bias: no leading dimensions to flatten). */
function expectExact(t: Tensor, name: string, shape: readonly number[]): void {
  t.assertLive();
  expectDtype(OP, name, t, 'f32');
  expectShape(OP, name, t, shape);
}

/**
 * Forward: writes (=) u = x·Aᵀ and y = x·Wᵀ (+ bias) + (α/R)·u·Bᵀ (or y += that with
 * `accumulate`; GELU of it with `activation`). Two dispatches.
 */
export function loraLinearForward(rec: Recorder, y: Tensor, u: Tensor, x: Tensor, w: Tensor, a: Tensor, b: Tensor, opts: LoraLinearOptions): void {
  const { N, Out, R } = loraDims(rec.ctx, x, w, a, b, u);
  expectRows(y, 'y', N, Out, `x ${fmt(x)}, w ${fmt(w)}`);
  if (opts.bias) expectExact(opts.bias, 'bias', [Out]);
  const x2 = rows2d(x), y2 = rows2d(y), u2 = rows2d(u);
  const common = { config: opts.config, opName: OP };
  const plans: MatmulPlan[] = [
    planMatmul(rec.ctx, u2, x2, a, { ...common, transB: true }),
    planMatmul(rec.ctx, y2, x2, w, {
      ...common, transB: true, bias: opts.bias ?? undefined, accumulate: opts.accumulate, activation: opts.activation,
      lowRank: { u: u2, v: b, transV: true, scale: opts.scale ?? opts.alpha / R },
    }),
  ];
  for (const p of plans) recordMatmul(rec, p);
}

/**
 * Backward: dA = (α/R)·(dy·B)ᵀ·x and dB = (α/R)·dyᵀ·u always; dx = dy·W + (α/R)·(dy·B)·A when dx
 * is given; dW = dyᵀ·x and db = Σ_rows dy when given (trainable base). Writes (=), or adds (+=)
 * with `accumulate` (dA, dB, dW, db) / `accumulateDx` (dx). dy·B lives in a scratch tensor of
 * the recording.
 */
export function loraLinearBackward(rec: Recorder, dx: Tensor | null, dA: Tensor, dB: Tensor, dW: Tensor | null, db: Tensor | null,
  dy: Tensor, x: Tensor, u: Tensor, w: Tensor, a: Tensor, b: Tensor, opts: LoraLinearBackwardOptions): void {
  const ctx = rec.ctx;
  const { N, In, Out, R } = loraDims(ctx, x, w, a, b, u);
  expectRows(dy, 'dy', N, Out, `x ${fmt(x)}, w ${fmt(w)}`);
  if (dx) expectRows(dx, 'dx', N, In, `x ${fmt(x)}`);
  expectExact(dA, 'dA', [R, In]);
  expectExact(dB, 'dB', [Out, R]);
  if (dW) expectExact(dW, 'dW', [Out, In]);
  if (db) {
    expectExact(db, 'db', [Out]);
    expectDistinct(OP, [['db', db, 'dy', dy]]);
  }
  const s = opts.alpha / R;
  const x2 = rows2d(x), dy2 = rows2d(dy), u2 = rows2d(u);
  const v = rec.temp([N, R], 'f32', 'lora dy·B');
  const common = { config: opts.config, opName: OP };
  const acc = Boolean(opts.accumulate);
  const plans: MatmulPlan[] = [
    planMatmul(ctx, v, dy2, b, common),
    planMatmul(ctx, dA, v, x2, { ...common, transA: true, alpha: s, accumulate: acc }),
    planMatmul(ctx, dB, dy2, u2, { ...common, transA: true, alpha: s, accumulate: acc }),
  ];
  if (dx) {
    plans.push(planMatmul(ctx, rows2d(dx), dy2, w, { ...common, accumulate: opts.accumulateDx, lowRank: { u: v, v: a, transV: false, scale: s } }));
  }
  if (dW) plans.push(planMatmul(ctx, dW, dy2, x2, { ...common, transA: true, accumulate: acc }));
  if (db) expectLoopBudget(OP, ctx, N + 2, `db: the column sum of dy ${fmt(dy)}`);
  for (const p of plans) recordMatmul(rec, p);
  if (db && Out > 0) {
    const { workgroups, rowThreads } = grid1d(ctx, Out, SUM_WG);
    rec.dispatch({
      kernel: OP,
      entryPoint: 'column_sum',
      constants: { WG: SUM_WG, ACCUMULATE: +acc },
      bindings: { dy: dy2, out: db },
      params: { rows: N, cols: Out, row_threads: rowThreads },
      workgroups,
    });
  }
}
