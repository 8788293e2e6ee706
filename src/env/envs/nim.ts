/**
 * `nim`: a two-player (or more) turn-based game for the multi-agent protocol. Piles of objects;
 * on your turn take one or more objects from one pile with <answer>PILE COUNT</answer> (piles
 * numbered from 1); whoever takes the last object wins (+1), everyone else loses (−1).
 *
 * Departures from the textbook game: an illegal or unparseable move loses at once (the player gets
 * −1, the others +1) — there is no "try again", so a learning agent cannot stall a game. With more
 * than two players the winner alone gets +1. Piles come from the seed (`piles` piles of 1..maxPile).
 *
 * Helpers: `nimRandomPolicy()` (a uniformly random legal mover, the evaluation opponent),
 * `nimOptimalPolicy()` (Bouton's player, the fixed strong opponent) and `nimOptimalMove` (Bouton's strategy: move to nim-sum 0 when possible), which the demonstrations
 * mix with random moves.
 */
import { extractAnswer, formatAnswer } from '../actions.ts';
import type { ScriptedPolicy } from '../multiagent.ts';
import { Rng } from '../../util/rng.ts';
import type { Demonstration, TurnBasedEnvironment, TurnBasedEnvSpec, TurnObservation, TurnStepResult } from '../types.ts';

export interface NimOptions {
  readonly piles?: number;
  readonly maxPile?: number;
  readonly players?: number;
  /** Demonstrations: probability that a move is Bouton-optimal (else random). Default 0.8. */
  readonly demoOptimalRate?: number;
  /**
   * Demonstrations: the "optimal" move where none wins (nim-sum 0): 'random' (default), or 'stall' —
   * take one object from the largest pile (the first of equals), so that every demonstrated move
   * is a function of the piles alone, which a small model can learn as a look-up.
   */
  readonly demoLosingMove?: 'random' | 'stall';
  /**
   * Demonstrations: how the players after the first move — 'same' (default: as player 1, optimal
   * with probability demoOptimalRate), or 'random' (uniformly random legal moves: the positions
   * player 1 meets against the random evaluation player; optimal-against-optimal games with
   * 'stall' are mostly one-object moves, few positions and long).
   */
  readonly demoOthers?: 'same' | 'random';
  /**
   * Demonstrations: the seat they demonstrate — 'first' (default: player 1's moves, as above), or
   * 'each' (game i demonstrates seat i mod players: that seat plays as player 1 does above, the
   * others as demoOthers says), so a warm start learns to play every seat, which self-play needs.
   */
  readonly demoSeat?: 'first' | 'each';
}

type Full = Required<NimOptions>;
const PILE_STREAM = 0x4e14;

export interface NimMove {
  /** 0-based pile index. */
  readonly pile: number;
  readonly count: number;
}

/** The starting piles a seed gives. */
export function nimPiles(seed: number, piles: number, maxPile: number): number[] {
  const rng = new Rng(seed, PILE_STREAM);
  return Array.from({ length: piles }, () => 1 + rng.nextInt(maxPile));
}

/** "PILE COUNT" (1-based pile) from an action's answer tag or bare text; null when unparseable. */
export function parseNimMove(action: string): NimMove | null {
  const text = extractAnswer(action) ?? action.trim();
  const m = /^\D*?(\d{1,6})\D+(\d{1,6})\D*$/.exec(text);
  return m === null ? null : { pile: Number(m[1]) - 1, count: Number(m[2]) };
}

export function isLegalNimMove(piles: readonly number[], move: NimMove): boolean {
  return move.pile >= 0 && move.pile < piles.length && move.count >= 1 && move.count <= piles[move.pile];
}

/** Writes a move as an action. */
export function formatNimMove(move: NimMove): string {
  return formatAnswer(`${move.pile + 1} ${move.count}`);
}

