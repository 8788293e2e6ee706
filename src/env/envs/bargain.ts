/**
 * `bargain`: a sale with private values, for two learning agents with opposed interests. The
 * seller (player 1) alone knows what the item cost it, c; the buyer (player 2) alone knows what the
 * item is worth to it, v. The seller names a price p (a digit); the price reaches the buyer as its
 * observation beside its own value, and the buyer accepts or rejects. A sale pays the seller
 * (p − c)/9 and the buyer (v − p)/9; no sale pays both 0. Costs are drawn from `costs`, values
 * from `values`, independently — neither side sees the other's number.
 *
 * The game has one best response on each side, which makes "converges" measurable: the buyer's is
 * to accept exactly the prices at or below its value (`bargainBestBuyer`); the seller's, against
 * that buyer, the price maximising (p − c)·P(v ≥ p) (`bargainBestPrice`). The scripted seats
 * `bargainTruthfulBuyer` and `bargainRandomSeller` are the fixed opponents a learner is measured
 * against before and after: the seller's return against the truthful buyer, and the buyer's
 * against sellers that ask uniformly random prices (where accepting exactly p ≤ v is best).
 *
 * The demonstrations teach the formats alone — uniformly random prices, uniformly random answers,
 * each seat demonstrated in every other game — not a strategy. Malformed actions: a price that is
 * no digit ends the game with no sale (the buyer is not asked); an answer that is neither
 * accept nor reject is a rejection. `prompt: 'short'` leaves out the instructions ("Seller. Cost 3.",
 * "Buyer. Worth 7. Price 5."), so the numbers are a large share of a short context — as the
 * signalling game's short prompts, where a small model picks up a mapping the long ones hide.
 * `answers: 'bare'` makes each answer one token (the digit alone; y or n), as the signalling game's
 * bare messages: with a seat's `maxNewTokens: 1` and `vocabulary` no answer can be malformed.
 */
import { extractAnswer, formatAnswer } from '../actions.ts';
import type { ScriptedPolicy } from '../multiagent.ts';
import { Rng } from '../../util/rng.ts';
import type { Demonstration, Trajectory, TurnBasedEnvironment, TurnBasedEnvSpec, TurnObservation, TurnStepResult } from '../types.ts';

export interface BargainOptions {
  /** The seller's costs, each equally likely. Default 0..4. */
  readonly costs?: readonly number[];
  /** The buyer's values, each equally likely. Default 3..9. */
  readonly values?: readonly number[];
  /** 'full' (default): the game and the answer format spelled out; 'short': the seat and its numbers alone ("Buyer. Worth 7. Price 5."). */
  readonly prompt?: 'full' | 'short';
  /**
   * 'tagged' (default): answers in answer tags (`<answer>5</answer>`, `<answer>accept</answer>`);
   * 'bare': the price as the digit alone and the buyer's answer as `y` or `n`, each one token of
   * the byte vocabulary, so a seat with `maxNewTokens: 1` and a `vocabulary` cannot break the format.
   */
  readonly answers?: BargainAnswers;
}

export type BargainAnswers = 'tagged' | 'bare';
type Full = { readonly costs: readonly number[]; readonly values: readonly number[]; readonly prompt: 'full' | 'short'; readonly answers: BargainAnswers };
const GAME_STREAM = 0xba29;
const PRICES = 10;

function digits(name: string, xs: readonly number[]): number[] {
  const out = [...xs];
  if (out.length === 0 || new Set(out).size !== out.length || out.some((x) => !Number.isInteger(x) || x < 0 || x > 9)) {
    throw new RangeError(`bargain: ${name} must be distinct digits 0..9, got ${JSON.stringify(xs)}`);
  }
  return out;
}

/** Every option filled in and checked (RangeError naming the option). */
export function resolveBargainOptions(o: BargainOptions = {}): Full {
  if (o.prompt !== undefined && o.prompt !== 'full' && o.prompt !== 'short') throw new RangeError(`bargain: prompt must be 'full' or 'short', got ${String(o.prompt)}`);
  if (o.answers !== undefined && o.answers !== 'tagged' && o.answers !== 'bare') throw new RangeError(`bargain: answers must be 'tagged' or 'bare', got ${String(o.answers)}`);
  return { costs: digits('costs', o.costs ?? [0, 1, 2, 3, 4]), values: digits('values', o.values ?? [3, 4, 5, 6, 7, 8, 9]), prompt: o.prompt ?? 'full', answers: o.answers ?? 'tagged' };
}

