/**
 * Masked softmax attention and RoPE written with tfjs ops (cpu backend) and differentiated by
 * tf.grads: the independent oracle of kernels/attention_*.wgsl and kernels/rope.wgsl. It forms
 * the full [B, Hq, T, T] score matrix (small T only), repeats kv heads for GQA with gather, and
 * masks with an additive −1e30 (the sliding window written as transformers' masking_utils
 * writes it: causal j ≤ t and sliding_window_overlay j > t − window); nothing is shared with the
 * kernels or the CPU references.
 */
import { tf } from '../reference/tf.ts';

export interface AttnCfg {
  B: number;
  T: number;
  Hq: number;
  Hkv: number;
  D: number;
  scale?: number;
  lengths?: Int32Array;
  segments?: Int32Array;
  /** Sliding window (keys per query, itself included); undefined = unlimited. */
  window?: number;
}

export interface AttnInputs {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  /** dL/dO for L = Σ O∘G. */
  g: Float32Array;
}

export interface AttnResult {
  o: Float32Array;
  lse: Float32Array;
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

/** Additive mask [B, 1, T, T] and live rows [B, T] from the causal / padding / segment rules. */
function masks(c: AttnCfg): { add: Float32Array; live: Float32Array } {
  const { B, T } = c;
  const add = new Float32Array(B * T * T).fill(-1e30);
  const live = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const seg = c.segments ? c.segments[b * T + t] : 0;
      if ((c.lengths && t >= c.lengths[b]) || seg < 0) continue;
      live[b * T + t] = 1;
      for (let j = 0; j < T; j++) {
        const causal = j <= t;
        const sliding = c.window === undefined || j > t - c.window;
        const sameSeg = !c.segments || c.segments[b * T + j] === seg;
        if (causal && sliding && sameSeg) add[(b * T + t) * T + j] = 0;
      }
    }
  }
  return { add, live };
}

/** O, LSE and the gradients of Σ O∘G with respect to q, k, v. */
export function tfAttention(c: AttnCfg, x: AttnInputs): AttnResult {
  const { B, T, Hq, Hkv, D } = c;
  const G = Hq / Hkv;
  const scale = c.scale ?? 1 / Math.sqrt(D);
  const { add, live } = masks(c);
  return tf.tidy(() => {
    const mask = tf.tensor4d(add, [B, 1, T, T]);
    const liveBT = tf.tensor4d(live, [B, T, 1, 1]);
    const heads = (t: tf.Tensor) => tf.transpose(t, [0, 2, 1, 3]); // [B, T, H, D] -> [B, H, T, D]
    const group = tf.tensor1d(Array.from({ length: Hq }, (_, h) => Math.floor(h / G)), 'int32');
    const repeat = (t: tf.Tensor) => tf.gather(heads(t), group, 1); // kv head of each query head
    const scores = (q: tf.Tensor, k: tf.Tensor) => tf.add(tf.mul(tf.matMul(heads(q) as tf.Tensor4D, repeat(k) as tf.Tensor4D, false, true), scale), mask);
    const attend = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) =>
      tf.mul(tf.transpose(tf.matMul(tf.softmax(scores(q, k)) as tf.Tensor4D, repeat(v) as tf.Tensor4D), [0, 2, 1, 3]), liveBT);
    const q = tf.tensor4d(x.q, [B, T, Hq, D]);
    const k = tf.tensor4d(x.k, [B, T, Hkv, D]);
    const v = tf.tensor4d(x.v, [B, T, Hkv, D]);
    const g = tf.tensor4d(x.g, [B, T, Hq, D]);
    const o = attend(q, k, v);
    const lse = tf.mul(tf.logSumExp(scores(q, k), -1), tf.reshape(tf.tensor2d(live, [B, T]), [B, 1, T]));
    const [dq, dk, dv] = tf.grads((a: tf.Tensor, b: tf.Tensor, cc: tf.Tensor) => tf.sum(tf.mul(attend(a, b, cc), g)))([q, k, v]);
    const out = (t: tf.Tensor) => t.dataSync() as Float32Array;
    return { o: out(o), lse: out(lse), dq: out(dq), dk: out(dk), dv: out(dv) };
  });
}

/**
 * RoPE the Hugging Face way: inv_freq = 1 / base^(arange(0, D, 2) / D), cos / sin of
 * positions ⊗ inv_freq repeated over both halves, y = x·cos + rotate_half(x)·sin with
 * rotate_half(x) = [−x2, x1]. Returns y and the gradient of Σ y∘G with respect to x.
 */
export function tfRope(x: Float32Array, shape: [number, number, number, number], positions: Int32Array, base: number, g: Float32Array): { y: Float32Array; dx: Float32Array } {
  const [B, T, , D] = shape;
  return tf.tidy(() => {
    const invFreq = tf.div(1, tf.pow(tf.scalar(base), tf.div(tf.range(0, D, 2, 'float32'), D)));
    const ang = tf.mul(tf.reshape(tf.tensor1d(positions, 'int32').toFloat(), [B * T, 1]), tf.reshape(invFreq, [1, D / 2]));
    const emb = tf.reshape(tf.concat([ang, ang], 1), [B, T, 1, D]);
    const cos = tf.cos(emb);
    const sin = tf.sin(emb);
    const rope = (t: tf.Tensor) => {
      const [x1, x2] = tf.split(t, 2, 3);
      return tf.add(tf.mul(t, cos), tf.mul(tf.concat([tf.neg(x2), x1], 3), sin));
    };
    const xt = tf.tensor4d(x, shape);
    const gt = tf.tensor4d(g, shape);
    const y = rope(xt);
    const dx = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(rope(t), gt)))(xt);
    return { y: y.dataSync() as Float32Array, dx: dx.dataSync() as Float32Array };
  });
}
