/**
 * `guess-number`: the environment picks an integer in [low, high]; the agent guesses with
 * <answer>N</answer> and hears "higher than N" or "lower than N" until it finds it or runs out of
 * `maxGuesses`. Finding it on guess k (1-based) gives reward (maxGuesses − k + 1) / maxGuesses, so
 * fewer turns pay more; running out gives 0. An unparseable or out-of-range guess uses up a guess
 * and gets a reminder of the format.
 *
 * Demonstrations are noisy binary searches: each guess is the midpoint of the interval still
 * possible with probability `demoMidpointRate`, else a uniform pick inside it (or, with
 * `demoIgnoreFeedback`, anywhere in the whole range: a guess that wastes what the answers said) —
 * good enough to warm start, with room for RL to improve. With `demoLinearRate` a share of the
 * demonstrations are linear scans instead (every guess the lowest number still possible): each
 * episode follows one strategy from its first guess on, so a warm-started policy mixes two
 * strategies it can carry out — both mere look-ups in what the environment said — and RL has one
 * decision to learn, that halving pays off (the calculator's tool-or-guess story). With `showInterval` each answer also
 * names the numbers still possible ("Higher than 8, so 9 to 16."), which a small model can use
 * without tracking every earlier answer. Departure from the classic game: a bare number without the
 * tags is accepted too, because small models drop tags early in training and the reward, not a
 * parse error, should teach the format.
 */
import { extractAnswer, formatAnswer } from '../actions.ts';
import { Rng } from '../../util/rng.ts';
import type { Demonstration, EnvSpec, Environment, StepResult } from '../types.ts';

export interface GuessNumberOptions {
  readonly low?: number;
  readonly high?: number;
  readonly maxGuesses?: number;
  readonly demoMidpointRate?: number;
  /** Demonstrations' non-midpoint guesses ignore the answers so far (uniform over the whole range). Default false. */
  readonly demoIgnoreFeedback?: boolean;
  /** Share of demonstrations that scan upward from the lowest number still possible. Default 0. */
  readonly demoLinearRate?: number;
  /** Each higher/lower answer also names the interval still possible. Default false. */
  readonly showInterval?: boolean;
}

type Full = Required<GuessNumberOptions>;
const SECRET_STREAM = 0x9e55;

function fullOptions(o: GuessNumberOptions): Full {
  const full = { low: 1, high: 32, maxGuesses: 6, demoMidpointRate: 0.75, demoIgnoreFeedback: false, demoLinearRate: 0, showInterval: false, ...o };
  if (!Number.isInteger(full.low) || !Number.isInteger(full.high) || full.high < full.low) throw new RangeError(`guess-number: bad range [${full.low}, ${full.high}]`);
  if (!Number.isInteger(full.maxGuesses) || full.maxGuesses < 1) throw new RangeError(`guess-number: maxGuesses must be >= 1, got ${full.maxGuesses}`);
  for (const k of ['demoMidpointRate', 'demoLinearRate'] as const) {
    if (!(full[k] >= 0 && full[k] <= 1)) throw new RangeError(`guess-number: ${k} must be in [0, 1], got ${full[k]}`);
  }
  return full;
}

/** The secret a seed gives (pure: environments and demonstrations agree). */
export function secretNumber(seed: number, low: number, high: number): number {
  return low + new Rng(seed, SECRET_STREAM).nextInt(high - low + 1);
}

/** The guessed integer in an action, or null. */
export function parseGuess(action: string): number | null {
  const text = extractAnswer(action) ?? action.trim();
  return /^[-+]?\d{1,9}$/.test(text) ? Number(text) : null;
}

/** Reward for finding the number on guess `k` of `maxGuesses`. */
export function guessReward(k: number, maxGuesses: number): number {
  return (maxGuesses - k + 1) / maxGuesses;
}

class GuessNumberEnvironment implements Environment {
  readonly name = 'guess-number';
  readonly #o: Full;
  #secret = 0;
  #guesses = 0;
  /** The interval still possible given the answers so far. */
  #lo = 0;
  #hi = 0;

  constructor(o: Full) {
    this.#o = o;
  }

  async reset(seed: number): Promise<string> {
    this.#secret = secretNumber(seed, this.#o.low, this.#o.high);
    this.#guesses = 0;
    this.#lo = this.#o.low;
    this.#hi = this.#o.high;
    return `Guess my number from ${this.#o.low} to ${this.#o.high} in at most ${this.#o.maxGuesses} guesses. Reply <answer>N</answer>.`;
  }

  async step(action: string): Promise<StepResult> {
    const { low, high, maxGuesses } = this.#o;
    const k = ++this.#guesses;
    const guess = parseGuess(action);
    const left = maxGuesses - k;
    const info = { guesses: k, secret: this.#secret };
    if (guess === this.#secret) return { observation: `Yes, ${guess}.`, reward: guessReward(k, maxGuesses), done: true, info: { ...info, found: true } };
    if (left <= 0) return { observation: `Out of guesses; it was ${this.#secret}.`, reward: 0, done: true, info: { ...info, found: false } };
    if (guess === null || guess < low || guess > high) {
      return { observation: `Invalid guess. Reply <answer>N</answer> with N from ${low} to ${high}. ${left} left.`, reward: 0, done: false, info: { ...info, invalid: true } };
    }
    if (guess < this.#secret) this.#lo = Math.max(this.#lo, guess + 1);
    else this.#hi = Math.min(this.#hi, guess - 1);
    const interval = this.#o.showInterval ? (this.#lo === this.#hi ? `, so ${this.#lo}` : `, so ${this.#lo} to ${this.#hi}`) : '';
    return { observation: `${guess < this.#secret ? 'Higher' : 'Lower'} than ${guess}${interval}. ${left} left.`, reward: 0, done: false, info };
  }
}

/** Noisy binary searches; see the header. */
export function guessNumberDemonstrations(n: number, rng: Rng, options: GuessNumberOptions = {}): Demonstration[] {
  const o = fullOptions(options);
  return Array.from({ length: n }, () => {
    const seed = rng.nextU32();
    const secret = secretNumber(seed, o.low, o.high);
    let lo = o.low;
    let hi = o.high;
    const actions: string[] = [];
    const linear = o.demoLinearRate > 0 && rng.nextFloat() < o.demoLinearRate;
    while (actions.length < o.maxGuesses) {
      const guess = linear ? lo : rng.nextFloat() < o.demoMidpointRate
        ? Math.floor((lo + hi) / 2)
        : o.demoIgnoreFeedback ? o.low + rng.nextInt(o.high - o.low + 1) : lo + rng.nextInt(hi - lo + 1);
      actions.push(formatAnswer(String(guess)));
      if (guess === secret) break;
      if (guess < secret) lo = Math.max(lo, guess + 1);
      else hi = Math.min(hi, guess - 1);
    }
    return { seed, actions };
  });
}

export function guessNumberEnv(options: GuessNumberOptions = {}): EnvSpec {
  const o = fullOptions(options);
  return {
    name: 'guess-number',
    create: () => new GuessNumberEnvironment(o),
    demonstrations: (n, rng) => guessNumberDemonstrations(n, rng, o),
  };
}
