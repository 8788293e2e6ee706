/**
 * Turn-based multi-agent protocol: two or more seats take turns in one environment. Each seat is
 * a learning Agent (its own SampleFn / adapter id, its own trajectory and reward) or a scripted
 * policy (an evaluation opponent such as a random player; it records nothing).
 *
 * A seat's trajectory holds only what that seat saw: its first observation becomes its prompt, and
 * each later observation is appended right before its next action (opponents' actions reach it
 * only through the environment's observations). Rewards the environment hands to a player on
 * another player's step are added to that player's latest turn. Games advance in lockstep, one
 * sampling call per learning seat per round.
 *
 * Departures: games end for every seat at once ('done', 'turn_limit' when a learning seat has used
 * `maxTurns` actions or the game reaches `maxSteps`, 'context_limit' when a seat's context is
 * full); an environment fault drops the whole game for every seat.
 *
 * Tools (`TurnBasedEnvironment.tools`) work as in a single-agent episode, for learning seats: a
 * tool call is answered to the caller alone and the caller acts again before the game moves on;
 * it counts against the seat's `maxTurns`, not against the game's `maxSteps`.
 */
import { Agent, type AppendedAction, EpisodeBuilder, requestSeed } from './agent.ts';
import { assembleBatch, type EpisodeSpec, newCounters, type RolloutCounters } from './batch.ts';
import { callTool, checkTurnStepResult, guarded } from './guard.ts';
import { closeQuietly, episodeIds, type RolloutOptions } from './rollout.ts';
import { Rng } from '../util/rng.ts';
import { deepFreeze } from '../util/freeze.ts';
import type { DroppedEpisode, DropReason, EndReason, KeptEndReason, RolloutBatch, Tool, Trajectory, TurnBasedEnvironment, TurnBasedEnvSpec } from './types.ts';

/** A non-learning seat: text in, action text out. */
export interface ScriptedPolicy {
  readonly kind: 'scripted';
  readonly id: string;
  act(observation: string, rng: Rng): string | Promise<string>;
}

export type Seat = Agent | ScriptedPolicy;

/** One game's outcome for every seat. */
export interface GameResult {
  readonly episodeId: number;
  readonly groupId: number;
  readonly seed: number;
  readonly endReason: EndReason;
  /** [P] total reward of each player (what was earned before a drop). */
  readonly rewardsP: readonly number[];
  readonly steps: number;
  /** Why a dropped game was dropped. */
  readonly message: string;
}

export interface TurnBasedBatch {
  readonly games: readonly GameResult[];
  /** [P] a learning seat's trajectories and metrics; null for scripted seats. */
  readonly seats: readonly (RolloutBatch | null)[];
}

export interface TurnBasedOptions extends RolloutOptions {
  /** Actions per game, all players together. Default 64. */
  readonly maxSteps?: number;
}

interface Game {
  readonly index: number;
  readonly spec: EpisodeSpec;
  readonly env: TurnBasedEnvironment;
  readonly builders: (EpisodeBuilder | null)[];
  readonly pendingP: number[];
  readonly rewardsP: number[];
  readonly turnsP: number[];
  readonly tools: ReadonlyMap<string, Tool>;
  player: number;
  observation: string;
  /** The acting seat has not yet been shown `observation` (false after its own tool call). */
  fresh: boolean;
  steps: number;
}

