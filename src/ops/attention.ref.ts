/**
 * CPU reference of kernels/attention_{fwd,bwd,decode}.wgsl: plain loops, f64 inside, f32 results.
 *
 * Layout as on the GPU: q, out, dq [B, T, Hq, D]; k, v, dk, dv [B, T, Hkv, D]; lse, delta
 * [B, Hq, T]. Query head h reads kv head h / (Hq / Hkv). Key j is visible to row t when j ≤ t,
 * t − window < j (sliding window, when given) and (padded batch) t < lengths[b] or (packed batch)
 * seg[b, j] == seg[b, t] ≥ 0. Padding rows give out = 0, lse = 0, dq = 0.
 */

export interface AttentionDims {
  B: number;
  T: number;
  Hq: number;
  Hkv: number;
  D: number;
}

export interface AttentionRefOptions {
  /** Default 1 / sqrt(D). */
  scale?: number;
  /** i32 [B]: tokens per sequence. */
  lengths?: Int32Array;
  /** i32 [B, T]: segment id per token; negative = padding. */
  segments?: Int32Array;
  /** Sliding window: row t sees keys t − window < j ≤ t; undefined = unlimited. */
  window?: number;
}

/** Is row t of sequence b a real (non-padding) query row? */
export function rowLive(b: number, t: number, dims: AttentionDims, opts: AttentionRefOptions): boolean {
  if (opts.lengths) return t < Math.min(Math.max(opts.lengths[b], 0), dims.T);
  if (opts.segments) return opts.segments[b * dims.T + t] >= 0;
  return true;
}

/** May live row t see key j? */
export function keyVisible(b: number, t: number, j: number, dims: AttentionDims, opts: AttentionRefOptions): boolean {
  if (j > t) return false;
  if (opts.window !== undefined && j <= t - opts.window) return false;
  if (opts.segments) return opts.segments[b * dims.T + j] === opts.segments[b * dims.T + t];
  return true;
}

function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, n: number): number {
  let s = 0;
  for (let d = 0; d < n; d++) s += a[ao + d] * b[bo + d];
  return s;
}

/** Softmax probabilities of live row (b, t, h) over keys 0..t (0 where hidden), and the natural-log LSE. */
function rowProbs(q: Float32Array, k: Float32Array, b: number, t: number, h: number, dims: AttentionDims, opts: AttentionRefOptions): { p: Float64Array; lse: number } {
  const { T, Hq, Hkv, D } = dims;
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  const hk = Math.floor(h / (Hq / Hkv));
  const s = new Float64Array(t + 1).fill(-Infinity);
  let m = -Infinity;
  for (let j = 0; j <= t; j++) {
    if (!keyVisible(b, t, j, dims, opts)) continue;
    s[j] = scale * dot(q, ((b * T + t) * Hq + h) * D, k, ((b * T + j) * Hkv + hk) * D, D);
    m = Math.max(m, s[j]);
  }
  let l = 0;
  for (let j = 0; j <= t; j++) l += s[j] === -Infinity ? 0 : Math.exp(s[j] - m);
  const p = new Float64Array(t + 1);
  for (let j = 0; j <= t; j++) p[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m) / l;
  return { p, lse: m + Math.log(l) };
}

/** out = softmax(scale·q·kᵀ + mask)·v and lse (=, both written). */
export function attentionForwardRef(out: Float32Array, lse: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array, dims: AttentionDims, opts: AttentionRefOptions = {}): void {
  const { B, T, Hq, Hkv, D } = dims;
  out.fill(0);
  lse.fill(0);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / (Hq / Hkv));
      for (let t = 0; t < T; t++) {
        if (!rowLive(b, t, dims, opts)) continue;
        const { p, lse: l } = rowProbs(q, k, b, t, h, dims, opts);
        lse[(b * Hq + h) * T + t] = l;
        const o = ((b * T + t) * Hq + h) * D;
        for (let d = 0; d < D; d++) {
          let a = 0;
          for (let j = 0; j <= t; j++) a += p[j] * v[((b * T + j) * Hkv + hk) * D + d];
          out[o + d] = a;
        }
      }
    }
  }
}

