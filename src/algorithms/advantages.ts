/**
 * Advantage estimators as pure functions over plain arrays (no trajectories, no GPU types).
 * Legend: T time steps (policy tokens), G attempts in a group, N episodes in a batch.
 *
 * Departures, each said where it happens: group std is the sample std (N−1, as TRL's GRPO);
 * RLOO with G = 1 and GRPO with one attempt give advantage 0 (nothing to compare against); the
 * REINFORCE baseline is 0 on the very first batch, then a moving average of batch means.
 */
import { InvalidInputError } from '../env/errors.ts';

function finiteArray(where: string, name: string, xs: readonly number[]): void {
  for (let i = 0; i < xs.length; i++) {
    if (!Number.isFinite(xs[i])) throw new InvalidInputError(where, `${name}[${i}] is ${xs[i]}, not finite`);
  }
}

export interface GaeOptions {
  /** Discount γ in [0, 1]. */
  readonly gamma: number;
  /** GAE λ in [0, 1]: 0 = one-step TD, 1 = Monte Carlo minus the value. */
  readonly lambda: number;
}

/**
 * Generalized Advantage Estimation (Schulman et al. 2016, "High-Dimensional Continuous Control
 * Using Generalized Advantage Estimation"):
 *   δ_t = r_t + γ·V_{t+1} − V_t,   Â_t = δ_t + γλ·Â_{t+1},   R_t = Â_t + V_t,
 * with V_T = `bootstrapValue` (0 for an episode that ended; the critic's estimate for a truncated one).
 * Inputs [T] rewardsT, valuesT; outputs [T] advantagesT and returnsT (the critic's targets).
 */
export function gae(
  rewardsT: readonly number[],
  valuesT: readonly number[],
  options: GaeOptions,
  bootstrapValue = 0,
): { advantagesT: number[]; returnsT: number[] } {
  const { gamma, lambda } = options;
  if (rewardsT.length !== valuesT.length) throw new InvalidInputError('gae', `rewardsT has ${rewardsT.length} steps, valuesT ${valuesT.length}`);
  if (!(gamma >= 0 && gamma <= 1) || !(lambda >= 0 && lambda <= 1)) throw new InvalidInputError('gae', `gamma and lambda must be in [0, 1], got ${gamma}, ${lambda}`);
  finiteArray('gae', 'rewardsT', rewardsT);
  finiteArray('gae', 'valuesT', valuesT);
  const T = rewardsT.length;
  const advantagesT = new Array<number>(T);
  const returnsT = new Array<number>(T);
  let next = 0;
  for (let t = T - 1; t >= 0; t--) {
    const nextValue = t === T - 1 ? bootstrapValue : valuesT[t + 1];
    const delta = rewardsT[t] + gamma * nextValue - valuesT[t];
    next = delta + gamma * lambda * next;
    advantagesT[t] = next;
    returnsT[t] = next + valuesT[t];
  }
  return { advantagesT, returnsT };
}

/**
 * GAE over the positions where maskT is 1 only: environment and prompt tokens are not time steps,
 * so consecutive policy tokens across turns are consecutive steps (as multi-turn PPO does it).
 * Positions with mask 0 get advantage 0 and return 0; a reward there is an error.
 */
