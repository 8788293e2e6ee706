/**
 * CPU reference of kernels/sample.wgsl, in f64 with an explicit sort: the same kept set (top-k
 * over "larger logit first, lower index first", then the shortest top-p prefix), the same random
 * number (src/util/rng.ts's Philox: `Rng.restore({ seed, stream, position: 4·counter })`), and
 * the same inverse-CDF draw in index order. The GPU sums in f32, so near a decision boundary the
 * two may differ; each row reports its `margin`: the distance, relative to the mass involved,
 * from the closer of the top-p cut and the draw to its boundary. Where the margin is far above
 * f32 rounding (≥ 4e-6: the GPU's
 * f32 sums of ≤ a few hundred terms per thread err by ~1e-6 relative) the GPU must pick the same token.
 */
import { Rng } from '../util/rng.ts';
import { NON_FINITE_TOKEN, type SampleOptions, sampleSettings } from './sample.ts';

export interface SampleRefResult {
  tokens: Int32Array;
  logprobs: Float32Array;
  logprobsRaw: Float32Array;
  /** Per row: min relative distance of the top-p cut and of the draw from their boundaries. */
  margin: Float64Array;
  /** Per row: the kept set, in the order "larger logit first, lower index first". */
  kept: number[][];
}

/** Sample B rows of V logits (flat row-major). `keys`: per-row (stream, counter), flat [B·2]. */
export function sampleRef(logits: Float32Array, b: number, v: number, opts: Omit<SampleOptions, 'keys'> & { keys?: Uint32Array }): SampleRefResult {
  const s = sampleSettings({ ...opts, keys: undefined });
  const out: SampleRefResult = {
    tokens: new Int32Array(b), logprobs: new Float32Array(b), logprobsRaw: new Float32Array(b),
    margin: new Float64Array(b).fill(Infinity), kept: [],
  };
  for (let r = 0; r < b; r++) {
    const x = logits.subarray(r * v, (r + 1) * v);
    let m = -Infinity;
    for (let i = 0; i < v; i++) m = Math.max(m, x[i]);
    // A NaN or +Inf, or no finite logit: NON_FINITE_TOKEN (see kernels/sample.wgsl).
    if (!Number.isFinite(m)) { // Math.max gives NaN when any logit is NaN
      out.tokens[r] = NON_FINITE_TOKEN;
      out.kept.push([]);
      continue;
    }
    let z1 = 0;
    for (let i = 0; i < v; i++) z1 += Math.exp(x[i] - m);
    const lse1 = m + Math.log(z1);
    const order = Array.from({ length: v }, (_, i) => i).sort((a, c) => x[c] - x[a] || a - c);
    if (s.temperature === 0) {
      const tok = order[0];
      out.tokens[r] = tok;
      out.logprobs[r] = 0;
      out.logprobsRaw[r] = x[tok] - lse1;
      out.kept.push([tok]);
      continue;
    }
    const e = (i: number) => Math.exp((x[i] - m) / s.temperature);
    let kept = s.topK > 0 && s.topK < v ? order.slice(0, s.topK) : order;
    if (s.topP < 1) {
      let zk = 0;
      for (const i of kept) zk += e(i);
      const target = s.topP * zk;
      let cum = 0;
      let len = kept.length;
      for (let j = 0; j < kept.length; j++) {
        const before = cum;
        cum += e(kept[j]);
        if (cum >= target) {
          len = j + 1;
          out.margin[r] = Math.min(out.margin[r], (target - before) / zk, (cum - target) / zk);
          break;
        }
      }
      kept = kept.slice(0, len);
    }
    out.kept.push(kept);
    const inF = new Uint8Array(v);
    for (const i of kept) inF[i] = 1;
    let total = 0;
    for (let i = 0; i < v; i++) if (inF[i]) total += e(i);
    const stream = opts.keys ? opts.keys[2 * r] : (s.streamBase + r) >>> 0;
    const counter = opts.keys ? opts.keys[2 * r + 1] : s.step;
    const u = Rng.restore({ seed: s.seed, stream, position: 4 * counter }).nextFloat();
    const goal = u * total;
    let cum = 0;
    let tok = -1;
    for (let i = 0; i < v && tok < 0; i++) {
      if (!inF[i]) continue;
      const before = cum;
      cum += e(i);
      if (cum > goal) {
        tok = i;
        out.margin[r] = Math.min(out.margin[r], (goal - before) / total, (cum - goal) / total);
      }
    }
    if (tok < 0) tok = kept[kept.length - 1];
    out.tokens[r] = tok;
    out.logprobs[r] = (x[tok] - m) / s.temperature - Math.log(total);
    out.logprobsRaw[r] = x[tok] - lse1;
  }
  return out;
}