/** A game's private numbers: the seller's cost and the buyer's value. */
export function bargainGame(seed: number, o: BargainOptions = {}): { cost: number; value: number } {
  const f = resolveBargainOptions(o);
  const rng = new Rng(seed, GAME_STREAM);
  return { cost: f.costs[rng.nextInt(f.costs.length)], value: f.values[rng.nextInt(f.values.length)] };
}

/** The price a seller named (its answer tag, or the bare text): a digit, or null. */
export function parsePrice(action: string): number | null {
  const text = (extractAnswer(action) ?? action).trim();
  return /^[0-9]$/.test(text) ? Number(text) : null;
}

/** The buyer's answer: true for accept (`accept`, or `y` as a bare answer), false for reject or anything else. */
export function parseAccept(action: string): boolean {
  const text = (extractAnswer(action) ?? action).trim().toLowerCase();
  return text === 'accept' || text === 'y';
}

// `text` in the form `answers` asks for (the options already resolved).
const answerAs = (answers: BargainAnswers, text: string): string =>
  answers === 'tagged' ? formatAnswer(text) : text === 'accept' ? 'y' : text === 'reject' ? 'n' : text;

/** A seat's answer in the game's form: `text` tagged, or bare (the buyer's accept/reject as y/n). */
export function bargainAnswer(o: BargainOptions, text: string): string {
  return answerAs(resolveBargainOptions(o).answers, text);
}

const sellerText = (o: Full, cost: number) =>
  o.prompt === 'short' ? `Seller. Cost ${cost}.` :
  `Sale game, you are the seller. The item cost you ${cost}. Name a price from 0 to 9: ${o.answers === 'bare' ? 'the digit alone.' : '<answer>DIGIT</answer>.'}`;
// The buyer is asked only when a price was named.
const buyerText = (o: Full, value: number, price: number) =>
  o.prompt === 'short' ? `Buyer. Worth ${value}. Price ${price}.` :
  `Sale game, you are the buyer. The item is worth ${value} to you. Price asked: ${price}. Answer ${o.answers === 'bare' ? 'y (accept) or n (reject).' : '<answer>accept</answer> or <answer>reject</answer>.'}`;

/** Each side's payoff of a sale at `price` (both 0 without one). */
export function bargainPayoffs(cost: number, value: number, price: number | null, accepted: boolean): [number, number] {
  return price !== null && accepted ? [(price - cost) / 9, (value - price) / 9] : [0, 0];
}

class BargainEnvironment implements TurnBasedEnvironment {
  readonly name = 'bargain';
  readonly numPlayers = 2;
  readonly #o: Full;
  #game = { cost: 0, value: 0 };
  #price: number | null = null;
  #turn = 0;

  constructor(o: Full) {
    this.#o = o;
  }

