/**
 * REINFORCE with a moving-average baseline (Williams 1992): advantage r_i − b on every policy
 * token, where b is the baseline from before this batch; returns the datums and the new baseline
 * (plain data: keep it in the run's checkpoint). Groups are ignored — every trajectory of the batch
 * is compared against the same baseline. Pair with `importanceSamplingLoss()`.
 */
import type { TrajectoryGroup } from '../env/types.ts';
import { type MovingBaseline, reinforceAdvantages } from './advantages.ts';
import type { Datum } from './datum.ts';
import { type OutcomeDatumOptions, outcomeDatums } from './outcome.ts';

export function reinforceDatums(
  groups: readonly TrajectoryGroup[],
  baseline: MovingBaseline,
  options: OutcomeDatumOptions & { readonly momentum?: number } = {},
): { datums: Datum[]; baseline: MovingBaseline } {
  const all = groups.flatMap((g) => g.trajectories);
  const { advantagesN, baseline: next } = reinforceAdvantages(all.map((t) => t.reward), baseline, options.momentum);
  // One pseudo-group holding the whole batch, advantages already computed against the baseline.
  const datums = outcomeDatums([{ groupId: 0, seed: 0, trajectories: all }], () => advantagesN, { ...options, skipUniformGroups: false });
  return { datums, baseline: next };
}
