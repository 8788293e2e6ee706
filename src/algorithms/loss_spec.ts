/**
 * The loss spec: plain data telling the runtime which objective its fused loss kernel computes
 * over a packed batch, with its hyperparameters. One constructor per objective fills defaults and
 * validates (ConfigError); the runtime dispatches on `kind` through a table, never an if-chain.
 *
 * These are the only spec types: the kernel's host wrapper (src/ops/policy_loss.ts) and its CPU
 * reference take a `PolicyLossSpec<Reduction>` from here as it is, and the per-token math of each
 * kind is written once, in loss_terms.ts. The type parameter is the aggregation the spec may name:
 * users and the CPU path see `Aggregation`; the kernel also takes 'sum', which the trainer uses
 * with pack.ts's per-step token scales as weights (src/model/train_loss.ts).
 *
 * Aggregation: token_mean = Σ ℓ / (policy tokens in the batch) — DAPO's choice (Yu et al. 2025),
 * every token weighs the same; sequence_mean = mean over sequences of each sequence's token mean —
 * the GRPO paper's 1/G Σ 1/|o_i| Σ_t (Shao et al. 2024), which favours short answers' tokens.
 */
import { ConfigError } from '../errors.ts';

export type Aggregation = 'token_mean' | 'sequence_mean';
/** What the kernel reduces by: an Aggregation, or 'sum' (Σ w·ℓ, the weights as given). */
export type Reduction = Aggregation | 'sum';

/** Fields every token-level objective has. */
interface TokenLoss<A extends Reduction> {
  readonly aggregation: A;
  /** Entropy bonus: ℓ −= entropyCoef·H. Absent = 0; the constructors set it for ppo and grpo. */
  readonly entropyCoef?: number;
}

/** Supervised fine-tuning: ℓ_t = −log π(y_t). */
export interface CrossEntropyLoss<A extends Reduction = Aggregation> extends TokenLoss<A> {
  readonly kind: 'cross_entropy';
}

/** Off-policy policy gradient with the importance ratio: ℓ_t = −ρ_t·A_t, ρ_t = exp(lp_t − old_t). */
export interface ImportanceSamplingLoss<A extends Reduction = Aggregation> extends TokenLoss<A> {
  readonly kind: 'importance_sampling';
}

/** PPO critic loss: 0.5·max((V−R)², (clip(V, V_old ± clip) − R)²)·coef; clip null = unclipped. */
export interface ValueLossSpec {
  /** ε of the clip around the rollout-time value, or null for no clipping. */
  readonly clip: number | null;
  /** Multiplier of the loss (the value-function coefficient). */
  readonly coef: number;
}

/** PPO clipped surrogate (Schulman et al. 2017) with asymmetric clip, optional dual clip, entropy bonus. */
export interface PpoLoss<A extends Reduction = Aggregation> extends TokenLoss<A> {
  readonly kind: 'ppo';
  /** ε_low: the ratio is clipped below at 1 − clipLow. */
  readonly clipLow: number;
  /** ε_high: the ratio is clipped above at 1 + clipHigh. */
  readonly clipHigh: number;
  /** Dual-clip c > 1 (Ye et al. 2020): for A < 0 the objective is at least c·A. Off when absent. */
  readonly dualClip?: number;
  /** The critic's loss, when PPO trains a value head. */
  readonly value?: ValueLossSpec;
}

/** GRPO (Shao et al. 2024): the PPO surrogate plus β·KL_k3(π ‖ π_ref) per token. */
export interface GrpoLoss<A extends Reduction = Aggregation> extends TokenLoss<A> {
  readonly kind: 'grpo';
  readonly clipLow: number;
  readonly clipHigh: number;
  readonly dualClip?: number;
  readonly klBeta: number;
}

/** DPO (Rafailov et al. 2023) over (chosen, rejected) pairs of sequence log-prob sums. */
export interface DpoLoss {
  readonly kind: 'dpo';
  readonly beta: number;
}

