/**
 * The environments a job can name, one rollout entry point over both kinds of protocol, and the
 * held-out evaluation of a policy. Plain agent-layer calls over a SamplingClient's SampleFn — no
 * engine types — so the same code runs over the in-process service or the worker's.
 *
 * Success is `reward > 0` for every built-in environment: calculator pays only a correct answer,
 * guess-number only a found number, nim +1 only a win (−1 a loss). Evaluation samples at the
 * training temperature (the policy as RL sees it) with seeds of their own stream, so evaluation
 * episodes never share an env seed stream with training steps.
 */
import { Agent } from '../env/agent.ts';
import { groupEpisodes, type EpisodeSpec } from '../env/batch.ts';
import { replayDemonstrations, replayTurnBasedDemonstrations } from '../env/demos.ts';
import { type CalculatorOptions, calculatorEnv } from '../env/envs/calculator.ts';
import { guessNumberEnv } from '../env/envs/guess_number.ts';
import { nimEnv, type NimOptions, nimRandomPolicy } from '../env/envs/nim.ts';
import { rolloutTurnBased } from '../env/multiagent.ts';
import { rolloutEpisodes } from '../env/rollout.ts';
import { plainFormat, type PromptFormat } from '../env/format.ts';
import type { DroppedEpisode, EnvSpec, SampleFn, Trajectory, TrajectoryGroup, TurnBasedEnvSpec } from '../env/types.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/rng.ts';
import { ConfigError } from '../errors.ts';
import { type DroppedByReason, dropsByReason, stopIfAllDropped } from './env_failures.ts';

export const ENV_NAMES = ['calculator', 'guess-number', 'nim'] as const;
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

/**
 * The prompt format of the built-in jobs: plain text without the tool list. Their models are
 * trained from scratch on byte tokens and learn the tool syntax from the demonstrations; a constant
 * tool description would more than double every sequence (prefill, SFT and RL steps alike).
 */
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

export interface AgentSettings {
  readonly tokenizer: Tokenizer;
  readonly maxNewTokens: number;
  readonly maxSequenceTokens: number;
  readonly temperature: number;
  /** The prompt format, over the environment's own (a pretrained model's chat template). */
  readonly format?: PromptFormat;
  /** Further stop ids (a pretrained model's generation_config eos ids). */
  readonly eosTokenIds?: readonly number[];
  /** Time limit of each environment call (create + reset, step, a tool) in ms; default 30000 (rollout.ts). */
  readonly stepTimeoutMs?: number;
}

function agentFor(env: JobEnv, sample: SampleFn, s: AgentSettings): Agent {
  return new Agent({
    sample,
    tokenizer: s.tokenizer,
    maxTurns: env.maxTurns,
    maxNewTokens: s.maxNewTokens,
    maxSequenceTokens: s.maxSequenceTokens,
    temperature: s.temperature,
    ...agentFormat(env, s),
  });
}

/** The Agent options of a job's format and stop ids: the settings' format over the environment's. */
function agentFormat(env: JobEnv, s: AgentSettings): { format?: PromptFormat; eosTokenIds?: readonly number[] } {
  const format = s.format ?? env.format;
  return { ...(format ? { format } : {}), ...(s.eosTokenIds ? { eosTokenIds: s.eosTokenIds } : {}) };
}

export interface Rollout {
  /** The learner's trajectories by group (dropped episodes absent). */
  readonly groups: readonly TrajectoryGroup[];
  readonly episodes: number;
  readonly dropped: number;
  /** The dropped episodes by reason, each with its count and first message (empty when none). */
  readonly droppedBy: DroppedByReason;
  /** The dropped episodes themselves. */
  readonly droppedEpisodes: readonly DroppedEpisode[];
  readonly meanReward: number;
  /** Share of episodes (dropped ones count as failures) with reward > 0. */
  readonly success: number;
  readonly sampledTokens: number;
  /** Kept episodes that ended because the agent used up its turns (tool calls count as turns). */
  readonly turnLimited: number;
}

