/**
 * What trainAgents learns from hindsight — the environment's account, once a game is over, of what a
 * seat should have played in it (`TurnBasedEnvSpec.hindsight`): the step's hindsight games of a seat
 * replayed once through the protocol (`replayHindsight`), then either trained on supervised by that
 * seat (`hindsightStep`, SeatSettings.hindsight) or scored under its policy to credit its partners
 * with the game's expected reward (`expectedRewards`, SeatSettings.expectedReward).
 */
import { crossEntropyLoss } from '../algorithms/loss_spec.ts';
import { sftDatums } from '../algorithms/sft.ts';
import { targetMaskT } from '../algorithms/datum.ts';
import { sequenceLogprob } from '../algorithms/dpo.ts';
import { replayTurnBasedDemonstrations, type ReplayAgentOptions } from '../env/demos.ts';
import type { Trajectory, TrajectoryGroup, TurnBasedEnvSpec } from '../env/types.ts';
import type { TrainingClient } from './clients.ts';
import { type AlgoStep, packedStep } from './job_algorithms.ts';
import { forwardTrajectories, type PackSettings } from './train_step.ts';

/** Seat j's hindsight plays of a step: its replayed trajectories, and the game (episodeId) each replays. */
export interface HindsightPlays {
  readonly trajectories: readonly Trajectory[];
  readonly episodes: readonly number[];
}

/**
 * Seat j's games in `groups` as the environment says they should have gone (games whose hindsight is
 * null left out), replayed through the protocol as j's tokens. The replay is bound by the context
 * alone (`replay`), not the seats' tokens per action: a demonstration's text (an action as the game
 * recorded it) may take more tokens than were sampled for it.
 */
export async function replayHindsight(spec: TurnBasedEnvSpec, j: number, groups: readonly TrajectoryGroup[], replay: ReplayAgentOptions): Promise<HindsightPlays> {
  const plays = groups.flatMap((g) => g.trajectories).flatMap((t) => {
    const d = spec.hindsight!(t);
    return d === null ? [] : [{ episode: t.episodeId, demo: d }];
  });
  if (plays.length === 0) return { trajectories: [], episodes: [] };
  // A replayed trajectory's episodeId is its demonstration's index.
  const trajectories = (await replayTurnBasedDemonstrations(spec, plays.map((p) => p.demo), replay)).trajectories.filter((t) => t.player === j);
  return { trajectories, episodes: trajectories.map((t) => plays[t.episodeId].episode) };
}

/** Each trajectory's log-probability of its own tokens under `client` (forward only): log π(actions | observations). */
export async function policyLogprobs(client: TrainingClient, trajs: readonly Trajectory[], pack: PackSettings): Promise<number[]> {
  const { logprobsNT } = await forwardTrajectories(client, trajs, pack);
  return trajs.map((t, i) => sequenceLogprob(logprobsNT[i], targetMaskT(t)));
}

/** A hindsight seat's step: its hindsight plays (of one step or several) as SFT batches (cross-entropy on its own tokens). */
export function hindsightStep(plays: readonly Trajectory[], pack: PackSettings, seed: number): AlgoStep {
  return packedStep(pack, sftDatums(plays), crossEntropyLoss(), seed);
}

/**
 * `groups` (one seat's) with each trajectory's reward replaced by the game's expected reward under
 * its partners' policies (SeatSettings.expectedReward): per partner, the probability its policy
 * (`client`, forward only) gives its hindsight play in that game — the log-probabilities of the
 * replayed play summed over the partner's policy tokens — multiplied over the partners. A game some
 * partner has no hindsight play for keeps its reward.
 */
export async function expectedRewards(
  groups: readonly TrajectoryGroup[], partners: readonly { readonly client: TrainingClient; readonly plays: HindsightPlays }[], pack: PackSettings,
): Promise<TrajectoryGroup[]> {
  // Per game (episodeId): the product of the partners' probabilities so far; absent: some partner had no play.
  let expected: Map<number, number> | null = null;
  for (const { client, plays } of partners) {
    const lps = await policyLogprobs(client, plays.trajectories, pack);
    const next = new Map<number, number>();
    plays.trajectories.forEach((_, i) => {
      const lp = lps[i];
      const e = plays.episodes[i];
      if (expected === null || expected.has(e)) next.set(e, (expected?.get(e) ?? 1) * Math.exp(lp));
    });
    expected = next;
  }
  const got = expected ?? new Map<number, number>();
  return groups.map((g) => ({ ...g, trajectories: g.trajectories.map((t) => (got.has(t.episodeId) ? { ...t, reward: got.get(t.episodeId)! } : t)) }));
}
