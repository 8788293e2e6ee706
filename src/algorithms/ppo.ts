/**
 * PPO with a critic (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"): per-token
 * advantages and value targets from GAE over the critic's rollout-time values, and the clipped
 * value loss with its gradient as a pure function. Pair the datums with `ppoLoss({ value })`.
 *
 * Departures: environment and prompt tokens are not time steps (GAE runs over policy tokens
 * only, see maskedGae); every episode is treated as terminal (bootstrap 0), truncated ones too,
 * because their final reward already says they failed; advantages are whitened over the batch's
 * policy tokens by default (as OpenAI baselines' ppo2 does per minibatch).
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Trajectory } from '../env/types.ts';
import { type GaeOptions, maskedGae } from './advantages.ts';
import { type Datum, targetMaskT, tokenRewardsT, trajectoryToDatum } from './datum.ts';
import { aggregationScales } from './losses.ts';
import { clippedValueLoss } from './loss_terms.ts';
import type { Aggregation, ValueLossSpec } from './loss_spec.ts';

export interface PpoDatumOptions extends Partial<GaeOptions> {
  /** Whiten advantages over all policy tokens of the batch. Default true. */
  readonly normalizeAdvantages?: boolean;
  readonly firstSequenceId?: number;
  readonly refLogprobs?: (t: Trajectory) => readonly number[];
}

/**
 * Datums with GAE advantages, returns (the critic's targets) and old values. `valuesNT[i]` is the
 * critic's [T] prediction for trajectory i at rollout time, target-aligned (value of the state
 * before each target token). Defaults γ = 1, λ = 0.95.
 */
export function ppoDatums(trajs: readonly Trajectory[], valuesNT: readonly (readonly number[])[], options: PpoDatumOptions = {}): Datum[] {
  if (valuesNT.length !== trajs.length) throw new InvalidInputError('ppoDatums', `${trajs.length} trajectories but ${valuesNT.length} value arrays`);
  const gaeOptions: GaeOptions = { gamma: options.gamma ?? 1, lambda: options.lambda ?? 0.95 };
  const parts = trajs.map((t, i) => {
    const maskT = targetMaskT(t);
    if (valuesNT[i].length !== maskT.length) throw new InvalidInputError('ppoDatums', `trajectory ${i}: ${maskT.length} targets but ${valuesNT[i].length} values`);
    return { maskT, ...maskedGae(tokenRewardsT(t), valuesNT[i], maskT, gaeOptions) };
  });
  if (options.normalizeAdvantages ?? true) {
    const all = parts.flatMap((p) => p.advantagesT.filter((_, t) => p.maskT[t]));
    if (all.length > 0) {
      const mean = all.reduce((s, a) => s + a, 0) / all.length;
      const std = Math.sqrt(all.reduce((s, a) => s + (a - mean) ** 2, 0) / all.length);
      for (const p of parts) p.advantagesT = p.advantagesT.map((a, t) => (p.maskT[t] ? (a - mean) / (std + 1e-8) : 0));
    }
  }
  const first = options.firstSequenceId ?? 0;
  return trajs.map((t, i) => {
    const ref = options.refLogprobs?.(t);
    return trajectoryToDatum(t, first + i, {
      advantagesT: parts[i].advantagesT,
      returnsT: parts[i].returnsT,
      oldValuesT: valuesNT[i].map((v, k) => (parts[i].maskT[k] ? v : 0)),
      ...(ref === undefined ? {} : { refLogprobsT: ref }),
    });
  });
}

/** The critic's loss over sequences: coef · Σ scale·ℓ (ℓ from loss_terms.ts's clippedValueLoss), with [S][T] d(loss)/dV. */
export function valueLossReference(
  spec: ValueLossSpec,
  inputs: readonly { readonly datum: Datum; readonly valuesT: readonly number[] }[],
  aggregation: Aggregation = 'token_mean',
): { loss: number; dvaluesST: number[][]; clipFraction: number } {
  const scales = aggregationScales(inputs.map((x) => x.datum.lossMaskT), aggregation);
  let loss = 0, clipped = 0, tokens = 0;
  const dvaluesST = inputs.map(({ datum, valuesT }, s) => {
    const { returnsT, oldValuesT } = datum;
    if (returnsT === undefined || oldValuesT === undefined) throw new InvalidInputError('valueLossReference', `sequence ${datum.sequenceId} has no returnsT/oldValuesT (use ppoDatums)`);
    if (valuesT.length !== returnsT.length) throw new InvalidInputError('valueLossReference', `sequence ${datum.sequenceId}: ${returnsT.length} targets, ${valuesT.length} values`);
    return valuesT.map((v, t) => {
      const w = scales[s][t];
      if (w === 0) return 0;
      const x = clippedValueLoss(v, oldValuesT[t], returnsT[t], spec.clip);
      loss += spec.coef * w * x.loss;
      clipped += x.clipped ? 1 : 0;
      tokens++;
      return spec.coef * w * x.dv;
    });
  });
  return { loss, dvaluesST, clipFraction: tokens === 0 ? 0 : clipped / tokens };
}
