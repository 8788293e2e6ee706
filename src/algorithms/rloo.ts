/**
 * RLOO datums (Ahmadian et al. 2024, "Back to Basics"): each trajectory's advantage is its reward
 * minus the mean reward of the other G − 1 attempts at the task, on every policy token. Pair with
 * `importanceSamplingLoss()` (REINFORCE-style, as in the paper) or `ppoLoss()`. A group with one
 * kept attempt (its siblings dropped) gets advantage 0.
 */
import type { TrajectoryGroup } from '../env/types.ts';
import { rlooAdvantages } from './advantages.ts';
import type { Datum } from './datum.ts';
import { type OutcomeDatumOptions, outcomeDatums } from './outcome.ts';

export function rlooDatums(groups: readonly TrajectoryGroup[], options: OutcomeDatumOptions = {}): Datum[] {
  return outcomeDatums(groups, rlooAdvantages, options);
}
