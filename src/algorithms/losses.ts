/**
 * CPU reference of the token-level objectives a LossSpec names — the "naive twin" of the runtime's
 * fused loss kernel, written over datums and the new log-probs of their targets, with the
 * gradient d(loss)/d(logprob) per token. (The kernel chains that through the softmax to the
 * logits; entropy's gradient arrives as d(loss)/dH per token.)
 *
 * Per token (ρ = exp(lp − old), A the advantage, clip(ρ) = min(max(ρ, 1 − ε_low), 1 + ε_high)):
 *   cross_entropy        ℓ = −lp
 *   importance_sampling  ℓ = −ρ·A
 *   ppo                  ℓ = −min(ρA, clip(ρ)A), and with dual clip c for A < 0: −max(that, c·A)
 *   grpo                 ppo's ℓ + β·k3,  k3 = exp(ref − lp) − (ref − lp) − 1 (Schulman's k3 KL)
 *   every policy loss    ℓ −= entropyCoef·H when entropies are given
 * Loss = Σ_t scale_t·ℓ_t with scale_t from `aggregationScales`. Conventions shared with
 * src/ops/policy_loss.ref.ts: ties take the unclipped branch; masked tokens add nothing.
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Datum } from './datum.ts';
import type { Aggregation, GrpoLoss, PolicyLossSpec, PpoLoss } from './loss_spec.ts';

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

interface Term {
  readonly loss: number;
  /** dℓ/dlp */
  readonly g: number;
  readonly clipped: boolean;
  readonly k3: number;
}

type TermFn<S extends PolicyLossSpec> = (spec: S, lp: number, old: number, a: number, ref: number) => Term;

/** PPO's clipped surrogate for one token (Schulman et al. 2017, eq. 7; dual clip: Ye et al. 2020). */
export function clippedSurrogate(spec: Pick<PpoLoss, 'clipLow' | 'clipHigh' | 'dualClip'>, lp: number, old: number, a: number): Term {
  const r = Math.exp(lp - old);
  const unclipped = r * a;
  const clippedValue = Math.min(Math.max(r, 1 - spec.clipLow), 1 + spec.clipHigh) * a;
  let obj = unclipped;
  let dobj = unclipped; // d(ρA)/dlp = ρA
  let clipped = false;
  if (clippedValue < unclipped) [obj, dobj, clipped] = [clippedValue, 0, true];
  const c = spec.dualClip;
  if (c !== undefined && a < 0 && c * a > obj) [obj, dobj, clipped] = [c * a, 0, true];
  return { loss: 0 - obj, g: 0 - dobj, clipped, k3: 0 }; // 0 − x: no −0 when x is 0
}

/** GRPO per token (Shao et al. 2024, eq. 3–4): the PPO surrogate plus β·k3. */
export function grpoTerm(spec: Pick<GrpoLoss, 'clipLow' | 'clipHigh' | 'klBeta'>, lp: number, old: number, a: number, ref: number): Term {
  const t = clippedSurrogate(spec, lp, old, a);
  const d = ref - lp;
  const k3 = Math.exp(d) - d - 1;
  return { loss: t.loss + spec.klBeta * k3, g: t.g + spec.klBeta * (1 - Math.exp(d)), clipped: t.clipped, k3 };
}

/** Per-token loss of each objective, without the entropy bonus, and its derivative in lp. */
export const POLICY_TERMS: { readonly [K in PolicyLossSpec['kind']]: TermFn<Extract<PolicyLossSpec, { kind: K }>> } = {
  cross_entropy: (_s, lp) => ({ loss: -lp, g: -1, clipped: false, k3: 0 }),
  importance_sampling: (_s, lp, old, a) => {
    const ra = Math.exp(lp - old) * a;
    return { loss: -ra, g: -ra, clipped: false, k3: 0 };
  },
  ppo: (s, lp, old, a) => clippedSurrogate(s, lp, old, a),
  grpo: grpoTerm,
};

/** The aggregated loss of `spec` over sequences and its gradients; see the header for formulas. */
export function policyLossReference(spec: PolicyLossSpec, inputs: readonly PolicyLossInput[]): PolicyLossResult {
  const term = POLICY_TERMS[spec.kind] as TermFn<PolicyLossSpec>;
  const entropyCoef = spec.kind === 'ppo' || spec.kind === 'grpo' ? spec.entropyCoef : 0;
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
      const x = term(spec, logprobsT[t], datum.oldLogprobsT[t], datum.advantagesT[t], datum.refLogprobsT?.[t] ?? 0);
      const h = entropyT?.[t] ?? 0;
      loss += w * (x.loss - entropyCoef * h);
      dl[t] = w * x.g;
      dh[t] = 0 - w * entropyCoef;
      clipped += x.clipped ? 1 : 0;
      kl += spec.kind === 'cross_entropy' ? 0 : datum.oldLogprobsT[t] - logprobsT[t];
      k3 += x.k3;
      tokens++;
    }
    dlogprobsST.push(dl);
    dentropyST.push(dh);
  });
  const inv = tokens === 0 ? 0 : 1 / tokens;
  return { loss, dlogprobsST, dentropyST, stats: { clipFraction: clipped * inv, approxKl: kl * inv, refKl: k3 * inv, tokens } };
}