/**
 * Gradients of sum(out ∘ dout) (=, all written): dq, dk, dv. Recomputes the probabilities from
 * q and k (it does not need the forward's out and lse).
 */
export function attentionBackwardRef(dq: Float32Array, dk: Float32Array, dv: Float32Array, dout: Float32Array, q: Float32Array, k: Float32Array, v: Float32Array, dims: AttentionDims, opts: AttentionRefOptions = {}): void {
  const { B, T, Hq, Hkv, D } = dims;
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  const gq = new Float64Array(dq.length);
  const gk = new Float64Array(dk.length);
  const gv = new Float64Array(dv.length);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / (Hq / Hkv));
      for (let t = 0; t < T; t++) {
        if (!rowLive(b, t, dims, opts)) continue;
        const { p } = rowProbs(q, k, b, t, h, dims, opts);
        const qo = ((b * T + t) * Hq + h) * D;
        // dp_j = dout·v_j ; ds_j = p_j (dp_j − Σ_i p_i dp_i)
        const dp = new Float64Array(t + 1);
        let delta = 0;
        for (let j = 0; j <= t; j++) {
          if (p[j] === 0) continue;
          dp[j] = dot(dout, qo, v, ((b * T + j) * Hkv + hk) * D, D);
          delta += p[j] * dp[j];
        }
        for (let j = 0; j <= t; j++) {
          if (p[j] === 0) continue;
          const ko = ((b * T + j) * Hkv + hk) * D;
          const ds = p[j] * (dp[j] - delta) * scale;
          for (let d = 0; d < D; d++) {
            gq[qo + d] += ds * k[ko + d];
            gk[ko + d] += ds * q[qo + d];
            gv[ko + d] += p[j] * dout[qo + d];
          }
        }
      }
    }
  }
  dq.set(gq);
  dk.set(gk);
  dv.set(gv);
}

/**
 * Decode (=): out[b, h] = attention of one query q[b, h] (at position lengths[b] − 1) over cache
 * rows 0..lengths[b]−1, or with a window only rows lengths[b] − window .. lengths[b] − 1.
 * q, out [B, Hq, D]; kCache, vCache [B, Tmax, Hkv, D]. A sequence with length 0 gives zeros.
 */
export function attentionDecodeRef(out: Float32Array, q: Float32Array, kCache: Float32Array, vCache: Float32Array, lengths: Int32Array, dims: { B: number; Tmax: number; Hq: number; Hkv: number; D: number }, opts: { scale?: number; window?: number } = {}): void {
  const { B, Tmax, Hq, Hkv, D } = dims;
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  out.fill(0);
  for (let b = 0; b < B; b++) {
    const n = Math.min(Math.max(lengths[b], 0), Tmax);
    const lo = opts.window === undefined ? 0 : Math.max(0, n - opts.window);
    for (let h = 0; h < Hq; h++) {
      const hk = Math.floor(h / (Hq / Hkv));
      const qo = (b * Hq + h) * D;
      const s = new Float64Array(n);
      let m = -Infinity;
      for (let j = lo; j < n; j++) {
        s[j] = scale * dot(q, qo, kCache, ((b * Tmax + j) * Hkv + hk) * D, D);
        m = Math.max(m, s[j]);
      }
      let l = 0;
      for (let j = lo; j < n; j++) l += Math.exp(s[j] - m);
      for (let d = 0; d < D; d++) {
        let a = 0;
        for (let j = lo; j < n; j++) a += Math.exp(s[j] - m) * vCache[((b * Tmax + j) * Hkv + hk) * D + d];
        out[qo + d] = n > 0 ? a / l : 0;
      }
    }
  }
}
