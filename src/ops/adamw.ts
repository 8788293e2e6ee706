/**
 * Fused AdamW, in place (host wrapper of kernels/adamw.wgsl), and the clip scale.
 *   adamw(param, m, v, grad, opts, gradScale?)  updates param, m, v in place (+=-style, the
 *       optimizer state is read and written); grad is read, scaled by gradScale[0] when given
 *   clipScale(scale, norm, maxNorm)             scale[0] = min(1, maxNorm / (norm[0] + 1e-6))  (=)
 * Gradient clipping without a readback: globalL2Norm(norm, grads) → clipScale(scale, norm) →
 * adamw(..., scale) for every parameter tensor, all in one recording.
 * The non-finite guard: adamwGuardReset(guard) → adamwCheck(...) for every tensor → adamw(...,
 *   guard) for every tensor applies the step to all tensors or, when any new weight or moment would
 *   be NaN or ±Inf, to none (guard[0] = 1 then; read it back to count the step as skipped).
 * Bias corrections are computed here in f64 (see kernels/adamw.wgsl). A tensor larger than one
 * storage binding is updated a range of elements at a time (src/gpu/chunks.ts flatChunks): the
 * same per-element arithmetic, bit for bit.
 */
import { ConfigError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectShape } from '../gpu/checks.ts';
import { flatChunks } from '../gpu/chunks.ts';

const KERNEL = 'adamw';
const WG = 256;

export interface AdamWOptions {
  lr: number;
  beta1?: number; // default 0.9
  beta2?: number; // default 0.999
  eps?: number; // default 1e-8
  weightDecay?: number; // decoupled; default 0.01 (PyTorch's AdamW default)
  /** The step t ≥ 1 being taken (1 for the first update), for bias correction. */
  step: number;
}

/** The per-step constants of the update: lr / (1 − β1^t) and sqrt(1 − β2^t), in f64. */
export function adamwBiasCorrection(step: number, beta1: number, beta2: number): { stepSize: (lr: number) => number; bc2Sqrt: number } {
  const bc1 = 1 - beta1 ** step;
  return { stepSize: (lr) => lr / bc1, bc2Sqrt: Math.sqrt(1 - beta2 ** step) };
}

function resolve(opts: AdamWOptions): Required<AdamWOptions> {
  const o = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, ...opts };
  for (const k of ['lr', 'beta1', 'beta2', 'eps', 'weightDecay'] as const) {
    if (!Number.isFinite(o[k]) || o[k] < 0) throw new ConfigError(`adamw.${k}`, `must be a finite number ≥ 0, got ${o[k]}`);
  }
  if (o.beta1 >= 1 || o.beta2 >= 1) throw new ConfigError('adamw.beta', `β1 and β2 must be < 1, got ${o.beta1}, ${o.beta2}`);
  if (!Number.isInteger(o.step) || o.step < 1) throw new ConfigError('adamw.step', `must be an integer ≥ 1, got ${o.step}`);
  return o;
}

/**
 * One AdamW step on one parameter tensor, in place on `param`, `m`, `v` (all f32, one shape with
 * `grad`). `gradScale` [1] f32, when given, multiplies the gradient (the clip scale). With
 * `guard` [1] u32 the update is skipped when guard[0] ≠ 0 (set by adamwCheck, see the header).
 */
export function adamw(rec: Recorder, param: Tensor, m: Tensor, v: Tensor, grad: Tensor, opts: AdamWOptions, gradScale: Tensor | null = null, guard: Tensor | null = null): void {
  recordAdamw(rec, 'update', param, m, v, grad, opts, gradScale, guard);
}

/**
 * guard[0] |= 1 when the AdamW step `adamw` would take on this tensor (same arguments) makes any
 * element of param, m or v non-finite. Writes nothing else. Record `adamwGuardReset` once before
 * the checks of a step, every tensor's check, then every tensor's `adamw(..., guard)`.
 */
export function adamwCheck(rec: Recorder, param: Tensor, m: Tensor, v: Tensor, grad: Tensor, opts: AdamWOptions, gradScale: Tensor | null, guard: Tensor): void {
  recordAdamw(rec, 'check', param, m, v, grad, opts, gradScale, guard);
}