export function maskedGae(
  rewardsT: readonly number[],
  valuesT: readonly number[],
  maskT: readonly number[],
  options: GaeOptions,
  bootstrapValue = 0,
): { advantagesT: number[]; returnsT: number[] } {
  if (rewardsT.length !== maskT.length || valuesT.length !== maskT.length) {
    throw new InvalidInputError('maskedGae', `lengths differ: rewards ${rewardsT.length}, values ${valuesT.length}, mask ${maskT.length}`);
  }
  const at: number[] = [];
  maskT.forEach((m, t) => {
    if (m !== 0) at.push(t);
    else if (rewardsT[t] !== 0) throw new InvalidInputError('maskedGae', `reward ${rewardsT[t]} at masked position ${t}`);
  });
  const inner = gae(at.map((t) => rewardsT[t]), at.map((t) => valuesT[t]), options, bootstrapValue);
  const advantagesT = new Array<number>(maskT.length).fill(0);
  const returnsT = new Array<number>(maskT.length).fill(0);
  at.forEach((t, k) => {
    advantagesT[t] = inner.advantagesT[k];
    returnsT[t] = inner.returnsT[k];
  });
  return { advantagesT, returnsT };
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

export interface GroupRelativeOptions {
  /** Divide by the group's std (GRPO) or not (Dr. GRPO). Default true. */
  readonly normalizeStd?: boolean;
  /** Added to the std. Default 1e-6. */
  readonly eps?: number;
}

/**
 * Group-relative advantages of GRPO (Shao et al. 2024, "DeepSeekMath", §4.1.2):
 *   Â_i = (r_i − mean(r)) / (std(r) + ε)     with normalizeStd (std: sample, N−1; 0 when G = 1)
 *   Â_i =  r_i − mean(r)                      without — Dr. GRPO (Liu et al. 2025, "Understanding
 *                                             R1-Zero-Like Training"), which removes the std bias.
 * Input [G] rewards of G attempts at one task; output [G].
 */
export function groupRelativeAdvantages(rewardsG: readonly number[], options: GroupRelativeOptions = {}): number[] {
  finiteArray('groupRelativeAdvantages', 'rewardsG', rewardsG);
  const G = rewardsG.length;
  if (G === 0) return [];
  const m = mean(rewardsG);
  const centered = rewardsG.map((r) => r - m);
  if (options.normalizeStd === false) return centered;
  const std = G < 2 ? 0 : Math.sqrt(centered.reduce((s, c) => s + c * c, 0) / (G - 1));
  const eps = options.eps ?? 1e-6;
  return centered.map((c) => c / (std + eps));
}

/**
 * REINFORCE Leave-One-Out (Kool et al. 2019, "Buy 4 REINFORCE Samples, Get a Baseline for Free!";
 * Ahmadian et al. 2024, "Back to Basics"): each attempt's baseline is the mean of the others,
 *   Â_i = r_i − (1/(G−1)) Σ_{j≠i} r_j  =  G/(G−1) · (r_i − mean(r)).
 * Input [G]; output [G]; G = 1 gives [0].
 */
export function rlooAdvantages(rewardsG: readonly number[]): number[] {
  finiteArray('rlooAdvantages', 'rewardsG', rewardsG);
  const G = rewardsG.length;
  if (G < 2) return rewardsG.map(() => 0);
  const total = rewardsG.reduce((s, r) => s + r, 0);
  return rewardsG.map((r) => r - (total - r) / (G - 1));
}

/** The moving-average baseline's state (plain data, checkpointed with the run). */
export interface MovingBaseline {
  readonly value: number;
  /** Batches seen; 0 = no baseline yet. */
  readonly count: number;
}

export const EMPTY_BASELINE: MovingBaseline = Object.freeze({ value: 0, count: 0 });

/**
 * REINFORCE with a baseline (Williams 1992, "Simple Statistical Gradient-Following Algorithms"):
 *   Â_i = r_i − b,   then   b ← m·b + (1 − m)·mean(r)   (b := mean(r) after the first batch).
 * The baseline used is the one from *before* this batch, so it does not depend on r_i (unbiased).
 * Input [N] returns; output [N] advantages and the updated baseline.
 */
export function reinforceAdvantages(
  rewardsN: readonly number[],
  baseline: MovingBaseline,
  momentum = 0.9,
): { advantagesN: number[]; baseline: MovingBaseline } {
  finiteArray('reinforceAdvantages', 'rewardsN', rewardsN);
  if (!(momentum >= 0 && momentum < 1)) throw new InvalidInputError('reinforceAdvantages', `momentum must be in [0, 1), got ${momentum}`);
  const b = baseline.count === 0 ? 0 : baseline.value;
  const advantagesN = rewardsN.map((r) => r - b);
  if (rewardsN.length === 0) return { advantagesN, baseline };
  const m = mean(rewardsN);
  const value = baseline.count === 0 ? m : momentum * baseline.value + (1 - momentum) * m;
  return { advantagesN, baseline: Object.freeze({ value, count: baseline.count + 1 }) };
}
