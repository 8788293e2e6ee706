/**
 * Environment failures made visible: a rollout's dropped episodes summed up by reason, each with
 * its count and the first message of that kind (what StepMetrics.droppedBy carries and the CLI
 * prints), and the rule that stops a job whose environment failed every episode of a phase.
 *
 * Why stop: the rollout drops a failing episode and goes on, which is right for one bad episode,
 * but when every episode of a step is dropped the step trains on nothing — an environment whose
 * step always throws "trained" at reward 0 with its message lost, and a warm start whose every
 * demonstration failed ended in `optimStep without forwardBackward`.
 */
import { EnvironmentError } from '../env/errors.ts';
import type { DroppedEpisode, DropReason } from '../env/types.ts';

/** Dropped episodes by reason: how many, and the first one's message. */
export type DroppedByReason = { readonly [R in DropReason]?: { readonly count: number; readonly message: string } };

/** The summary of `dropped`, in episode order (the first message is the lowest episode's). */
export function dropsByReason(dropped: readonly DroppedEpisode[]): DroppedByReason {
  const out: { [R in DropReason]?: { count: number; message: string } } = {};
  for (const d of dropped) {
    const r = out[d.reason];
    if (r) r.count++;
    else out[d.reason] = { count: 1, message: d.message };
  }
  return out;
}

/** One line for people: `env_error ×3 (first: …); timeout ×1 (first: …)`. */
export function dropsText(by: DroppedByReason, maxMessage = 120): string {
  return Object.entries(by)
    .map(([reason, d]) => `${reason} ×${d!.count} (first: ${d!.message.length > maxMessage ? `${d!.message.slice(0, maxMessage)}…` : d!.message})`)
    .join('; ');
}

/**
 * Throws EnvironmentError when `episodes` > 0 and every one was dropped (`phase` says where:
 * 'RL step 3', 'the warm start's demonstrations', 'the held-out evaluation before RL').
 */
export function stopIfAllDropped(env: string, phase: string, episodes: number, dropped: readonly DroppedEpisode[]): void {
  // A replayed game's drop is reported by each seat: one episode, counted once.
  const unique = [...new Map(dropped.map((d) => [d.episodeId, d] as const)).values()];
  if (episodes > 0 && unique.length >= episodes) throw new EnvironmentError(env, phase, episodes, dropsByReason(unique));
}