/** Uniform over non-empty piles, then over counts. */
export function randomNimMove(piles: readonly number[], rng: Rng): NimMove {
  const open = piles.flatMap((n, i) => (n > 0 ? [i] : []));
  if (open.length === 0) throw new RangeError('randomNimMove: every pile is empty');
  const pile = open[rng.nextInt(open.length)];
  return { pile, count: 1 + rng.nextInt(piles[pile]) };
}

/** Take one object from the largest pile (the first of equals). */
export function nimStallMove(piles: readonly number[]): NimMove {
  let pile = 0;
  piles.forEach((n, i) => n > piles[pile] && (pile = i));
  if (piles[pile] === 0) throw new RangeError('nimStallMove: every pile is empty');
  return { pile, count: 1 };
}

/**
 * Bouton: a move leaving nim-sum 0 when one exists (the first pile that allows it), else — a losing
 * position — a random move, or with `losing: 'stall'` one object from the largest pile.
 */
export function nimOptimalMove(piles: readonly number[], rng: Rng, losing: 'random' | 'stall' = 'random'): NimMove {
  const x = piles.reduce((a, b) => a ^ b, 0);
  if (x !== 0) {
    for (let i = 0; i < piles.length; i++) {
      const target = piles[i] ^ x;
      if (target < piles[i]) return { pile: i, count: piles[i] - target };
    }
  }
  return losing === 'stall' ? nimStallMove(piles) : randomNimMove(piles, rng);
}

/** "Piles: 3 1 4." read back from an observation (the last such line). */
export function parseNimPiles(observation: string): number[] | null {
  const all = [...observation.matchAll(/Piles:((?: \d+)+)/g)];
  if (all.length === 0) return null;
  return all[all.length - 1][1].trim().split(' ').map(Number);
}

const pilesText = (piles: readonly number[]) => `Piles: ${piles.join(' ')}.`;

class NimEnvironment implements TurnBasedEnvironment {
  readonly name = 'nim';
  readonly numPlayers: number;
  readonly #o: Full;
  #piles: number[] = [];
  #player = 0;
  #seen: boolean[] = [];

  constructor(o: Full) {
    this.#o = o;
    this.numPlayers = o.players;
  }

  async reset(seed: number): Promise<TurnObservation> {
    this.#piles = nimPiles(seed, this.#o.piles, this.#o.maxPile);
    this.#player = 0;
    this.#seen = new Array<boolean>(this.numPlayers).fill(false);
    return { player: 0, observation: this.#observe(0, `${pilesText(this.#piles)} Your move.`) };
  }

  /** A player's first observation carries the rules (it becomes that player's prompt). */
  #observe(player: number, text: string): string {
    if (this.#seen[player]) return text;
    this.#seen[player] = true;
    return `Nim, you are player ${player + 1}. Take the last object to win. Move: <answer>PILE COUNT</answer>. ${text}`;
  }

  #final(winner: number): readonly number[] {
    return Array.from({ length: this.numPlayers }, (_, p) => (p === winner ? 1 : -1));
  }

