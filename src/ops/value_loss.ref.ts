/**
 * CPU reference of kernels/value_loss.wgsl (plain loops in f64, f32 results): the per-token loss
 * is src/algorithms/loss_terms.ts's clippedValueLoss, the one the CPU training path uses; here it
 * is reduced as the kernel does, coef · Σ w·ℓ / #{w ≠ 0}.
 */
import type { ValueLossSpec } from '../algorithms/loss_spec.ts';
import { clippedValueLoss } from '../algorithms/loss_terms.ts';

export function valueLossRef(
  values: Float32Array, oldValues: Float32Array | null, returns: Float32Array, weights: Float32Array, spec: ValueLossSpec,
): { dvalues: Float32Array; stats: Float32Array } {
  const n = values.length;
  let count = 0;
  for (let i = 0; i < n; i++) if (weights[i] !== 0) count++;
  const dvalues = new Float32Array(n);
  let loss = 0;
  let clipped = 0;
  for (let i = 0; i < n; i++) {
    if (weights[i] === 0) continue;
    const x = clippedValueLoss(values[i], spec.clip === null ? 0 : oldValues![i], returns[i], spec.clip);
    const scale = (spec.coef * weights[i]) / count;
    loss += scale * x.loss;
    dvalues[i] = scale * x.dv;
    clipped += x.clipped ? 1 : 0;
  }
  return { dvalues, stats: Float32Array.of(loss, count === 0 ? 0 : clipped / count) };
}
