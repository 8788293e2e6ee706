/**
 * A seat's best response to its partners (SeatSettings.bestResponse): for each game of the step, the
 * environment's counterfactuals (TurnBasedEnvSpec.counterfactuals) — the game as it would have gone
 * had the seat taken each of its actions, its partners playing what wins — are replayed through the
 * protocol and scored under the partners' current policies (the probability each gives its winning
 * play, multiplied over the partners; the expected reward of that action). Per situation (what the
 * seat saw: its prompt) the games' probabilities are averaged; situations are then assigned actions
 * one-to-one by the summed log-probability (src/algorithms/assignment.ts) — mutual exclusivity: two
 * situations share an action only when there are fewer actions than situations — and each game's
 * replay with its situation's action becomes a supervised play for the seat.
 *
 * What it fixes: with the reward's gradient alone, a speaker that sends one letter for two targets
 * (a partial pooling) is at a rest point — each of the two earns 1/2 on the shared letter and less on
 * a letter nobody sends, which the listener never learned to read — while the one-to-one assignment
 * moves one of them to the free letter, which the listener then learns from hindsight.
 */
import { bestAssignment } from '../algorithms/assignment.ts';
import { promptKey } from '../algorithms/information_bonus.ts';
import { replayTurnBasedDemonstrations, type ReplayAgentOptions } from '../env/demos.ts';
import type { Counterfactual, Trajectory, TrajectoryGroup, TurnBasedEnvSpec } from '../env/types.ts';
import type { TrainingClient } from './clients.ts';
import type { PackSettings } from './train_step.ts';
import { policyLogprobs } from './agents_hindsight.ts';

/** Probabilities below this count as this in the log (a partner sure an action loses does not make the score infinite). */
const FLOOR = 1e-12;

/** A step's best response for one seat: its supervised plays, and which action each situation was given. */
export interface BestResponse {
  /** Per game scored (one per group): the seat's replayed trajectory with its situation's action. */
  readonly plays: readonly Trajectory[];
  /** Per situation met this step, in order of first meeting: the action assigned and its mean expected reward. */
  readonly situations: readonly { readonly action: string; readonly expected: number }[];
  /**
   * The actions' names, and per situation (same order) what it is (its prompt's tokens, comma-joined),
   * each action's mean expected reward there, and with `own` the seat's mean probability of each (over its whole vocabulary).
   */
  readonly actions: readonly string[];
  readonly table: readonly { readonly situation: string; readonly expected: readonly number[]; readonly own?: readonly number[] }[];
}

/**
 * Seat k's best response over `groups` (its step's games; one game per group is scored, the
 * attempts of a group being at the same game). `partners`: the other learning seats' policies (seat
 * index and client), read before any update of the step. `own`: the seat's policy and the weight of
 * its own log-probability of each action in the score (SeatSettings.bestResponse's `own`; 0: the
 * partners' alone) — a situation keeps the action the seat already leans to where its partners read
 * two about alike, so the assignment does not swap back and forth on their noise from step to step.
 */
export async function bestResponse(
  spec: TurnBasedEnvSpec, k: number, groups: readonly TrajectoryGroup[], partners: readonly { readonly seat: number; readonly client: TrainingClient }[],
  pack: PackSettings, replay: ReplayAgentOptions, own?: { readonly client: TrainingClient; readonly weight: number },
  keep?: { readonly previous: ReadonlyMap<string, string>; readonly nats: number },
): Promise<BestResponse> {
  const games: { situation: string; alternatives: readonly Counterfactual[] }[] = [];
  for (const g of groups) {
    const t = g.trajectories[0];
    const alternatives = t ? spec.counterfactuals!(t) : null;
    if (!alternatives || alternatives.length === 0) continue;
    if (games.length > 0 && !sameActions(games[0].alternatives, alternatives)) {
      throw new Error(`${spec.name}.counterfactuals: a seat's games must name the same actions in the same order (${games[0].alternatives.map((a) => a.action).join(', ')} vs ${alternatives.map((a) => a.action).join(', ')})`);
    }
    games.push({ situation: promptKey(t), alternatives });
  }
  if (games.length === 0) return { plays: [], situations: [], actions: [], table: [] };
  const A = games[0].alternatives.length;
  // Every game's counterfactuals replayed at once; demonstration i·A + a is game i with action a.
  const demos = games.flatMap((g) => g.alternatives.map((a) => ({ ...a.game, player: k })));
  const replayed = (await replayTurnBasedDemonstrations(spec, demos, replay)).trajectories;
  const of = (player: number) => replayed.filter((t) => t.player === player);
  // log Π_partners p(winning play) per demonstration; a demonstration some partner did not play in scores nothing.
  const logp = new Float64Array(demos.length);
  const seen = new Uint16Array(demos.length);
  for (const { seat, client } of partners) {
    const trajs = of(seat);
    const lps = await policyLogprobs(client, trajs, pack);
    trajs.forEach((t, i) => {
      logp[t.episodeId] += lps[i];
      seen[t.episodeId]++;
    });
  }
  // Per situation × action: the mean expected reward over the situation's games.
  const index = new Map<string, number>();
  const sum: number[][] = [], count: number[] = [];
  games.forEach((g, i) => {
    let s = index.get(g.situation);
    if (s === undefined) {
      index.set(g.situation, (s = sum.length));
      sum.push(new Array<number>(A).fill(0));
      count.push(0);
    }
    count[s]++;
    for (let a = 0; a < A; a++) sum[s][a] += seen[i * A + a] === partners.length ? Math.exp(logp[i * A + a]) : 0;
  });
  const mean = sum.map((row, s) => row.map((x) => x / count[s]));
  // With `own`: the seat's mean probability of each action per situation (over the situation's games).
  let ownMean: number[][] | null = null;
  if (own && own.weight > 0) {
    const trajs = of(k);
    const lps = await policyLogprobs(own.client, trajs, pack);
    const ownSum = mean.map((row) => row.map(() => 0));
    trajs.forEach((t, i) => (ownSum[index.get(games[Math.floor(t.episodeId / A)].situation)!][t.episodeId % A] += Math.exp(lps[i])));
    ownMean = ownSum.map((row, s) => row.map((x) => x / count[s]));
  }
  const log = (p: number) => Math.log(Math.max(p, FLOOR));
  const names = games[0].alternatives.map((a) => a.action);
  const situations = [...index.keys()];
  const kept = (s: number, a: number) => (keep?.previous.get(situations[s]) === names[a] ? keep.nats : 0);
  const assigned = bestAssignment(mean.map((row, s) => row.map((p, a) => log(p) + (ownMean ? own!.weight * log(ownMean[s][a]) : 0) + kept(s, a))));
  // The seat's own replayed trajectories, by demonstration.
  const mine = new Map(of(k).map((t) => [t.episodeId, t]));
  const plays = games.flatMap((g, i) => {
    const t = mine.get(i * A + assigned[index.get(g.situation)!]);
    return t ? [t] : [];
  });
  return { plays, situations: assigned.map((a, s) => ({ action: names[a], expected: mean[s][a] })), actions: names, table: mean.map((expected, s) => ({ situation: situations[s], expected, ...(ownMean ? { own: ownMean[s] } : {}) })) };
}

const sameActions = (a: readonly Counterfactual[], b: readonly Counterfactual[]) => a.length === b.length && a.every((x, i) => x.action === b[i].action);