  async step(action: string): Promise<TurnStepResult> {
    const actor = this.#player;
    const move = parseNimMove(action);
    if (move === null || !isLegalNimMove(this.#piles, move)) {
      const rewardsP = Array.from({ length: this.numPlayers }, (_, p) => (p === actor ? -1 : 1));
      return { player: actor, observation: `Player ${actor + 1} made an illegal move and loses.`, rewardsP, done: true, info: { illegal: true, loser: actor } };
    }
    this.#piles[move.pile] -= move.count;
    const took = `Player ${actor + 1} took ${move.count} from pile ${move.pile + 1}`;
    if (this.#piles.every((n) => n === 0)) {
      return { player: actor, observation: `${took} and wins.`, rewardsP: this.#final(actor), done: true, info: { winner: actor } };
    }
    this.#player = (actor + 1) % this.numPlayers;
    const zeros = new Array<number>(this.numPlayers).fill(0);
    return { player: this.#player, observation: this.#observe(this.#player, `${took}. ${pilesText(this.#piles)} Your move.`), rewardsP: zeros, done: false };
  }
}

/** A scripted seat that reads the piles from its observation and plays `move` on them. */
function nimPolicy(id: string, move: (piles: readonly number[], rng: Rng) => NimMove): ScriptedPolicy {
  return {
    kind: 'scripted',
    id,
    act(observation, rng) {
      const piles = parseNimPiles(observation);
      if (piles === null || piles.every((n) => n === 0)) return formatAnswer('1 1');
      return formatNimMove(move(piles, rng));
    },
  };
}

/** A seat that plays uniformly random legal moves (reads the piles from its observation). */
export function nimRandomPolicy(id = 'nim-random'): ScriptedPolicy {
  return nimPolicy(id, randomNimMove);
}

/**
 * A seat that plays Bouton's strategy (reads the piles from its observation): the winning move
 * wherever one exists, so it never loses a position it can win. From a losing position it plays
 * `losing`: 'stall' (default: one object off the largest pile — the longest game, so its opponent
 * has to find the one winning reply the most times over; the stronger fixed opponent) or 'random'
 * (a random legal move, which now and then leaves an easy finish).
 */
export function nimOptimalPolicy(id = 'nim-optimal', losing: 'random' | 'stall' = 'stall'): ScriptedPolicy {
  return nimPolicy(id, (piles, rng) => nimOptimalMove(piles, rng, losing));
}

/**
 * Whole games, every player's moves in order. The demonstrated seat (player 1, or with demoSeat
 * 'each' seat i mod players in game i) moves optimally with probability demoOptimalRate, else at
 * random; so do the other seats with demoOthers 'same', while with 'random' they move at random.
 */
export function nimDemonstrations(n: number, rng: Rng, options: NimOptions = {}): Demonstration[] {
  const o = resolveNimOptions(options);
  return Array.from({ length: n }, (_, i) => {
    const seed = rng.nextU32();
    const player = o.demoSeat === 'each' ? i % o.players : 0;
    const piles = nimPiles(seed, o.piles, o.maxPile);
    const actions: string[] = [];
    while (piles.some((p) => p > 0)) {
      const planned = actions.length % o.players === player || o.demoOthers === 'same';
      const move = planned && rng.nextFloat() < o.demoOptimalRate ? nimOptimalMove(piles, rng, o.demoLosingMove) : randomNimMove(piles, rng);
      piles[move.pile] -= move.count;
      actions.push(formatNimMove(move));
    }
    return player === 0 ? { seed, actions } : { seed, actions, player };
  });
}

/** Every option of nim filled in with its default, each checked (RangeError naming the option). */
export function resolveNimOptions(o: NimOptions): Readonly<Full> {
  const full: Full = { piles: 3, maxPile: 5, players: 2, demoOptimalRate: 0.8, demoLosingMove: 'random', demoOthers: 'same', demoSeat: 'first', ...o };
  for (const [k, allowed] of [['demoLosingMove', ['random', 'stall']], ['demoOthers', ['same', 'random']], ['demoSeat', ['first', 'each']]] as const) {
    if (!(allowed as readonly string[]).includes(full[k])) throw new RangeError(`nim: ${k} must be '${allowed[0]}' or '${allowed[1]}', got ${String(full[k])}`);
  }
  for (const k of ['piles', 'maxPile'] as const) if (!Number.isInteger(full[k]) || full[k] < 1) throw new RangeError(`nim: ${k} must be >= 1, got ${full[k]}`);
  if (!Number.isInteger(full.players) || full.players < 2) throw new RangeError(`nim: players must be >= 2, got ${full.players}`);
  return full;
}

export function nimEnv(options: NimOptions = {}): TurnBasedEnvSpec {
  const o = resolveNimOptions(options);
  return {
    name: 'nim',
    numPlayers: o.players,
    create: () => new NimEnvironment(o),
    demonstrations: (n, rng) => nimDemonstrations(n, rng, o),
  };
}
