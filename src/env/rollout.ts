/**
 * Single-agent protocols: single-turn (one action, one step) and multi-turn (agent and
 * environment alternate until done, the turn limit or the context limit), with tool calls run by
 * the protocol. `rolloutGroups` samples G attempts at each task for group-relative advantages.
 *
 * All episodes of a call advance in lockstep: each round gathers one request per live episode and
 * calls the sampling function once, so the engine sees a batch instead of N single prompts.
 *
 * Bad input never crashes a batch: an environment that throws (create, reset, step), returns a
 * malformed result, or hangs past `stepTimeoutMs` has its episode dropped with the reason
 * recorded and counted; a NaN or missing reward is 'invalid_reward'. A tool that throws answers
 * `error: <message>` to the agent (the agent's problem, not the environment's); a tool that hangs
 * drops the episode as 'timeout'. Agent text that parses as nothing goes to `step` unchanged.
 * Only a broken sampling function (SampleContractError) or a broken format/tokenizer throws:
 * without a policy no episode can go on.
 */
import type { Agent } from './agent.ts';
import { EpisodeBuilder, requestSeed } from './agent.ts';
import { assembleBatch, type EpisodeSpec, groupEpisodes, newCounters, type RolloutCounters } from './batch.ts';
import { callTool, checkStepResult, guarded } from './guard.ts';
import type { DroppedEpisode, DropReason, EnvSpec, Environment, KeptEndReason, RolloutBatch, SampleResult, Tool, Trajectory } from './types.ts';

export interface RolloutOptions {
  /** Sampler seeds derive from it (with the episode id and turn). */
  readonly seed: number;
  /** Time limit of each create+reset, step and tool call, in ms. Default 30000. */
  readonly stepTimeoutMs?: number;
  /**
   * The episode ids of `episodes` (default their positions): a slice of a larger rollout keeps
   * its episodes' ids, so their sampler seeds and trajectories are those of the whole rollout.
   */
  readonly indices?: readonly number[];
}

/** The episode id of each of `episodes` (options.indices, checked, or the positions). */
export function episodeIds(episodes: readonly unknown[], indices: readonly number[] | undefined): readonly number[] {
  if (indices === undefined) return episodes.map((_, k) => k);
  if (indices.length !== episodes.length || !indices.every((i) => Number.isSafeInteger(i) && i >= 0)) {
    throw new RangeError(`rollout: indices must give one episode id (an integer >= 0) per episode, got ${indices.length} for ${episodes.length}`);
  }
  return indices;
}

export type Protocol = 'single_turn' | 'multi_turn';

interface Live {
  readonly index: number;
  readonly spec: EpisodeSpec;
  readonly env: Environment;
  readonly builder: EpisodeBuilder;
  readonly tools: ReadonlyMap<string, Tool>;
  turn: number;
}

/** Calls env.close() without waiting on it or letting it throw. */
export function closeQuietly(env: { close?(): Promise<void> | void }): void {
  Promise.resolve()
    .then(() => env.close?.())
    .catch(() => {});
}

