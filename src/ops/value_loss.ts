/**
 * valueLoss — clipped value loss of a PPO critic (host wrapper of kernels/value_loss.wgsl).
 *
 *   L = coef · Σ_i w_i · ½·max((v−R)², (clip(v, v_old ± clip) − R)²) / #{w ≠ 0}
 *
 * Writes (=) `dvalues` [N] = dL/dv and `stats` [2] = [L, clip fraction]. `clip: null` drops the
 * clipped term (plain masked MSE, ½(v−R)²). One dispatch of one workgroup; deterministic.
 * The spec is src/algorithms/loss_spec.ts's ValueLossSpec; the per-token loss the reference runs
 * is src/algorithms/loss_terms.ts's clippedValueLoss.
 */
import { ConfigError, ShapeError } from '../errors.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectShape } from '../gpu/checks.ts';
import type { ValueLossSpec } from '../algorithms/loss_spec.ts';

const KERNEL = 'value_loss';

export interface ValueLossInputs {
  values: Tensor; // [N] f32, the critic's predictions v
  oldValues?: Tensor; // [N] f32, v_old (needed when clip is not null)
  returns: Tensor; // [N] f32, the targets R
  weights: Tensor; // [N] f32, 0 masks a token
}

export interface ValueLossOutputs {
  dvalues: Tensor; // [N] f32
  stats: Tensor; // [2] f32: loss, clip fraction
}

export const VALUE_STATS = { loss: 0, clipFraction: 1 } as const;

/** Clipped value loss and its gradient. Writes (=) `dvalues` and `stats`. */
export function valueLoss(rec: Recorder, out: ValueLossOutputs, inputs: ValueLossInputs, spec: ValueLossSpec): void {
  const coef = spec.coef;
  if (!Number.isFinite(coef)) throw new ConfigError('spec.coef', `must be finite, got ${coef}`);
  if (spec.clip !== null && !(Number.isFinite(spec.clip) && spec.clip >= 0)) {
    throw new ConfigError('spec.clip', `must be a finite number ≥ 0 or null, got ${spec.clip}`);
  }
  const { values, returns, weights } = inputs;
  expectDtype(KERNEL, 'values', values, 'f32');
  if (values.shape.length !== 1) throw new ShapeError(KERNEL, `values must be [N], got ${values}`);
  const n = values.shape[0];
  if (spec.clip !== null && !inputs.oldValues) throw new ShapeError(KERNEL, `a clipped value loss needs oldValues [${n}]`);
  const old = spec.clip !== null ? inputs.oldValues! : values; // bound, never read, without clipping
  const named: [string, Tensor][] = [['oldValues', old], ['returns', returns], ['weights', weights], ['dvalues', out.dvalues]];
  for (const [name, t] of named) {
    expectDtype(KERNEL, name, t, 'f32');
    expectShape(KERNEL, name, t, [n]);
  }
  expectDtype(KERNEL, 'stats', out.stats, 'f32');
  expectShape(KERNEL, 'stats', out.stats, [2]);
  const reads: [string, Tensor][] = [['values', values], ['oldValues', old], ['returns', returns], ['weights', weights]];
  expectDistinct(KERNEL, [['dvalues', out.dvalues, 'stats', out.stats],
    ...reads.flatMap(([nm, t]) => [['dvalues', out.dvalues, nm, t] as const, ['stats', out.stats, nm, t] as const])]);
  expectBindable(KERNEL, rec.ctx, [...reads, ['dvalues', out.dvalues], ['stats', out.stats]]);
  rec.dispatch({
    kernel: KERNEL,
    constants: { RWG: 256 },
    bindings: { values, old_values: old, returns, weights, dvalues: out.dvalues, stats: out.stats },
    params: { n, use_clip: spec.clip === null ? 0 : 1, eps: spec.clip ?? 0, coef },
    workgroups: [1],
  });
}
