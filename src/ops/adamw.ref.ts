/**
 * CPU reference of kernels/adamw.wgsl: the same formula and order, every operation rounded to
 * f32 (Math.fround) as the kernel computes it.
 */
import { adamwBiasCorrection, type AdamWOptions } from './adamw.ts';

const f = Math.fround;

/** One AdamW step in place on p, m, v. */
export function adamwRef(p: Float32Array, m: Float32Array, v: Float32Array, g: Float32Array, opts: AdamWOptions, gradScale = 1): void {
  const { beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01, lr, step } = opts;
  const { stepSize, bc2Sqrt } = adamwBiasCorrection(step, beta1, beta2);
  const [b1, b2, e, ss, bc2, decay] = [f(beta1), f(beta2), f(eps), f(stepSize(lr)), f(bc2Sqrt), f(1 - f(f(lr) * f(weightDecay)))];
  const [omb1, omb2] = [f(1 - beta1), f(1 - beta2)]; // in f64, then rounded, as the host passes them
  const s = f(gradScale);
  for (let i = 0; i < p.length; i++) {
    const gi = f(g[i] * s);
    m[i] = f(f(b1 * m[i]) + f(omb1 * gi));
    v[i] = f(f(b2 * v[i]) + f(f(omb2 * gi) * gi));
    const denom = f(f(f(Math.sqrt(v[i])) / bc2) + e);
    p[i] = f(f(p[i] * decay) - f(f(ss * m[i]) / denom));
  }
}

/**
 * What adamwCheck computes: whether the step adamwRef would take leaves every element of p, m and
 * v finite (nothing is written).
 */
export function adamwStepFiniteRef(p: Float32Array, m: Float32Array, v: Float32Array, g: Float32Array, opts: AdamWOptions, gradScale = 1): boolean {
  const [pp, mm, vv] = [p.slice(), m.slice(), v.slice()];
  adamwRef(pp, mm, vv, g, opts, gradScale);
  return [pp, mm, vv].every((a) => a.every(Number.isFinite));
}

/** min(1, maxNorm / (norm + 1e-6)) in f32. */
export function clipScaleRef(norm: number, maxNorm: number): number {
  return Math.min(1, f(f(maxNorm) / f(f(norm) + f(1e-6))));
}