/** Runs `episodes` with `agent` in fresh environments from `spec`. */
export async function rolloutEpisodes(
  spec: EnvSpec,
  agent: Agent,
  episodes: readonly EpisodeSpec[],
  protocol: Protocol,
  options: RolloutOptions,
): Promise<RolloutBatch> {
  const timeoutMs = options.stepTimeoutMs ?? 30_000;
  const maxTurns = protocol === 'single_turn' ? 1 : agent.maxTurns;
  const kept: Trajectory[] = [];
  const dropped: DroppedEpisode[] = [];
  const counters: RolloutCounters = newCounters();

  const drop = (index: number, e: EpisodeSpec, reason: DropReason, message: string, turns: number, env?: Environment): false => {
    dropped.push({ envName: spec.name, agentId: agent.id, seed: e.seed, groupId: e.groupId, episodeId: index, reason, message, turns });
    if (env !== undefined) closeQuietly(env);
    return false;
  };
  const keep = (ep: Live, endReason: KeptEndReason): false => {
    kept.push(ep.builder.finish({ envName: spec.name, seed: ep.spec.seed, groupId: ep.spec.groupId, episodeId: ep.index, player: 0, endReason }));
    closeQuietly(ep.env);
    return false;
  };

  const start = async (e: EpisodeSpec, index: number): Promise<Live | null> => {
    let env: Environment | undefined;
    const reset = await guarded(`${spec.name}.reset(${e.seed})`, timeoutMs, () => {
      env = spec.create();
      return e.variant === undefined ? env.reset(e.seed) : env.reset(e.seed, e.variant);
    });
    if (!reset.ok) {
      drop(index, e, reset.reason, reset.message, 0, env);
      return null;
    }
    const live = env as Environment;
    if (typeof reset.value !== 'string') {
      drop(index, e, 'env_error', `reset returned ${typeof reset.value}, not a string`, 0, live);
      return null;
    }
    const toolList = protocol === 'single_turn' ? [] : (live.tools ?? []);
    const builder = new EpisodeBuilder(agent, reset.value, toolList);
    if (builder.room() <= 0) {
      drop(index, e, 'env_error', `the initial prompt (${builder.tokensT.length} tokens) leaves no room under maxSequenceTokens ${agent.maxSequenceTokens}`, 0, live);
      return null;
    }
    return { index, spec: e, env: live, builder, tools: new Map(toolList.map((t) => [t.name, t])), turn: 0 };
  };

  /** Applies one sampled action; true while the episode goes on. */
  const advance = async (ep: Live, result: SampleResult): Promise<boolean> => {
    counters.sampledTokens += result.tokens.length;
    const action = ep.builder.appendAction(result);
    ep.turn++;
    const parsed = ep.tools.size > 0 ? agent.toolSyntax.parse(action.text, ep.tools) : ({ kind: 'text', text: action.text } as const);
    if (parsed.kind === 'tool') {
      counters.toolCalls++;
      const called = await callTool(ep.tools, parsed.name, parsed.args, timeoutMs);
      if (!called.ok) return drop(ep.index, ep.spec, called.reason, called.message, ep.turn, ep.env);
      const { output, known } = called.value;
      ep.builder.recordTurn(known ? 'tool' : 'unknown_tool', action, output, 0, { tool: parsed.name, args: parsed.args });
      if (ep.turn >= maxTurns) return keep(ep, 'turn_limit');
      if (!ep.builder.appendFeedback('tool', output, parsed.name)) return keep(ep, 'context_limit');
      return true;
    }
    const stepped = await guarded(`${spec.name}.step`, timeoutMs, () => ep.env.step(action.text));
    if (!stepped.ok) return drop(ep.index, ep.spec, stepped.reason, stepped.message, ep.turn, ep.env);
    const checked = checkStepResult(stepped.value);
    if (!checked.ok) return drop(ep.index, ep.spec, checked.reason, checked.message, ep.turn, ep.env);
    const { observation, reward, done, info } = checked.value;
    ep.builder.recordTurn('env', action, observation, reward, info ?? {});
    if (done) return keep(ep, 'done');
    if (ep.turn >= maxTurns) return keep(ep, 'turn_limit');
    if (!ep.builder.appendFeedback('observation', observation)) return keep(ep, 'context_limit');
    return true;
  };

  const ids = episodeIds(episodes, options.indices);
  let live = (await Promise.all(episodes.map((e, k) => start(e, ids[k])))).filter((x): x is Live => x !== null);
  try {
    while (live.length > 0) {
      const requests = live.map((ep) => ep.builder.request(requestSeed(options.seed, ep.index, 0, ep.turn)));
      const results = await agent.sampleBatch(requests);
      counters.sampleCalls++;
      const going = await Promise.all(live.map((ep, k) => advance(ep, results[k])));
      live = live.filter((_, k) => going[k]);
    }
  } catch (error) {
    for (const ep of live) closeQuietly(ep.env); // a broken policy: release what is still open
    throw error;
  }
  return assembleBatch(episodes, kept, dropped, counters);
}

/** Single-turn protocol: one action per episode, sent to `step` as it is (tools are not offered). */
export function rolloutSingleTurn(spec: EnvSpec, agent: Agent, episodes: readonly EpisodeSpec[], options: RolloutOptions): Promise<RolloutBatch> {
  return rolloutEpisodes(spec, agent, episodes, 'single_turn', options);
}

/** Multi-turn protocol: act, observe, repeat until done or `agent.maxTurns` actions. */
export function rolloutMultiTurn(spec: EnvSpec, agent: Agent, episodes: readonly EpisodeSpec[], options: RolloutOptions): Promise<RolloutBatch> {
  return rolloutEpisodes(spec, agent, episodes, 'multi_turn', options);
}

export interface GroupRolloutOptions extends RolloutOptions {
  /** Number of distinct tasks. */
  readonly groups: number;
  /** Attempts per task (G). */
  readonly groupSize: number;
  /** Default 'multi_turn'. */
  readonly protocol?: Protocol;
}

/** G attempts at each of `groups` tasks; env seeds and sampler seeds both come from `options.seed`. */
export function rolloutGroups(spec: EnvSpec, agent: Agent, options: GroupRolloutOptions): Promise<RolloutBatch> {
  const episodes = groupEpisodes(options.groups, options.groupSize, options.seed);
  return rolloutEpisodes(spec, agent, episodes, options.protocol ?? 'multi_turn', options);
}
