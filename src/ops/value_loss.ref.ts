/** CPU reference of kernels/value_loss.wgsl (plain loops in f64, f32 results). */
import type { ValueLossSpec } from './value_loss.ts';

export function valueLossRef(
  values: Float32Array, oldValues: Float32Array | null, returns: Float32Array, weights: Float32Array, spec: ValueLossSpec,
): { dvalues: Float32Array; stats: Float32Array } {
  const n = values.length;
  const coef = spec.coef ?? 1;
  let count = 0;
  for (let i = 0; i < n; i++) if (weights[i] !== 0) count++;
  const dvalues = new Float32Array(n);
  let loss = 0;
  let clipped = 0;
  for (let i = 0; i < n; i++) {
    if (weights[i] === 0) continue;
    const v = values[i];
    const u = v - returns[i];
    const eps = spec.clip;
    const vc = eps === null ? v : Math.min(Math.max(v, oldValues![i] - eps), oldValues![i] + eps);
    const uc = vc - returns[i];
    const scale = (coef * weights[i]) / count;
    if (uc * uc > u * u) {
      loss += scale * 0.5 * uc * uc;
      clipped++;
    } else {
      loss += scale * 0.5 * u * u;
      dvalues[i] = scale * u;
    }
  }
  return { dvalues, stats: Float32Array.of(loss, count === 0 ? 0 : clipped / count) };
}
