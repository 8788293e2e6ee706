/**
 * CPU reference of the token-level objectives a LossSpec names — the "naive twin" of the runtime's
 * fused loss kernel, written over datums and the new log-probs of their targets, with the
 * gradient d(loss)/d(logprob) per token. (The kernel chains that through the softmax to the
 * logits; entropy's gradient arrives as d(loss)/dH per token.)
 *
 * The per-token terms are loss_terms.ts's (shared with src/ops/policy_loss.ref.ts); here they are
 * reduced over datums: Loss = Σ_t scale_t·(ℓ_t − entropyCoef·H_t) with scale_t from
 * `aggregationScales`, H_t when entropies are given; masked tokens add nothing.
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Datum } from './datum.ts';
import type { Aggregation, PolicyLossSpec } from './loss_spec.ts';
import { policyTerm } from './loss_terms.ts';

/**
 * [S][T_s] per-token weights of an aggregation over S sequences' loss masks:
 *   token_mean:    1 / (masked tokens over all sequences)
 *   sequence_mean: 1 / (masked tokens of the sequence · sequences with any masked token)
 * Σ scale·ℓ is then the aggregated loss; pack.ts writes the same weights into batches.
 */
export function aggregationScales(masksS: readonly (readonly number[])[], aggregation: Aggregation): number[][] {
  const counts = masksS.map((m) => m.reduce((s, x) => s + (x !== 0 ? 1 : 0), 0));
  const total = counts.reduce((s, c) => s + c, 0);
  const nonEmpty = counts.filter((c) => c > 0).length;
  return masksS.map((m, s) =>
    m.map((x) => {
      if (x === 0) return 0;
      return aggregation === 'token_mean' ? 1 / total : 1 / (counts[s] * nonEmpty);
    }),
  );
}

/** One sequence's inputs to the reference: its datum and the current policy's [T] log-probs. */
export interface PolicyLossInput {
  readonly datum: Datum;
  readonly logprobsT: readonly number[];
  /** [T] entropy of the current policy at each position (for the entropy bonus). */
  readonly entropyT?: readonly number[];
}

export interface PolicyLossResult {
  readonly loss: number;
  /** [S][T] d(loss)/d(logprob of target). */
  readonly dlogprobsST: number[][];
  /** [S][T] d(loss)/d(entropy). */
  readonly dentropyST: number[][];
  /** Means over masked tokens: clip fraction, k1 KL(old‖new) = mean(old − lp), k3 KL to ref. */
  readonly stats: { readonly clipFraction: number; readonly approxKl: number; readonly refKl: number; readonly tokens: number };
}

/** The aggregated loss of `spec` over sequences and its gradients; see the header for formulas. */
export function policyLossReference(spec: PolicyLossSpec, inputs: readonly PolicyLossInput[]): PolicyLossResult {
  const entropyCoef = spec.entropyCoef ?? 0;
  const scales = aggregationScales(inputs.map((x) => x.datum.lossMaskT), spec.aggregation);
  let loss = 0, clipped = 0, kl = 0, k3 = 0, tokens = 0;
  const dlogprobsST: number[][] = [];
  const dentropyST: number[][] = [];
  inputs.forEach(({ datum, logprobsT, entropyT }, s) => {
    const T = datum.targetsT.length;
    if (logprobsT.length !== T || (entropyT !== undefined && entropyT.length !== T)) {
      throw new InvalidInputError('policyLossReference', `sequence ${datum.sequenceId}: ${T} targets but ${logprobsT.length} logprobs${entropyT ? ` and ${entropyT.length} entropies` : ''}`);
    }
    if (spec.kind === 'grpo' && datum.refLogprobsT === undefined) throw new InvalidInputError('policyLossReference', `grpo needs refLogprobsT (sequence ${datum.sequenceId})`);
    const dl = new Array<number>(T).fill(0);
    const dh = new Array<number>(T).fill(0);
    for (let t = 0; t < T; t++) {
      const w = scales[s][t];
      if (w === 0) continue;
      const x = policyTerm(spec, logprobsT[t], datum.oldLogprobsT[t], datum.advantagesT[t], datum.refLogprobsT?.[t] ?? 0);
      const h = entropyT?.[t] ?? 0;
      loss += w * (x.loss - entropyCoef * h);
      dl[t] = w * x.g;
      dh[t] = 0 - w * entropyCoef;
      clipped += x.clipped ? 1 : 0;
      kl += x.k1;
      k3 += x.k3;
      tokens++;
    }
    dlogprobsST.push(dl);
    dentropyST.push(dh);
  });
  const inv = tokens === 0 ? 0 : 1 / tokens;
  return { loss, dlogprobsST, dentropyST, stats: { clipFraction: clipped * inv, approxKl: kl * inv, refKl: k3 * inv, tokens } };
}
