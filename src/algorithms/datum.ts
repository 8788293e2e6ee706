/**
 * Training datums: one sequence laid out for next-token training, with everything a loss needs.
 * Legend: L trajectory tokens, T = L − 1 target positions; position t predicts token t + 1.
 *
 *   inputsT[t]      = tokens[t]                (what the model reads)
 *   targetsT[t]     = tokens[t + 1]            (what it is scored on)
 *   lossMaskT[t]    = policyMask[t + 1]        (1 only where the policy produced the target)
 *   oldLogprobsT[t] = sampling logprob of tokens[t + 1] (0 where masked)
 *
 * Advantages, returns, old values and reference log-probs are target-aligned the same way.
 * Departure from packing whole rollouts: a datum is one sequence; batching (pack.ts) pads rows.
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Trajectory } from '../env/types.ts';
import { deepFreeze } from '../util/freeze.ts';

export interface Datum {
  /** Identifies the sequence in its step (sequence_mean, DPO pairing, results). */
  readonly sequenceId: number;
  readonly inputsT: readonly number[];
  readonly targetsT: readonly number[];
  readonly lossMaskT: readonly number[];
  readonly oldLogprobsT: readonly number[];
  readonly advantagesT: readonly number[];
  /** Critic targets (PPO). */
  readonly returnsT?: readonly number[];
  /** Critic predictions at rollout time, for value clipping (PPO). */
  readonly oldValuesT?: readonly number[];
  /** Frozen reference policy log-probs of the targets (GRPO's KL, DPO). */
  readonly refLogprobsT?: readonly number[];
  /** DPO: which pair this sequence belongs to and its side. */
  readonly pair?: { readonly id: number; readonly role: 'chosen' | 'rejected' };
}

/** Optional target-aligned extras for a datum; each must have T = L − 1 entries. */
export interface DatumExtras {
  readonly advantagesT?: readonly number[];
  readonly returnsT?: readonly number[];
  readonly oldValuesT?: readonly number[];
  readonly refLogprobsT?: readonly number[];
  readonly pair?: { readonly id: number; readonly role: 'chosen' | 'rejected' };
}

/**
 * A datum from a full token sequence: `policyMaskL` and `logprobsL` are token-aligned ([L], as in
 * a Trajectory); the extras are target-aligned ([L − 1]).
 */
export function datumFromSequence(
  sequenceId: number,
  tokensL: readonly number[],
  policyMaskL: readonly number[],
  logprobsL: readonly number[],
  extras: DatumExtras = {},
): Datum {
  const L = tokensL.length;
  if (L < 2) throw new InvalidInputError('datumFromSequence', `a sequence needs at least 2 tokens, got ${L}`);
  if (policyMaskL.length !== L || logprobsL.length !== L) {
    throw new InvalidInputError('datumFromSequence', `tokens ${L}, mask ${policyMaskL.length}, logprobs ${logprobsL.length} must have equal lengths`);
  }
  const T = L - 1;
  for (const key of ['advantagesT', 'returnsT', 'oldValuesT', 'refLogprobsT'] as const) {
    const xs = extras[key];
    if (xs !== undefined && xs.length !== T) throw new InvalidInputError('datumFromSequence', `${key} has ${xs.length} entries, expected ${T} (one per target)`);
  }
  const lossMaskT = policyMaskL.slice(1).map((m) => (m !== 0 ? 1 : 0));
  return deepFreeze({
    sequenceId,
    inputsT: tokensL.slice(0, T),
    targetsT: tokensL.slice(1),
    lossMaskT,
    oldLogprobsT: logprobsL.slice(1).map((lp, t) => (lossMaskT[t] ? lp : 0)),
    advantagesT: extras.advantagesT?.slice() ?? new Array<number>(T).fill(0),
    ...(extras.returnsT === undefined ? {} : { returnsT: extras.returnsT.slice() }),
    ...(extras.oldValuesT === undefined ? {} : { oldValuesT: extras.oldValuesT.slice() }),
    ...(extras.refLogprobsT === undefined ? {} : { refLogprobsT: extras.refLogprobsT.slice() }),
    ...(extras.pair === undefined ? {} : { pair: { ...extras.pair } }),
  });
}

/** A trajectory as a datum. */
export function trajectoryToDatum(traj: Trajectory, sequenceId: number, extras: DatumExtras = {}): Datum {
  return datumFromSequence(sequenceId, traj.tokensT, traj.policyMaskT, traj.logprobsT, extras);
}

/** [T] the target-aligned loss mask of a trajectory (policyMask shifted by one). */
export function targetMaskT(traj: Trajectory): number[] {
  return traj.policyMaskT.slice(1).map((m) => (m !== 0 ? 1 : 0));
}

/** [T] one scalar advantage on every policy target, 0 elsewhere (outcome-reward algorithms). */
export function broadcastAdvantage(traj: Trajectory, advantage: number): number[] {
  return targetMaskT(traj).map((m) => (m ? advantage : 0)); // no -0 on masked positions
}

/**
 * [T] each turn's reward on the target of its action's last token. A reward that has no token of
 * its own (an empty action, or one earned before the first action in a game) goes to the closest
 * earlier policy target, else the first one; the sum equals traj.reward whenever the trajectory
 * has a policy token (all zeros otherwise).
 */
export function tokenRewardsT(traj: Trajectory): number[] {
  const maskT = targetMaskT(traj);
  const rewardsT = new Array<number>(maskT.length).fill(0);
  const policyAt = maskT.flatMap((m, t) => (m ? [t] : []));
  if (policyAt.length === 0) return rewardsT;
  const place = (lastTarget: number, r: number) => {
    let at = -1;
    for (const t of policyAt) if (t <= lastTarget) at = t;
    rewardsT[at >= 0 ? at : policyAt[0]] += r;
  };
  let accounted = 0;
  for (const turn of traj.turns) {
    place(turn.actionEnd - 2, turn.reward);
    accounted += turn.reward;
  }
  const rest = traj.reward - accounted; // reward earned outside any turn (multi-agent, before acting)
  if (rest !== 0) rewardsT[policyAt[0]] += rest;
  return rewardsT;
}

/** Sequence ids 0, 1, 2, … over trajectories in order, as datums with the given per-trajectory extras. */
export function datumsWith(trajs: readonly Trajectory[], extras: (t: Trajectory, i: number) => DatumExtras, firstId = 0): Datum[] {
  return trajs.map((t, i) => trajectoryToDatum(t, firstId + i, extras(t, i)));
}