/** Runs `episodes` with the policy behind `sample`; `seed` drives the sampler seeds. */
export async function rollout(env: JobEnv, sample: SampleFn, episodes: readonly EpisodeSpec[], seed: number, s: AgentSettings): Promise<Rollout> {
  const agent = agentFor(env, sample, s);
  const timeout = s.stepTimeoutMs === undefined ? {} : { stepTimeoutMs: s.stepTimeoutMs };
  const batch =
    env.kind === 'single'
      ? await rolloutEpisodes(env.spec, agent, episodes, 'multi_turn', { seed, ...timeout })
      : (await rolloutTurnBased(env.spec, [agent, nimRandomPolicy()], episodes, { seed, maxSteps: 2 * env.maxTurns, ...timeout })).seats[0];
  if (batch === null) throw new Error('rollout: the learner seat returned no batch');
  const trajs = batch.groups.flatMap((g) => g.trajectories);
  const n = episodes.length;
  return {
    groups: batch.groups,
    episodes: n,
    dropped: batch.metrics.dropped,
    droppedBy: dropsByReason(batch.dropped),
    droppedEpisodes: batch.dropped,
    meanReward: batch.metrics.meanReward,
    success: n === 0 ? 0 : trajs.filter(env.spec.success ?? isSuccess).length / n,
    sampledTokens: batch.metrics.sampledTokens,
    turnLimited: trajs.filter((t) => t.endReason === 'turn_limit').length,
  };
}

/** The default success of an episode: reward > 0 (EnvSpec.success overrides it). */
export function isSuccess(t: Trajectory): boolean {
  return t.reward > 0;
}

/** Rng stream of held-out evaluation seeds. */
const EVAL_STREAM = 0xe7a1;

/** `n` held-out episodes (one attempt each), their env seeds from the job seed's evaluation stream. */
export function evalEpisodes(n: number, jobSeed: number): EpisodeSpec[] {
  return groupEpisodes(n, 1, new Rng(jobSeed, EVAL_STREAM).nextU32());
}

/**
 * Success rate and mean reward of a policy on the held-out episodes. EnvironmentError when the
 * environment failed every one of them (a success of 0 would blame the policy).
 */
export async function evaluate(env: JobEnv, sample: SampleFn, n: number, jobSeed: number, s: AgentSettings): Promise<{ success: number; meanReward: number; sampledTokens: number }> {
  const r = await rollout(env, sample, evalEpisodes(n, jobSeed), jobSeed ^ EVAL_STREAM, s);
  stopIfAllDropped(env.name, 'the held-out evaluation', r.episodes, r.droppedEpisodes);
  return { success: r.success, meanReward: r.meanReward, sampledTokens: r.sampledTokens };
}

/** `n` demonstrations from the environment's generator, replayed into trajectories (SFT data). */
export async function demonstrationTrajectories(env: JobEnv, n: number, seed: number, s: AgentSettings): Promise<readonly Trajectory[]> {
  const rng = new Rng(seed, 0xde70);
  // Replay is not limited by the sampling budget: a demonstration's action is as long as it is.
  const opts = { tokenizer: s.tokenizer, maxNewTokens: s.maxSequenceTokens, maxSequenceTokens: s.maxSequenceTokens, ...agentFormat(env, s) };
  const demos = env.spec.demonstrations?.(n, rng) ?? [];
  if (demos.length === 0) throw new ConfigError('env', `${env.name} has no demonstrations for a warm start (use --no-warmstart)`);
  const replayed = env.kind === 'single'
    ? await replayDemonstrations(env.spec, demos, opts, s.stepTimeoutMs)
    : await replayTurnBasedDemonstrations(env.spec, demos, opts, s.stepTimeoutMs);
  // Every demonstration failed: the warm start would train on nothing.
  stopIfAllDropped(env.name, "the warm start's demonstrations", demos.length, replayed.dropped);
  // A demonstration cut at the context limit would teach a truncated episode: refuse, saying what fits.
  const cut = replayed.trajectories.find((t) => t.endReason === 'context_limit');
  if (cut) {
    const d = demos[cut.episodeId];
    throw new ConfigError('model.maxSeqLen', `demonstration ${cut.episodeId} of ${env.name} (seed ${d.seed}: ${JSON.stringify(d.actions.join(' ').slice(0, 80))}) does not fit the context of ${s.maxSequenceTokens} positions (cut after ${cut.tokensT.length} tokens, ${cut.turns.length} of ${d.actions.length} actions); raise it with a model of a longer maxSeqLen (a ModelConfig's maxSeqLen, or a JobEnv's context)`);
  }
  if (env.kind === 'single') return replayed.trajectories;
  // Games: learn each game's demonstrated seat (player 1 unless the demonstration names another).
  return replayed.trajectories.filter((t) => t.player === (demos[t.episodeId].player ?? 0));
}