/** guard[0] = 0 (=): `guard` [1] u32. */
export function adamwGuardReset(rec: Recorder, guard: Tensor): void {
  expectGuard(rec, guard);
  rec.dispatch({ kernel: KERNEL, entryPoint: 'flag_reset', bindings: { flag: guard }, workgroups: [1] });
}

function expectGuard(rec: Recorder, guard: Tensor): void {
  expectDtype(KERNEL, 'guard', guard, 'u32');
  expectShape(KERNEL, 'guard', guard, [1]);
  expectBindable(KERNEL, rec.ctx, [['guard', guard]]);
}

function recordAdamw(rec: Recorder, what: 'update' | 'check', param: Tensor, m: Tensor, v: Tensor, grad: Tensor, opts: AdamWOptions, gradScale: Tensor | null, guard: Tensor | null): void {
  const o = resolve(opts);
  const named: [string, Tensor][] = [['param', param], ['m', m], ['v', v], ['grad', grad]];
  for (const [name, t] of named) {
    expectDtype(KERNEL, name, t, 'f32');
    expectShape(KERNEL, name, t, param.shape);
  }
  if (gradScale) {
    expectDtype(KERNEL, 'gradScale', gradScale, 'f32');
    expectShape(KERNEL, 'gradScale', gradScale, [1]);
    named.push(['gradScale', gradScale]);
  }
  if (guard) {
    expectGuard(rec, guard);
    named.push(['guard', guard]);
  }
  expectDistinct(KERNEL, named.flatMap(([na, a], i) => named.slice(i + 1).map(([nb, b]) => [na, a, nb, b] as const)));
  if (gradScale) expectBindable(KERNEL, rec.ctx, [['gradScale', gradScale]]);
  const entryPoint = `${what === 'check' ? 'check' : 'main'}${gradScale ? '' : '_unscaled'}${what === 'update' && guard ? '_guarded' : ''}`;
  // The same ranges of all four (same size and dtype), each within one binding.
  const [ps, ms, vs, gs] = [param, m, v, grad].map((t) => flatChunks(KERNEL, t));
  if (param.size === 0) return;
  const { stepSize, bc2Sqrt } = adamwBiasCorrection(o.step, o.beta1, o.beta2);
  ps.forEach((p, i) => {
    const n = p.size;
    const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
    rec.dispatch({
      kernel: KERNEL,
      entryPoint,
      constants: { WG },
      bindings: { param: p, m1: ms[i], m2: vs[i], grad: gs[i], gscale: gradScale, flag: guard },
      params: {
        n, row_threads: rowThreads, lr: o.lr, beta1: o.beta1, beta2: o.beta2, one_minus_beta1: 1 - o.beta1, one_minus_beta2: 1 - o.beta2,
        eps: o.eps, wd: o.weightDecay, step_size: stepSize(o.lr), bc2_sqrt: bc2Sqrt, max_norm: 0,
      },
      workgroups,
    });
  });
}

/** scale[0] = min(1, maxNorm / (norm[0] + 1e-6)), on the GPU. Writes (=) `scale` [1]; `norm` is [1]. */
export function clipScale(rec: Recorder, scale: Tensor, norm: Tensor, maxNorm: number): void {
  if (!(Number.isFinite(maxNorm) && maxNorm > 0)) throw new ConfigError('maxNorm', `must be a finite number > 0, got ${maxNorm}`);
  expectDtype(KERNEL, 'scale', scale, 'f32');
  expectShape(KERNEL, 'scale', scale, [1]);
  expectDtype(KERNEL, 'norm', norm, 'f32');
  expectShape(KERNEL, 'norm', norm, [1]);
  expectDistinct(KERNEL, [['scale', scale, 'norm', norm]]);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'clip_scale',
    bindings: { grad: norm, gscale: scale },
    // clip_scale reads max_norm alone; the update's fields are zero.
    params: {
      n: 1, row_threads: 0, lr: 0, beta1: 0, beta2: 0, one_minus_beta1: 0, one_minus_beta2: 0, eps: 0, wd: 0, step_size: 0, bc2_sqrt: 0,
      max_norm: maxNorm,
    },
    workgroups: [1],
  });
}
