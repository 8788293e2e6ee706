/**
 * Assembles a rollout's kept and dropped episodes into a frozen RolloutBatch with its metrics,
 * and lays out the episodes of a group rollout (G attempts at each task, same env seed).
 *
 * Departure from collecting in completion order: groups and trajectories are ordered by id, so a
 * batch depends only on seeds, never on which environment answered first.
 */
import { deepFreeze } from '../util/freeze.ts';
import { Rng } from '../util/rng.ts';
import { InvalidInputError } from './errors.ts';
import { END_REASONS, type DroppedEpisode, type EndReason, type RolloutBatch, type Trajectory, type TrajectoryGroup } from './types.ts';

/** Where one episode runs: its env seed and its group. Episode ids are indices in the list. */
export interface EpisodeSpec {
  readonly seed: number;
  readonly groupId: number;
  /** A demonstration's game variant, handed to reset (replays only). */
  readonly variant?: string;
}

/** Rng stream for env seeds drawn from a rollout seed. */
export const ENV_SEED_STREAM = 0xe5;

/** `groups` tasks × `groupSize` attempts; every attempt of a group shares one env seed drawn from `seed`. */
export function groupEpisodes(groups: number, groupSize: number, seed: number): EpisodeSpec[] {
  if (!Number.isInteger(groups) || groups < 0) throw new InvalidInputError('groupEpisodes', `groups must be an integer >= 0, got ${groups}`);
  if (!Number.isInteger(groupSize) || groupSize < 1) throw new InvalidInputError('groupEpisodes', `groupSize must be an integer >= 1, got ${groupSize}`);
  const rng = new Rng(seed, ENV_SEED_STREAM);
  const out: EpisodeSpec[] = [];
  for (let g = 0; g < groups; g++) {
    const envSeed = rng.nextU32();
    for (let i = 0; i < groupSize; i++) out.push({ seed: envSeed, groupId: g });
  }
  return out;
}

/** Counters a protocol keeps while it runs. */
export interface RolloutCounters {
  toolCalls: number;
  sampledTokens: number;
  sampleCalls: number;
}

export function newCounters(): RolloutCounters {
  return { toolCalls: 0, sampledTokens: 0, sampleCalls: 0 };
}

/** Groups the kept trajectories by group id, computes the metrics, freezes everything. */
export function assembleBatch(
  episodes: readonly EpisodeSpec[],
  kept: readonly Trajectory[],
  dropped: readonly DroppedEpisode[],
  counters: RolloutCounters,
  episodeCount = episodes.length,
): RolloutBatch {
  const seedOf = new Map<number, number>();
  for (const e of episodes) if (!seedOf.has(e.groupId)) seedOf.set(e.groupId, e.seed);
  const byGroup = new Map<number, Trajectory[]>();
  for (const id of [...seedOf.keys()].sort((a, b) => a - b)) byGroup.set(id, []);
  for (const t of kept) byGroup.get(t.groupId)?.push(t);
  const groups: TrajectoryGroup[] = [...byGroup].map(([groupId, ts]) => ({
    groupId,
    seed: seedOf.get(groupId) as number,
    trajectories: ts.sort((a, b) => a.episodeId - b.episodeId || a.player - b.player),
  }));
  const endReasons = Object.fromEntries(END_REASONS.map((r) => [r, 0])) as Record<EndReason, number>;
  for (const t of kept) endReasons[t.endReason]++;
  for (const d of dropped) endReasons[d.reason]++;
  const n = kept.length;
  // Sums in episode order, not completion order: the same episodes give the same bits however
  // they were split across calls (a rollout sampled in slices on several hosts).
  const ordered = [...kept].sort((a, b) => a.episodeId - b.episodeId || a.player - b.player);
  return deepFreeze({
    groups,
    dropped: [...dropped].sort((a, b) => a.episodeId - b.episodeId),
    metrics: {
      episodes: episodeCount,
      kept: n,
      dropped: dropped.length,
      endReasons,
      meanReward: n === 0 ? 0 : ordered.reduce((s, t) => s + t.reward, 0) / n,
      meanTurns: n === 0 ? 0 : ordered.reduce((s, t) => s + t.turns.length, 0) / n,
      toolCalls: counters.toolCalls,
      sampledTokens: counters.sampledTokens,
      sampleCalls: counters.sampleCalls,
    },
  });
}
