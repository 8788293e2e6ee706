/**
 * The environments a job can name (`--env`, `train({ env: 'nim' })`, the demo pages' menus): the
 * built-in environments with the settings their jobs use — task mix, demonstration policy, turn
 * and token limits, context — kept apart from the rollout and evaluation code (evaluate.ts) that
 * runs any JobEnv, built-in or a user's own.
 */
import { type CalculatorOptions, calculatorEnv } from '../env/envs/calculator.ts';
import { guessNumberEnv } from '../env/envs/guess_number.ts';
import { nimEnv, type NimOptions } from '../env/envs/nim.ts';
import { plainFormat, type PromptFormat } from '../env/format.ts';
import type { EnvSpec, TurnBasedEnvSpec } from '../env/types.ts';
import { ConfigError } from '../errors.ts';

/** The built-in environments a job can name (`jobEnv(name)`, `--env`). */
export const ENV_NAMES = ['calculator', 'guess-number', 'nim'] as const;
/** One of ENV_NAMES. */
export type EnvName = (typeof ENV_NAMES)[number];

/** A job's environment: single-agent (tools, multi-turn) or a turn-based game against a scripted seat. */
export type JobEnv =
  | ({ readonly kind: 'single'; readonly spec: EnvSpec } & JobEnvLimits)
  | ({ readonly kind: 'game'; readonly spec: TurnBasedEnvSpec } & JobEnvLimits);

/** What every job environment states besides its spec. */
export interface JobEnvLimits {
  readonly name: string;
  readonly maxTurns: number;
  /** Token limit of one action. */
  readonly maxNewTokens: number;
  readonly format?: PromptFormat;
  /**
   * Positions a whole episode needs (byte tokens, with room for sampled actions); a from-scratch
   * model's context is raised to it (`jobOptions`). Absent: the model's own.
   */
  readonly context?: number;
}

/** The calculator tasks of the built-in job (see jobEnv). */
export const CALCULATOR_JOB: CalculatorOptions = Object.freeze({ easyFraction: 0.3, demoToolRate: 0.5, hardA: [10, 99] as const, hardB: [2, 9] as const });

/** The guess-number game of jobs (`jobEnv('guess-number')`, `npm run train -- --env guess-number`). */
export const GUESS_NUMBER_JOB = Object.freeze({ low: 1, high: 16, maxGuesses: 5, showInterval: true, demoMidpointRate: 1, demoLinearRate: 0.5 });

/**
 * The nim game of jobs (`jobEnv('nim')`, the paper bench's arena): two piles of 1..5, and
 * demonstrations a small model can learn from scratch — the demonstrated player always plays
 * Bouton's move (a losing position: one object from the larger pile), the other player moves at
 * random, so the demonstrated moves are a function of the piles, over the positions a random
 * opponent leads to. Game i demonstrates seat i mod 2 (`demoSeat: 'each'`): a warm start that
 * learned only the first seat's moves made self-play degenerate (the first mover won every
 * self-play game but one of 768, so GRPO's groups never differed). With
 * nimEnv's defaults (3 piles; 80% optimal moves, random ones in losing positions; both players
 * alike) gpt2-100k warm starts never beat the random player: optimal-against-optimal games are
 * 59% the same one-object move (measured over 2048 games), and the rest is noise to a look-up.
 */
export const NIM_JOB: NimOptions = Object.freeze({ piles: 2, maxPile: 5, demoOptimalRate: 1, demoLosingMove: 'stall', demoOthers: 'random', demoSeat: 'each' });

/**
 * The prompt format of the built-in jobs: plain text without the tool list. Their models are
 * trained from scratch on byte tokens and learn the tool syntax from the demonstrations; a constant
 * tool description would more than double every sequence (prefill, SFT and RL steps alike).
 */
export const JOB_FORMAT: PromptFormat = plainFormat({ describeTools: false });

/**
 * The environment a name stands for, with the turn limit its episodes need and a per-action token
 * limit a little above its longest well-formed action (decode steps are the costly part of a
 * rollout on a software adapter; a rambling action is cut there and scored by the environment).
 */
export function jobEnv(name: string): JobEnv {
  switch (name) {
    case 'calculator':
      // 30% one-digit tasks, 70% products of a 2-digit and a 1-digit number (3-digit answers a
      // small model copies reliably once it has learned to copy); demonstrations call the tool
      // half of the time and guess otherwise, so RL has to learn when the tool pays off.
      return { name, kind: 'single', spec: calculatorEnv(CALCULATOR_JOB), maxTurns: 3, maxNewTokens: 36, format: JOB_FORMAT, context: 128 }; // <tool>calculator: 999*99</tool>: 31 bytes
    case 'guess-number':
      // 1–16 in 5 guesses, each answer naming the numbers still possible; demonstrations are exact
      // binary searches half of the time and upward scans otherwise (one strategy per episode), so
      // RL has to learn that halving pays off. Exact searches are look-ups a 2-layer model learns in
      // its warm start, where noisy searches (off-midpoint guesses) taught it nothing about the
      // answers.
      return { name, kind: 'single', spec: guessNumberEnv(GUESS_NUMBER_JOB), maxTurns: GUESS_NUMBER_JOB.maxGuesses, maxNewTokens: 24, format: JOB_FORMAT, context: 384 }; // <answer>16</answer>: 19 bytes; demonstrations: median 257, max 316 tokens
    case 'nim':
      // The learner is player 1; player 2 plays uniformly random legal moves.
      return { name, kind: 'game', spec: nimEnv(NIM_JOB), maxTurns: 16, maxNewTokens: 24, format: JOB_FORMAT, context: 512 }; // <answer>2 5</answer>: 20 bytes; demonstrations: median 204, max 423 tokens (2048 of them); a game has at most 10 moves
    default:
      throw new ConfigError('env', `unknown environment "${name}" (known: ${ENV_NAMES.join(', ')})`);
  }
}
