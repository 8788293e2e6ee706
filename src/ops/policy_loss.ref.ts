/**
 * CPU reference of kernels/policy_loss.wgsl: plain loops in f64, results stored as f32. The
 * per-token terms are src/algorithms/loss_terms.ts's, the same statement the CPU training path
 * uses; here they are chained through the softmax to the logits. Same conventions as the kernel
 * (ties take the unclipped branch, masked tokens get loss 0 and a zero gradient row, out-of-range
 * targets give NaN).
 */
import type { PolicyLossSpec, Reduction } from '../algorithms/loss_spec.ts';
import { policyTerm } from '../algorithms/loss_terms.ts';

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

/** scale_i = w_i / normalizer of the aggregation (0 where masked). */
export function tokenScales(aggregation: Reduction, weights: Float32Array, seqIds?: Int32Array, numSequences = 1): Float64Array {
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
  const denominators: Record<Reduction, (i: number) => number> = {
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

export function policyLossRef(inp: PolicyLossRefInputs, spec: PolicyLossSpec<Reduction>): PolicyLossRefOutputs {
  const n = inp.targets.length;
  const v = n === 0 ? 0 : inp.logits.length / n;
  const out: PolicyLossRefOutputs = {
    dlogits: new Float32Array(n * v),
    logprobs: new Float32Array(n),
    entropy: new Float32Array(n),
    loss: new Float32Array(n),
    stats: new Float32Array(6),
  };
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
    const tm = policyTerm(spec, lp, old[i], adv[i], ref[i]);
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
    clip += tm.clipped ? 1 : 0;
    count++;
    kl += tm.k1;
    k3 += tm.k3;
    hs += h;
  }
  const inv = count === 0 ? 0 : 1 / count;
  out.stats.set([total, clip * inv, kl * inv, k3 * inv, hs * inv, count]);
  return out;
}
