/**
 * The loss spec: plain data telling the runtime which objective its fused loss kernel computes
 * over a packed batch, with its hyperparameters. One constructor per objective fills defaults and
 * validates (ConfigError); the runtime dispatches on `kind` through a table, never an if-chain.
 *
 * Field names follow kernels/policy_loss.wgsl's PolicyLossSpec (src/ops/policy_loss.ts: kind,
 * clipLow, clipHigh, dualClip, entropyCoef, klBeta, aggregation) and ValueLossSpec (clip, coef),
 * so a spec from here is handed to the kernel as it is.
 *
 * Aggregation: token_mean = Σ ℓ / (policy tokens in the batch) — DAPO's choice (Yu et al. 2025),
 * every token weighs the same; sequence_mean = mean over sequences of each sequence's token mean —
 * the GRPO paper's 1/G Σ 1/|o_i| Σ_t (Shao et al. 2024), which favours short answers' tokens.
 */
import { ConfigError } from '../errors.ts';

export type Aggregation = 'token_mean' | 'sequence_mean';

/** Supervised fine-tuning: ℓ_t = −log π(y_t). */
export interface CrossEntropyLoss {
  readonly kind: 'cross_entropy';
  readonly aggregation: Aggregation;
}

/** Off-policy policy gradient with the importance ratio: ℓ_t = −ρ_t·A_t, ρ_t = exp(lp_t − old_t). */
export interface ImportanceSamplingLoss {
  readonly kind: 'importance_sampling';
  readonly aggregation: Aggregation;
}

/** PPO critic loss: 0.5·max((V−R)², (clip(V, V_old ± clip) − R)²)·coef; clip null = unclipped. */
export interface ValueLossSpec {
  readonly clip: number | null;
  readonly coef: number;
}

/** PPO clipped surrogate (Schulman et al. 2017) with asymmetric clip, optional dual clip, entropy bonus. */
export interface PpoLoss {
  readonly kind: 'ppo';
  readonly clipLow: number;
  readonly clipHigh: number;
  /** Dual-clip c > 1 (Ye et al. 2020): for A < 0 the objective is at least c·A. */
  readonly dualClip?: number;
  readonly entropyCoef: number;
  readonly aggregation: Aggregation;
  /** The critic's loss, when PPO trains a value head. */
  readonly value?: ValueLossSpec;
}

/** GRPO (Shao et al. 2024): the PPO surrogate plus β·KL_k3(π ‖ π_ref) per token. */
export interface GrpoLoss {
  readonly kind: 'grpo';
  readonly clipLow: number;
  readonly clipHigh: number;
  readonly klBeta: number;
  readonly entropyCoef: number;
  readonly aggregation: Aggregation;
}

/** DPO (Rafailov et al. 2023) over (chosen, rejected) pairs of sequence log-prob sums. */
export interface DpoLoss {
  readonly kind: 'dpo';
  readonly beta: number;
}

export type LossSpec = CrossEntropyLoss | ImportanceSamplingLoss | PpoLoss | GrpoLoss | DpoLoss;
/** The token-level objectives (everything but DPO, which reduces per pair). */
export type PolicyLossSpec = Exclude<LossSpec, DpoLoss>;

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
