/**
 * GRPO datums (Shao et al. 2024, "DeepSeekMath"): each trajectory's advantage is its reward
 * relative to the other attempts at the same task, Â_i = (r_i − mean r)/(std r + ε), on every
 * policy token; pair with `grpoLoss()` (clipped surrogate + β·k3 KL to the reference policy).
 * `normalizeStd: false` gives Dr. GRPO (Liu et al. 2025). Departure from the paper: optional
 * DAPO-style skipping of groups whose rewards are all equal (they carry no signal).
 */
import type { TrajectoryGroup } from '../env/types.ts';
import { type GroupRelativeOptions, groupRelativeAdvantages } from './advantages.ts';
import type { Datum } from './datum.ts';
import { type OutcomeDatumOptions, outcomeDatums } from './outcome.ts';

export function grpoDatums(groups: readonly TrajectoryGroup[], options: GroupRelativeOptions & OutcomeDatumOptions = {}): Datum[] {
  return outcomeDatums(groups, (rewardsG) => groupRelativeAdvantages(rewardsG, options), options);
}
