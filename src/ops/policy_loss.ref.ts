/**
 * CPU reference of kernels/policy_loss.wgsl: plain loops in f64, results stored as f32.
 * Same formulas and the same conventions as the kernel (ties take the unclipped branch, masked
 * tokens get loss 0 and a zero gradient row, out-of-range targets give NaN).
 */
import type { Aggregation, PolicyLossSpec } from './policy_loss.ts';

export interface PolicyLossRefInputs {
  logits: Float32Array; // [N, V]
  targets: Int32Array; // [N]
  weights: Float32Array; // [N]
  oldLogprobs?: Float32Array;
  advantages?: Float32Array;
  refLogprobs?: Float32Array;
  seqIds?: Int32Array;
  numSequences?: number;
}

export interface PolicyLossRefOutputs {
  dlogits: Float32Array; // [N, V]
  logprobs: Float32Array; // [N]
  entropy: Float32Array; // [N]
  loss: Float32Array; // [N]
  stats: Float32Array; // [6], as POLICY_STATS
}

interface Terms {
  loss: number;
  g: number; // dℓ/dlp
  clipped: number;
  k3: number;
}

type TermFn<S extends PolicyLossSpec> = (spec: S, lp: number, old: number, a: number, ref: number) => Terms;

function clipped(spec: { clipLow: number; clipHigh: number; dualClip?: number }, lp: number, old: number, a: number): Terms {
  const r = Math.exp(lp - old);
  const s1 = r * a;
  const s2 = Math.min(Math.max(r, 1 - spec.clipLow), 1 + spec.clipHigh) * a;
  let obj = s1;
  let dobj = s1;
  let clip = 0;
  if (s2 < s1) [obj, dobj, clip] = [s2, 0, 1];
  const c = spec.dualClip ?? 0;
  if (c > 0 && a < 0 && c * a > obj) [obj, dobj, clip] = [c * a, 0, 1];
  return { loss: -obj, g: -dobj, clipped: clip, k3: 0 };
}

/** Per-token loss of each variant (without the entropy bonus) and its derivative in lp. */
export const TERMS: { readonly [K in PolicyLossSpec['kind']]: TermFn<Extract<PolicyLossSpec, { kind: K }>> } = {
  cross_entropy: (_s, lp) => ({ loss: -lp, g: -1, clipped: 0, k3: 0 }),
  importance_sampling: (_s, lp, old, a) => {
    const ra = Math.exp(lp - old) * a;
    return { loss: -ra, g: -ra, clipped: 0, k3: 0 };
  },
  ppo: (s, lp, old, a) => clipped(s, lp, old, a),
  grpo: (s, lp, old, a, ref) => {
    const t = clipped(s, lp, old, a);
    const d = ref - lp;
    const k3 = Math.exp(d) - d - 1;
    return { loss: t.loss + s.klBeta * k3, g: t.g + s.klBeta * (1 - Math.exp(d)), clipped: t.clipped, k3 };
  },
};

/** scale_i = w_i / normalizer of the aggregation (0 where masked). */
export function tokenScales(aggregation: Aggregation, weights: Float32Array, seqIds?: Int32Array, numSequences = 1): Float64Array {
  const n = weights.length;
  const scale = new Float64Array(n);
  const counts = new Float64Array(Math.max(1, numSequences));
  let unmasked = 0;
  for (let i = 0; i < n; i++) {
    if (weights[i] === 0) continue;
    unmasked++;
    const s = seqIds ? seqIds[i] : 0;
    if (s >= 0 && s < counts.length) counts[s]++;
  }
  let nonempty = 0;
  for (const c of counts) if (c > 0) nonempty++;
  const denominators: Record<Aggregation, (i: number) => number> = {
    'token_mean': () => unmasked,
    'sequence_mean': (i) => {
      const s = seqIds![i];
      return s >= 0 && s < numSequences ? counts[s] * nonempty : Infinity; // outside every sequence: masked
    },
    sum: () => 1,
  };
  const denom = denominators[aggregation];
  for (let i = 0; i < n; i++) scale[i] = weights[i] === 0 ? 0 : weights[i] / denom(i);
  return scale;
}

export function policyLossRef(inp: PolicyLossRefInputs, spec: PolicyLossSpec): PolicyLossRefOutputs {
  const n = inp.targets.length;
  const v = n === 0 ? 0 : inp.logits.length / n;
  const out: PolicyLossRefOutputs = {
    dlogits: new Float32Array(n * v),
    logprobs: new Float32Array(n),
    entropy: new Float32Array(n),
    loss: new Float32Array(n),
    stats: new Float32Array(6),
  };
  const terms = TERMS[spec.kind] as TermFn<PolicyLossSpec>;
  const ent = spec.entropyCoef ?? 0;
  const scale = tokenScales(spec.aggregation, inp.weights, inp.seqIds, inp.numSequences);
  const zero = new Float32Array(n);
  const [old, adv, ref] = [inp.oldLogprobs ?? zero, inp.advantages ?? zero, inp.refLogprobs ?? zero];
  let total = 0, clip = 0, count = 0, kl = 0, k3 = 0, hs = 0;
  for (let i = 0; i < n; i++) {
    const z = inp.logits.subarray(i * v, (i + 1) * v);
    let m = -Infinity;
    for (let j = 0; j < v; j++) m = Math.max(m, z[j]);
    let s = 0;
    for (let j = 0; j < v; j++) s += Math.exp(z[j] - m);
    const lse = m + Math.log(s);
    let h = 0;
    for (let j = 0; j < v; j++) h -= Math.exp(z[j] - lse) * (z[j] - lse);
    const t = inp.targets[i];
    const valid = t >= 0 && t < v;
    const lp = valid ? z[t] - lse : NaN;
    const tm = terms(spec, lp, old[i], adv[i], ref[i]);
    const g = valid ? tm.g : NaN;
    out.logprobs[i] = lp;
    out.entropy[i] = h;
    if (scale[i] === 0) continue; // masked: loss 0, gradient 0
    const li = tm.loss - ent * h;
    out.loss[i] = li;
    for (let j = 0; j < v; j++) {
      const lz = z[j] - lse;
      const pj = Math.exp(lz);
      out.dlogits[i * v + j] = scale[i] * (g * ((j === t ? 1 : 0) - pj) + ent * pj * (lz + h));
    }
    total += scale[i] * li;
    clip += tm.clipped;
    count++;
    kl += spec.kind === 'cross_entropy' ? 0 : old[i] - lp;
    k3 += tm.k3;
    hs += h;
  }
  const inv = count === 0 ? 0 : 1 / count;
  out.stats.set([total, clip * inv, kl * inv, k3 * inv, hs * inv, count]);
  return out;
}
