/**
 * The per-token math of every loss, stated once in TypeScript: the CPU path (losses.ts, ppo.ts)
 * and the kernel's CPU reference (src/ops/policy_loss.ref.ts, value_loss.ref.ts) both call these,
 * and kernels/policy_loss.wgsl's token_terms / value_loss.wgsl are checked against that reference.
 *
 * Per token (ρ = exp(lp − old), A the advantage, clip(ρ) = min(max(ρ, 1 − ε_low), 1 + ε_high)):
 *   cross_entropy        ℓ = −lp
 *   importance_sampling  ℓ = −ρ·A
 *   ppo                  ℓ = −min(ρA, clip(ρ)A), and with dual clip c for A < 0: −max(that, c·A)
 *   grpo                 ppo's ℓ + β·k3,  k3 = exp(ref − lp) − (ref − lp) − 1 (Schulman's k3 KL)
 * without the entropy bonus (ℓ −= entropyCoef·H), which the callers add: its gradient goes to the
 * entropy (CPU path) or through the softmax (kernel), not to lp.
 *
 * Conventions shared with the kernel: ties take the unclipped branch (as tf.minimum's gradient
 * does); a dual clip of 0 or absent is off; results are written 0 − x so that a zero is never −0.
 */
import type { GrpoLoss, PolicyLossSpec, PpoLoss, Reduction } from './loss_spec.ts';

/** One token's loss (without the entropy bonus), its derivative in lp, and what the stats count. */
export interface Term {
  readonly loss: number;
  /** dℓ/dlp */
  readonly g: number;
  /** A clip (ratio or dual) zeroed the surrogate's gradient. */
  readonly clipped: boolean;
  /** old − lp, the k1 estimate of KL(old ‖ new) (0 for cross_entropy, which has no old policy). */
  readonly k1: number;
  /** k3 to the reference policy (grpo; 0 otherwise). */
  readonly k3: number;
}

export type TermFn<S extends PolicyLossSpec<Reduction>> = (spec: S, lp: number, old: number, a: number, ref: number) => Term;

/** PPO's clipped surrogate for one token (Schulman et al. 2017, eq. 7; dual clip: Ye et al. 2020). */
export function clippedSurrogate(spec: Pick<PpoLoss, 'clipLow' | 'clipHigh' | 'dualClip'>, lp: number, old: number, a: number): Term {
  const r = Math.exp(lp - old);
  const unclipped = r * a;
  const clippedValue = Math.min(Math.max(r, 1 - spec.clipLow), 1 + spec.clipHigh) * a;
  let obj = unclipped;
  let dobj = unclipped; // d(ρA)/dlp = ρA
  let clipped = false;
  if (clippedValue < unclipped) [obj, dobj, clipped] = [clippedValue, 0, true];
  const c = spec.dualClip ?? 0;
  if (c > 0 && a < 0 && c * a > obj) [obj, dobj, clipped] = [c * a, 0, true];
  return { loss: 0 - obj, g: 0 - dobj, clipped, k1: old - lp, k3: 0 };
}

/** GRPO per token (Shao et al. 2024, eq. 3–4): the PPO surrogate plus β·k3. */
export function grpoTerm(spec: Pick<GrpoLoss, 'clipLow' | 'clipHigh' | 'dualClip' | 'klBeta'>, lp: number, old: number, a: number, ref: number): Term {
  const t = clippedSurrogate(spec, lp, old, a);
  const d = ref - lp;
  const k3 = Math.exp(d) - d - 1;
  return { ...t, loss: t.loss + spec.klBeta * k3, g: t.g + spec.klBeta * (1 - Math.exp(d)), k3 };
}

/**
 * Per-token loss of each objective, without the entropy bonus, and its derivative in lp. The
 * mapped type makes a new kind in loss_spec.ts a compile error here until its term is written.
 */
export const POLICY_TERMS: { readonly [K in PolicyLossSpec['kind']]: TermFn<Extract<PolicyLossSpec<Reduction>, { kind: K }>> } = {
  cross_entropy: (_s, lp) => ({ loss: 0 - lp, g: -1, clipped: false, k1: 0, k3: 0 }),
  importance_sampling: (_s, lp, old, a) => {
    const ra = Math.exp(lp - old) * a;
    return { loss: 0 - ra, g: 0 - ra, clipped: false, k1: old - lp, k3: 0 };
  },
  ppo: (s, lp, old, a) => clippedSurrogate(s, lp, old, a),
  grpo: grpoTerm,
};

/** The term of `spec`'s kind at one token. */
export function policyTerm(spec: PolicyLossSpec<Reduction>, lp: number, old: number, a: number, ref: number): Term {
  return (POLICY_TERMS[spec.kind] as TermFn<PolicyLossSpec<Reduction>>)(spec, lp, old, a, ref);
}

/**
 * Clipped value loss for one token (PPO as implemented in OpenAI baselines ppo2):
 *   V_c = V_old + clamp(V − V_old, −ε, ε),  ℓ = 0.5·max((V − R)², (V_c − R)²)
 * with dℓ/dV = V − R on the unclipped branch, 0 on the clipped one (V_c is then constant);
 * ties take the unclipped branch. ε = null: ℓ = 0.5·(V − R)².
 */
export function clippedValueLoss(v: number, oldV: number, ret: number, clip: number | null): { loss: number; dv: number; clipped: boolean } {
  const u = v - ret;
  if (clip === null) return { loss: 0.5 * u * u, dv: u, clipped: false };
  const vc = Math.min(Math.max(v, oldV - clip), oldV + clip);
  const uc = vc - ret;
  if (uc * uc > u * u) return { loss: 0.5 * uc * uc, dv: 0, clipped: true };
  return { loss: 0.5 * u * u, dv: u, clipped: false };
}
