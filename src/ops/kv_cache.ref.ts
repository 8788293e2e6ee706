/**
 * CPU reference of kernels/kv_cache.wgsl: plain loops over flat row-major arrays, same layouts and
 * same semantics as src/ops/kv_cache.ts. Arrays named as outputs are updated in place; everything
 * is an exact copy.
 */

export interface KvAppendRefArgs {
  B: number;
  Tn: number;
  Hkv: number;
  D: number;
  Tmax: number;
  /** [B, Tmax, Hkv, D], updated. */
  kCache: Float32Array;
  vCache: Float32Array;
  /** [B, Tn, Hkv, D] */
  k: Float32Array;
  v: Float32Array;
  start: Int32Array;
  count?: Int32Array;
}

export function kvAppendRef(a: KvAppendRefArgs): void {
  const { B, Tn, Hkv, D, Tmax } = a;
  for (let b = 0; b < B; b++) {
    const real = a.count ? Math.min(Math.max(a.count[b], 0), Tn) : Tn;
    for (let t = 0; t < real; t++) {
      const row = a.start[b] + t;
      if (row < 0 || row >= Tmax) continue;
      for (let h = 0; h < Hkv; h++) {
        const src = ((b * Tn + t) * Hkv + h) * D;
        const dst = ((b * Tmax + row) * Hkv + h) * D;
        for (let d = 0; d < D; d++) {
          a.kCache[dst + d] = a.k[src + d];
          a.vCache[dst + d] = a.v[src + d];
        }
      }
    }
  }
}

/** lengths[b] = clamp(lengths[b] + count[b], 0, tmax), in place. */
export function kvExtendRef(lengths: Int32Array, count: Int32Array, tmax: number): void {
  for (let b = 0; b < lengths.length; b++) lengths[b] = Math.min(Math.max(lengths[b] + count[b], 0), tmax);
}

/** The decode-step bookkeeping of kvAdvance, in place; history is u32 [K, B, 3]. */
export function kvAdvanceRef(
  state: { lengths: Int32Array; positions: Int32Array; keys: Uint32Array },
  sampled: { tokens: Int32Array; logprobs: Float32Array; logprobsRaw: Float32Array },
  history: Uint32Array, step: number, tmax: number,
): void {
  const B = state.lengths.length;
  const bits = new Uint32Array(1);
  const fbits = new Float32Array(bits.buffer);
  for (let b = 0; b < B; b++) {
    const o = (step * B + b) * 3;
    if (o + 2 < history.length) {
      history[o] = sampled.tokens[b] >>> 0;
      fbits[0] = sampled.logprobs[b];
      history[o + 1] = bits[0];
      fbits[0] = sampled.logprobsRaw[b];
      history[o + 2] = bits[0];
    }
    const len = state.lengths[b];
    state.positions[b] = len;
    state.lengths[b] = Math.min(len + 1, tmax);
    state.keys[2 * b + 1] = (state.keys[2 * b + 1] + 1) >>> 0;
  }
}