/** The token-level objectives (everything but DPO, which reduces per pair). */
export type PolicyLossSpec<A extends Reduction = Aggregation> = CrossEntropyLoss<A> | ImportanceSamplingLoss<A> | PpoLoss<A> | GrpoLoss<A>;
export type LossSpec = PolicyLossSpec | DpoLoss;

function nonNegative(field: string, v: number): number {
  if (!Number.isFinite(v) || v < 0) throw new ConfigError(field, `must be a finite number >= 0, got ${v}`);
  return v;
}

function aggregation(a: Aggregation): Aggregation {
  if (a !== 'token_mean' && a !== 'sequence_mean') throw new ConfigError('aggregation', `must be 'token_mean' or 'sequence_mean', got ${String(a)}`);
  return a;
}

export function crossEntropyLoss(o: { aggregation?: Aggregation } = {}): CrossEntropyLoss {
  return Object.freeze({ kind: 'cross_entropy', aggregation: aggregation(o.aggregation ?? 'token_mean') });
}

export function importanceSamplingLoss(o: { aggregation?: Aggregation } = {}): ImportanceSamplingLoss {
  return Object.freeze({ kind: 'importance_sampling', aggregation: aggregation(o.aggregation ?? 'token_mean') });
}

export function valueLossSpec(o: { clip?: number | null; coef?: number } = {}): ValueLossSpec {
  const clip = o.clip === undefined ? 0.2 : o.clip;
  return Object.freeze({ clip: clip === null ? null : nonNegative('value.clip', clip), coef: nonNegative('value.coef', o.coef ?? 0.5) });
}

/** Defaults: ε 0.2 both sides, no dual clip, no entropy bonus, token_mean. */
export function ppoLoss(o: { clipLow?: number; clipHigh?: number; dualClip?: number; entropyCoef?: number; aggregation?: Aggregation; value?: ValueLossSpec } = {}): PpoLoss {
  if (o.dualClip !== undefined && !(Number.isFinite(o.dualClip) && o.dualClip > 1)) throw new ConfigError('dualClip', `must be > 1, got ${o.dualClip}`);
  const clipLow = nonNegative('clipLow', o.clipLow ?? 0.2);
  if (clipLow >= 1) throw new ConfigError('clipLow', `must be < 1 (the ratio floor is 1 − clipLow), got ${clipLow}`);
  return Object.freeze({
    kind: 'ppo',
    clipLow,
    clipHigh: nonNegative('clipHigh', o.clipHigh ?? 0.2),
    ...(o.dualClip === undefined ? {} : { dualClip: o.dualClip }),
    entropyCoef: nonNegative('entropyCoef', o.entropyCoef ?? 0),
    aggregation: aggregation(o.aggregation ?? 'token_mean'),
    ...(o.value === undefined ? {} : { value: o.value }),
  });
}

/** Defaults from the GRPO paper: ε 0.2, β 0.04, sequence_mean. */
export function grpoLoss(o: { clipLow?: number; clipHigh?: number; klBeta?: number; entropyCoef?: number; aggregation?: Aggregation } = {}): GrpoLoss {
  const clipLow = nonNegative('clipLow', o.clipLow ?? 0.2);
  if (clipLow >= 1) throw new ConfigError('clipLow', `must be < 1 (the ratio floor is 1 − clipLow), got ${clipLow}`);
  return Object.freeze({
    kind: 'grpo',
    clipLow,
    clipHigh: nonNegative('clipHigh', o.clipHigh ?? 0.2),
    klBeta: nonNegative('klBeta', o.klBeta ?? 0.04),
    entropyCoef: nonNegative('entropyCoef', o.entropyCoef ?? 0),
    aggregation: aggregation(o.aggregation ?? 'sequence_mean'),
  });
}

/** Default β 0.1 (the DPO paper's common setting). */
export function dpoLoss(o: { beta?: number } = {}): DpoLoss {
  const beta = o.beta ?? 0.1;
  if (!Number.isFinite(beta) || beta <= 0) throw new ConfigError('beta', `must be a finite number > 0, got ${beta}`);
  return Object.freeze({ kind: 'dpo', beta });
}
