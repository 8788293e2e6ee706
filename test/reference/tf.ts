/**
 * The independent oracle: tfjs on its cpu backend (plain JavaScript, f32), with autograd.
 * GPU kernels are checked against it for forward values and, through tf.grad / tf.variableGrads,
 * for gradients. Import `tf` from here so every suite gets the cpu backend, ready.
 */
import * as tf from '@tensorflow/tfjs';

await tf.setBackend('cpu');
await tf.ready();

export { tf };

/** Relative L2 error ‖got − want‖ / max(‖want‖, tiny). */
export function relL2(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) throw new Error(`relL2: lengths differ (${got.length} vs ${want.length})`);
  let num = 0;
  let den = 0;
  for (let i = 0; i < got.length; i++) {
    const d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}

/** Largest absolute difference. */
export function maxAbsDiff(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) throw new Error(`maxAbsDiff: lengths differ (${got.length} vs ${want.length})`);
  let m = 0;
  for (let i = 0; i < got.length; i++) m = Math.max(m, Math.abs(got[i] - want[i]));
  return m;
}
