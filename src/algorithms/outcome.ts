/**
 * Outcome-reward datums: one scalar advantage per trajectory, broadcast to its policy tokens —
 * the shared shape of GRPO, RLOO and REINFORCE. The estimator is passed in as a function over a
 * group's rewards, so each algorithm is a two-line function of its own (grpo.ts, rloo.ts,
 * reinforce.ts), never a branch here.
 */
import type { Trajectory, TrajectoryGroup } from '../env/types.ts';
import { broadcastAdvantage, type Datum, trajectoryToDatum } from './datum.ts';

export interface OutcomeDatumOptions {
  /** [T] reference-policy log-probs of a trajectory's targets (GRPO's KL term; DPO). */
  readonly refLogprobs?: (t: Trajectory) => readonly number[];
  /** Sequence id of the first datum. Default 0. */
  readonly firstSequenceId?: number;
  /** Leave out groups whose rewards are all equal (their advantages are 0): DAPO's dynamic sampling. */
  readonly skipUniformGroups?: boolean;
}

/** Datums of every trajectory of every group, advantages from `estimate` applied per group. */
export function outcomeDatums(
  groups: readonly TrajectoryGroup[],
  estimate: (rewardsG: readonly number[]) => readonly number[],
  options: OutcomeDatumOptions = {},
): Datum[] {
  const out: Datum[] = [];
  let id = options.firstSequenceId ?? 0;
  for (const g of groups) {
    const rewardsG = g.trajectories.map((t) => t.reward);
    if (rewardsG.length === 0) continue;
    if (options.skipUniformGroups && rewardsG.every((r) => r === rewardsG[0])) continue;
    const advantagesG = estimate(rewardsG);
    g.trajectories.forEach((t, i) => {
      const ref = options.refLogprobs?.(t);
      out.push(trajectoryToDatum(t, id++, { advantagesT: broadcastAdvantage(t, advantagesG[i]), ...(ref === undefined ? {} : { refLogprobsT: ref }) }));
    });
  }
  return out;
}
