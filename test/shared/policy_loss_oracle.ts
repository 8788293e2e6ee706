/**
 * The policy and value losses written with tfjs ops (cpu backend) and differentiated by tf.grad:
 * the independent oracle of kernels/policy_loss.wgsl and kernels/value_loss.wgsl. Each loss
 * variant is one entry of TF_TERMS, written from its paper's formula with log_softmax,
 * tf.minimum / tf.maximum / tf.where and clipByValue — nothing shared with the kernel or the
 * CPU reference except the per-token scale (weights / normalizer, constants for the gradient).
 */
import type { PolicyLossSpec as Spec, Reduction, ValueLossSpec } from '../../src/algorithms/loss_spec.ts';
import { tf } from '../reference/tf.ts';

type PolicyLossSpec = Spec<Reduction>;

type T1 = tf.Tensor1D;
interface PerToken {
  lp: T1;
  old: T1;
  adv: T1;
  ref: T1;
}
type TermFn<S extends PolicyLossSpec> = (spec: S, x: PerToken) => T1;

function ppoObjective(spec: { clipLow: number; clipHigh: number; dualClip?: number }, x: PerToken): T1 {
  const r = tf.exp(tf.sub(x.lp, x.old));
  const s1 = tf.mul(r, x.adv);
  const s2 = tf.mul(tf.clipByValue(r, 1 - spec.clipLow, 1 + spec.clipHigh), x.adv);
  const obj = tf.minimum(s1, s2) as T1;
  if (spec.dualClip === undefined) return obj;
  const floor = tf.mul(x.adv, spec.dualClip);
  return tf.where(tf.less(x.adv, 0), tf.maximum(obj, floor), obj) as T1;
}

/** Per-token loss of each variant (no entropy bonus). */
const TF_TERMS: { readonly [K in PolicyLossSpec['kind']]: TermFn<Extract<PolicyLossSpec, { kind: K }>> } = {
  cross_entropy: (_s, x) => tf.neg(x.lp),
  importance_sampling: (_s, x) => tf.neg(tf.mul(tf.exp(tf.sub(x.lp, x.old)), x.adv)),
  ppo: (s, x) => tf.neg(ppoObjective(s, x)),
  grpo: (s, x) => {
    const d = tf.sub(x.ref, x.lp);
    const k3 = tf.sub(tf.sub(tf.exp(d), d), 1);
    return tf.add(tf.neg(ppoObjective(s, x)), tf.mul(k3, s.klBeta));
  },
};

export interface TfPolicyLoss {
  total: number;
  dlogits: Float32Array;
  logprobs: Float32Array;
  entropy: Float32Array;
}

/** Total loss Σ scale·(ℓ − c·H), its gradient in the logits, and the per-token log-probs and entropy. */
export function tfPolicyLoss(
  spec: PolicyLossSpec, logits: Float32Array, n: number, v: number, targets: Int32Array, scale: Float64Array,
  per: { old?: Float32Array; adv?: Float32Array; ref?: Float32Array },
): TfPolicyLoss {
  return tf.tidy(() => {
    const z = tf.tensor2d(logits, [n, v]);
    const hot = new Float32Array(n * v); // built by hand: tf.oneHot refuses depth 1
    targets.forEach((t, i) => (hot[i * v + t] = 1));
    const oneHot = tf.tensor2d(hot, [n, v]);
    const vec = (a?: Float32Array) => tf.tensor1d(a ?? new Float32Array(n));
    const consts = { old: vec(per.old), adv: vec(per.adv), ref: vec(per.ref) };
    const scaleT = tf.tensor1d(Float32Array.from(scale));
    const parts = (zz: tf.Tensor2D) => {
      const lsm = tf.logSoftmax(zz);
      const lp = tf.sum(tf.mul(lsm, oneHot), 1) as T1;
      const h = tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), 1)) as T1;
      return { lp, h };
    };
    const lossOf = (zz: tf.Tensor2D) => {
      const { lp, h } = parts(zz);
      const term = (TF_TERMS[spec.kind] as TermFn<PolicyLossSpec>)(spec, { lp, ...consts });
      const perToken = tf.sub(term, tf.mul(h, spec.entropyCoef ?? 0));
      return tf.sum(tf.mul(perToken, scaleT)) as tf.Scalar;
    };
    const { value, grad } = tf.valueAndGrad(lossOf)(z);
    const { lp, h } = parts(z);
    return {
      total: value.dataSync()[0],
      dlogits: grad.dataSync() as Float32Array,
      logprobs: lp.dataSync() as Float32Array,
      entropy: h.dataSync() as Float32Array,
    };
  });
}

/** The clipped value loss and dL/dv, through tf.grad. */
export function tfValueLoss(
  spec: ValueLossSpec, values: Float32Array, old: Float32Array, returns: Float32Array, weights: Float32Array,
): { total: number; dvalues: Float32Array } {
  return tf.tidy(() => {
    let count = 0;
    for (const w of weights) if (w !== 0) count++;
    const scale = tf.tensor1d(Float32Array.from(weights, (w) => (count ? (spec.coef * w) / count : 0)));
    const [vo, r] = [tf.tensor1d(old), tf.tensor1d(returns)];
    const f = (v: T1) => {
      const un = tf.square(tf.sub(v, r));
      const loss = spec.clip === null ? un : tf.maximum(un, tf.square(tf.sub(tf.add(vo, tf.clipByValue(tf.sub(v, vo), -spec.clip, spec.clip)), r)));
      return tf.sum(tf.mul(tf.mul(loss, 0.5), scale)) as tf.Scalar;
    };
    const { value, grad } = tf.valueAndGrad(f)(tf.tensor1d(values));
    return { total: value.dataSync()[0], dvalues: grad.dataSync() as Float32Array };
  });
}
