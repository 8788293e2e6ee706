/**
 * One rollout entry point over both kinds of protocol (a JobEnv: job_envs.ts), the held-out
 * evaluation of a policy, and the warm start's demonstrations. Plain agent-layer calls over a SamplingClient's SampleFn — no
 * engine types — so the same code runs over the in-process service or the worker's.
 *
 * Success is `reward > 0` for every built-in environment: calculator pays only a correct answer,
 * guess-number only a found number, nim +1 only a win (−1 a loss). Evaluation samples at the
 * training temperature (the policy as RL sees it) with seeds of their own stream, so evaluation
 * episodes never share an env seed stream with training steps.
 */
import { Agent } from '../env/agent.ts';
import { assembleBatch, groupEpisodes, type EpisodeSpec } from '../env/batch.ts';
import { replayDemonstrations, replayTurnBasedDemonstrations } from '../env/demos.ts';
import { nimRandomPolicy } from '../env/envs/nim.ts';
import { rolloutTurnBased } from '../env/multiagent.ts';
import { rolloutEpisodes } from '../env/rollout.ts';
import type { PromptFormat } from '../env/format.ts';
import type { DroppedEpisode, SampleFn, Trajectory, TrajectoryGroup } from '../env/types.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/rng.ts';
import { ConfigError } from '../errors.ts';
import { type DroppedByReason, dropsByReason, stopIfAllDropped } from './env_failures.ts';
import type { JobEnv } from './job_envs.ts';

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

/**
 * What one slice of a rollout gave: its kept and dropped episodes (ids of the whole rollout) and
 * its counters. Slices sampled anywhere — on this host, or by fleet rollout workers — make the same
 * Rollout as the whole sampled at once (rolloutOf), as each episode's sampler seeds come from its
 * id and the engine's tokens for a request do not depend on the rest of its batch.
 */
export interface RolloutPart {
  readonly kept: readonly Trajectory[];
  readonly dropped: readonly DroppedEpisode[];
  readonly toolCalls: number;
  readonly sampledTokens: number;
  readonly sampleCalls: number;
}

/** Runs the episodes of `episodes` at `indices` (default all) with the policy behind `sample`; `seed` drives the sampler seeds. */
export async function rolloutPart(env: JobEnv, sample: SampleFn, episodes: readonly EpisodeSpec[], seed: number, s: AgentSettings, indices?: readonly number[]): Promise<RolloutPart> {
  const agent = agentFor(env, sample, s);
  const only = indices ?? episodes.map((_, k) => k);
  const mine = only.map((i) => {
    if (!Number.isSafeInteger(i) || i < 0 || i >= episodes.length) throw new RangeError(`rolloutPart: episode ${i} is not one of the ${episodes.length}`);
    return episodes[i];
  });
  const o = { seed, indices: only, ...(s.stepTimeoutMs === undefined ? {} : { stepTimeoutMs: s.stepTimeoutMs }) };
  const batch =
    env.kind === 'single'
      ? await rolloutEpisodes(env.spec, agent, mine, 'multi_turn', o)
      : (await rolloutTurnBased(env.spec, [agent, nimRandomPolicy()], mine, { ...o, maxSteps: 2 * env.maxTurns })).seats[0];
  if (batch === null) throw new Error('rollout: the learner seat returned no batch');
  const { toolCalls, sampledTokens, sampleCalls } = batch.metrics;
  return { kept: batch.groups.flatMap((g) => g.trajectories), dropped: batch.dropped, toolCalls, sampledTokens, sampleCalls };
}

/** The Rollout of `episodes` from parts that together hold each episode once, in whatever order they came. */
export function rolloutOf(env: JobEnv, episodes: readonly EpisodeSpec[], parts: readonly RolloutPart[]): Rollout {
  const sum = (k: 'toolCalls' | 'sampledTokens' | 'sampleCalls') => parts.reduce((a, p) => a + p[k], 0);
  const batch = assembleBatch(episodes, parts.flatMap((p) => p.kept), parts.flatMap((p) => p.dropped), { toolCalls: sum('toolCalls'), sampledTokens: sum('sampledTokens'), sampleCalls: sum('sampleCalls') });
  // Each episode at most once (a game whose learner never acted has neither), each one of `episodes`.
  const ids = parts.flatMap((p) => [...p.kept.map((t) => t.episodeId), ...p.dropped.map((d) => d.episodeId)]);
  if (new Set(ids).size !== ids.length || ids.some((i) => i >= episodes.length)) throw new RangeError(`rolloutOf: the parts hold episodes twice or outside the ${episodes.length}`);
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

/** Runs `episodes` with the policy behind `sample`; `seed` drives the sampler seeds. */
export async function rollout(env: JobEnv, sample: SampleFn, episodes: readonly EpisodeSpec[], seed: number, s: AgentSettings): Promise<Rollout> {
  return rolloutOf(env, episodes, [await rolloutPart(env, sample, episodes, seed, s)]);
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