  async reset(seed: number): Promise<TurnObservation> {
    this.#game = bargainGame(seed, this.#o);
    this.#price = null;
    this.#turn = 0;
    return { player: 0, observation: sellerText(this.#o, this.#game.cost) };
  }

  async step(action: string): Promise<TurnStepResult> {
    const { cost, value } = this.#game;
    if (this.#turn === 0) {
      this.#turn = 1;
      this.#price = parsePrice(action);
      // No price, no sale: the buyer is not asked.
      if (this.#price === null) return { player: 0, observation: 'No price was named: no sale.', rewardsP: [0, 0], done: true, info: { cost, value, price: null, accepted: false } };
      return { player: 1, observation: buyerText(this.#o, value, this.#price), rewardsP: [0, 0], done: false, info: { price: this.#price } };
    }
    const accepted = parseAccept(action);
    const rewardsP = bargainPayoffs(cost, value, this.#price, accepted);
    const outcome = accepted ? `Sold at ${this.#price}.` : 'No sale.';
    return { player: 1, observation: outcome, rewardsP, done: true, info: { cost, value, price: this.#price, accepted } };
  }
}

/** Whole games: in game i seat i mod 2 is demonstrated; prices and answers uniformly random (the formats, no strategy). */
export function bargainDemonstrations(n: number, rng: Rng, options: BargainOptions = {}): Demonstration[] {
  const { answers } = resolveBargainOptions(options);
  return Array.from({ length: n }, (_, i) => {
    const seed = rng.nextU32();
    const price = rng.nextInt(PRICES);
    const answer = rng.nextInt(2) === 0 ? 'accept' : 'reject';
    const player = i % 2;
    return { seed, actions: [answerAs(answers, String(price)), answerAs(answers, answer)], ...(player === 0 ? {} : { player }) };
  });
}

/** Success for either seat: a sale that paid it more than nothing. */
export const bargainSuccess = (t: Trajectory): boolean => t.reward > 0;

export function bargainEnv(options: BargainOptions = {}): TurnBasedEnvSpec {
  const o = resolveBargainOptions(options);
  return {
    name: 'bargain',
    numPlayers: 2,
    create: () => new BargainEnvironment(o),
    demonstrations: (n, rng) => bargainDemonstrations(n, rng, o),
    success: bargainSuccess,
  };
}

const numberAfter = (observation: string, re: RegExp): number | null => {
  const m = re.exec(observation);
  return m === null ? null : Number(m[1]);
};
// Either prompt's wording ('full' first, then 'short').
const costOf = (obs: string) => numberAfter(obs, /(?:cost you|Seller\. Cost) (\d)\./);
const valueOf = (obs: string) => numberAfter(obs, /(?:worth|Buyer\. Worth) (\d)(?: to you)?\./);
const priceOf = (obs: string) => numberAfter(obs, /(?:Price asked:|\. Price) (\d)\./);

/** The seller's best price at `cost` against a buyer who accepts exactly p ≤ v (ties: the lower price). */
export function bargainBestPrice(cost: number, options: BargainOptions = {}): number {
  const o = resolveBargainOptions(options);
  let best = 0, bestGain = -Infinity;
  for (let p = 0; p < PRICES; p++) {
    const gain = (p - cost) * o.values.filter((v) => v >= p).length;
    if (gain > bestGain) [best, bestGain] = [p, gain];
  }
  return best;
}

/** The buyer's best answer: accept exactly the prices at or below its value. */
export const bargainBestBuyer = (value: number, price: number): boolean => price <= value;

/** A buyer that accepts exactly the prices at or below its value (the best response to any seller). */
export function bargainTruthfulBuyer(id = 'bargain-truthful-buyer'): ScriptedPolicy {
  return { kind: 'scripted', id, act: (obs) => formatAnswer(bargainBestBuyer(valueOf(obs) ?? -1, priceOf(obs) ?? PRICES) ? 'accept' : 'reject') };
}

/** A seller that asks a uniformly random price (0..9). */
export function bargainRandomSeller(id = 'bargain-random-seller'): ScriptedPolicy {
  return { kind: 'scripted', id, act: (_obs, rng) => formatAnswer(String(rng.nextInt(PRICES))) };
}

/** The seller that asks its best price against a truthful buyer. */
export function bargainBestSeller(options: BargainOptions = {}, id = 'bargain-best-seller'): ScriptedPolicy {
  return { kind: 'scripted', id, act: (obs) => formatAnswer(String(bargainBestPrice(costOf(obs) ?? 0, options))) };
}

/** A buyer that answers at random (the warm start's behaviour). */
export function bargainRandomBuyer(id = 'bargain-random-buyer'): ScriptedPolicy {
  return { kind: 'scripted', id, act: (_obs, rng) => formatAnswer(rng.nextInt(2) === 0 ? 'accept' : 'reject') };
}

/**
 * Exact expected returns of the fixed strategies a learner is measured against, over uniform
 * costs, values and (for a random seller) prices: the seller against a truthful buyer, asking at
 * random or its best price; the buyer against random prices, answering by coin or truthfully.
 */
export function bargainReferences(options: BargainOptions = {}): { sellerRandom: number; sellerBest: number; buyerCoin: number; buyerTruthful: number } {
  const o = resolveBargainOptions(options);
  const prices = [...Array(PRICES).keys()];
  const mean = (f: (c: number, v: number) => number) => o.costs.reduce((s, c) => s + o.values.reduce((t, v) => t + f(c, v), 0), 0) / (o.costs.length * o.values.length);
  const overPrices = (f: (p: number) => number) => prices.reduce((s, p) => s + f(p), 0) / PRICES;
  const seller = (c: number, v: number, p: number) => bargainPayoffs(c, v, p, bargainBestBuyer(v, p))[0];
  const buyer = (c: number, v: number, p: number, accept: boolean) => bargainPayoffs(c, v, p, accept)[1];
  return {
    sellerRandom: mean((c, v) => overPrices((p) => seller(c, v, p))),
    sellerBest: mean((c, v) => seller(c, v, bargainBestPrice(c, o))),
    buyerCoin: mean((c, v) => overPrices((p) => (buyer(c, v, p, true) + buyer(c, v, p, false)) / 2)),
    buyerTruthful: mean((c, v) => overPrices((p) => buyer(c, v, p, bargainBestBuyer(v, p)))),
  };
}