/** Plays `games` with one seat per player of `spec`. */
export async function rolloutTurnBased(
  spec: TurnBasedEnvSpec,
  seats: readonly Seat[],
  games: readonly EpisodeSpec[],
  options: TurnBasedOptions,
): Promise<TurnBasedBatch> {
  const P = spec.numPlayers;
  if (seats.length !== P) throw new RangeError(`rolloutTurnBased: ${spec.name} has ${P} players, got ${seats.length} seats`);
  const timeoutMs = options.stepTimeoutMs ?? 30_000;
  const maxSteps = options.maxSteps ?? 64;
  const results: GameResult[] = [];
  const keptP: Trajectory[][] = seats.map(() => []);
  const droppedP: DroppedEpisode[][] = seats.map(() => []);
  const countersP: RolloutCounters[] = seats.map(() => newCounters());

  const result = (g: { index: number; spec: EpisodeSpec }, endReason: EndReason, rewardsP: readonly number[], steps: number, message = ''): void => {
    results.push({ episodeId: g.index, groupId: g.spec.groupId, seed: g.spec.seed, endReason, rewardsP: [...rewardsP], steps, message });
  };
  const drop = (index: number, e: EpisodeSpec, reason: DropReason, message: string, game?: Game, env?: TurnBasedEnvironment): false => {
    seats.forEach((seat, p) => {
      if (seat instanceof Agent) {
        droppedP[p].push({ envName: spec.name, agentId: seat.id, seed: e.seed, groupId: e.groupId, episodeId: index, reason, message, turns: game?.turnsP[p] ?? 0 });
      }
    });
    result({ index, spec: e }, reason, game?.rewardsP ?? new Array(P).fill(0), game?.steps ?? 0, message);
    if (env !== undefined) closeQuietly(env);
    return false;
  };
  const end = (g: Game, endReason: KeptEndReason): false => {
    g.builders.forEach((b, p) => {
      if (b !== null && b.turns.length > 0) {
        keptP[p].push(b.finish({ envName: spec.name, seed: g.spec.seed, groupId: g.spec.groupId, episodeId: g.index, player: p, endReason }));
      }
    });
    result(g, endReason, g.rewardsP, g.steps);
    closeQuietly(g.env);
    return false;
  };

  const start = async (e: EpisodeSpec, index: number): Promise<Game | null> => {
    let env: TurnBasedEnvironment | undefined;
    const reset = await guarded(`${spec.name}.reset(${e.seed})`, timeoutMs, () => {
      env = spec.create();
      return e.variant === undefined ? env.reset(e.seed) : env.reset(e.seed, e.variant);
    });
    if (!reset.ok) {
      drop(index, e, reset.reason, reset.message, undefined, env);
      return null;
    }
    const first = reset.value;
    if (first === null || typeof first !== 'object' || typeof first.observation !== 'string' || !Number.isInteger(first.player) || first.player < 0 || first.player >= P) {
      drop(index, e, 'env_error', 'reset did not return { player, observation } with a valid player', undefined, env);
      return null;
    }
    const zeros = () => new Array<number>(P).fill(0);
    const tools = new Map(((env as TurnBasedEnvironment).tools ?? []).map((t) => [t.name, t]));
    return {
      index, spec: e, env: env as TurnBasedEnvironment, tools, builders: new Array(P).fill(null), pendingP: zeros(), rewardsP: zeros(), turnsP: zeros(),
      player: first.player, observation: first.observation, fresh: true, steps: 0,
    };
  };

  /** Puts the current observation into the acting seat's sequence; false if the game ended. */
  const prepare = (g: Game): boolean => {
    const seat = seats[g.player];
    if (!(seat instanceof Agent)) return true;
    if (g.turnsP[g.player] >= seat.maxTurns) return end(g, 'turn_limit');
    let b = g.builders[g.player];
    if (b === null) {
      b = new EpisodeBuilder(seat, g.observation, [...g.tools.values()]);
      b.preActionReward = g.pendingP[g.player];
      g.builders[g.player] = b;
    } else if (g.fresh && !b.appendFeedback('observation', g.observation)) {
      return end(g, 'context_limit');
    }
    g.fresh = false;
    return b.room() > 0 || end(g, 'context_limit');
  };

  /** Runs a learning seat's tool call and hands the result back to it alone; false if the game ended. */
  const toolTurn = async (g: Game, appended: AppendedAction, name: string, args: string): Promise<boolean> => {
    const actor = g.player;
    const b = g.builders[actor] as EpisodeBuilder;
    g.turnsP[actor]++;
    countersP[actor].toolCalls++;
    const called = await callTool(g.tools, name, args, timeoutMs);
    if (!called.ok) return drop(g.index, g.spec, called.reason, called.message, g, g.env);
    const { output, known } = called.value;
    b.recordTurn(known ? 'tool' : 'unknown_tool', appended, output, 0, { tool: name, args });
    return b.appendFeedback('tool', output, name) || end(g, 'context_limit');
  };

  const apply = async (g: Game, actionText: string, appended: AppendedAction | null): Promise<boolean> => {
    const actor = g.player;
    g.turnsP[actor]++;
    g.steps++;
    const stepped = await guarded(`${spec.name}.step`, timeoutMs, () => g.env.step(actionText));
    if (!stepped.ok) return drop(g.index, g.spec, stepped.reason, stepped.message, g, g.env);
    const checked = checkTurnStepResult(stepped.value, P);
    if (!checked.ok) return drop(g.index, g.spec, checked.reason, checked.message, g, g.env);
    const { rewardsP, done, player, observation, info } = checked.value;
    const own = !done && player === actor ? observation : '';
    if (appended !== null) g.builders[actor]?.recordTurn('env', appended, own, 0, info ?? {});
    rewardsP.forEach((r, p) => {
      g.rewardsP[p] += r;
      const b = g.builders[p];
      if (b !== null) b.addReward(r);
      else g.pendingP[p] += r;
    });
    if (done) return end(g, 'done');
    if (g.steps >= maxSteps) return end(g, 'turn_limit');
    g.player = player;
    g.observation = observation;
    g.fresh = true;
    return true;
  };

  const ids = episodeIds(games, options.indices);
  let live = (await Promise.all(games.map((e, k) => start(e, ids[k])))).filter((x): x is Game => x !== null);
  try {
    while (live.length > 0) {
      live = live.filter(prepare);
      // One sampling call per learning seat for all the games where it is to act.
      const actions = new Map<Game, Promise<{ text: string; appended: AppendedAction | null; tool?: { name: string; args: string } } | null>>();
      await Promise.all(
        seats.map(async (seat, p) => {
          const mine = live.filter((g) => g.player === p);
          if (mine.length === 0) return;
          if (seat instanceof Agent) {
            const builders = mine.map((g) => g.builders[p] as EpisodeBuilder);
            const sampled = await seat.sampleBatch(builders.map((b, k) => b.request(requestSeed(options.seed, mine[k].index, p, mine[k].turnsP[p]))));
            countersP[p].sampleCalls++;
            mine.forEach((g, k) => {
              countersP[p].sampledTokens += sampled[k].tokens.length;
              const appended = builders[k].appendAction(sampled[k]);
              const parsed = g.tools.size > 0 ? seat.toolSyntax.parse(appended.text, g.tools) : null;
              actions.set(g, Promise.resolve({ text: appended.text, appended, ...(parsed?.kind === 'tool' ? { tool: { name: parsed.name, args: parsed.args } } : {}) }));
            });
          } else {
            for (const g of mine) {
              const rng = new Rng(requestSeed(options.seed, g.index, p, g.turnsP[p]), 0x5c);
              actions.set(g, guarded(`scripted seat ${seat.id}`, timeoutMs, () => seat.act(g.observation, rng)).then((r) => {
                if (r.ok && typeof r.value === 'string') return { text: r.value, appended: null };
                drop(g.index, g.spec, r.ok ? 'env_error' : r.reason, r.ok ? `scripted seat ${seat.id} returned a non-string` : r.message, g, g.env);
                return null;
              }));
            }
          }
        }),
      );
      const going = await Promise.all(
        live.map(async (g) => {
          const a = await actions.get(g);
          if (a === null || a === undefined) return false;
          return a.tool && a.appended ? toolTurn(g, a.appended, a.tool.name, a.tool.args) : apply(g, a.text, a.appended);
        }),
      );
      live = live.filter((_, k) => going[k]);
    }
  } catch (error) {
    for (const g of live) closeQuietly(g.env); // a broken policy: release what is still open
    throw error;
  }

  results.sort((a, b) => a.episodeId - b.episodeId);
  return deepFreeze({
    games: results,
    seats: seats.map((seat, p) => (seat instanceof Agent ? assembleBatch(games, keptP[p], droppedP[p], countersP[p]) : null)),
  });
}
