/**
 * Demonstrations → trajectories. A demonstration is an env seed and the action texts a
 * good-enough policy took; replaying it through the real protocol (with a sampling function that
 * emits those actions) gives trajectories laid out exactly like rollouts — same prompt format,
 * same observation and tool-result text, policy mask on the demonstrated actions — ready for SFT.
 *
 * Departure from SFT on prompt/completion text pairs: for multi-turn and tool episodes the
 * observations come from the environment itself, so a warm start never teaches a format the
 * rollout would not produce. (Text pairs are supported too: see algorithms/sft.ts.)
 */
import { Agent, type AgentOptions } from './agent.ts';
import { parseAction } from './actions.ts';
import { InvalidInputError } from './errors.ts';
import { tagToolSyntax } from './tool_calls.ts';
import type { EpisodeSpec } from './batch.ts';
import { rolloutTurnBased } from './multiagent.ts';
import { rolloutMultiTurn } from './rollout.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { deepFreeze } from '../util/freeze.ts';
import type { Demonstration, DroppedEpisode, EnvSpec, SampleFn, Tool, Trajectory, TurnBasedEnvSpec } from './types.ts';

/**
 * A demonstration's actions in the agent's tool-call syntax. Environments write demonstrations in
 * the tag syntax (`formatToolCall`); an agent that speaks a native syntax (an instruct model's
 * `<tool_call>` JSON) must be taught its own, so each tag call is rewritten with
 * `syntax.format` — its arguments shaped by the tool's schema (`tools()`, asked only when a call
 * is found). Answers and plain text pass unchanged.
 */
export function demonstrationActions(actions: readonly string[], options: ReplayAgentOptions, tools: () => readonly Tool[]): string[] {
  const syntax = options.toolSyntax ?? options.format?.toolSyntax ?? tagToolSyntax;
  if (syntax.name === 'tag') return [...actions];
  let byName: Map<string, Tool> | undefined;
  return actions.map((a) => {
    const p = parseAction(a);
    if (p.kind !== 'tool') return a;
    byName ??= new Map(tools().map((t) => [t.name, t]));
    return syntax.format(p.name, p.args, byName.get(p.name));
  });
}

/** An environment's tools, read from a probe instance (closed again, best effort). */
export function specTools(spec: { create(): object }): readonly Tool[] {
  const env = spec.create() as { readonly tools?: readonly Tool[]; close?(): Promise<void> | void };
  const tools = env.tools ?? [];
  try {
    void Promise.resolve(env.close?.()).catch(() => {});
  } catch {
    // closing a probe instance is best effort
  }
  return tools;
}

/** The tools of one instance of `spec` (created once, on first use). */
function toolsOnce(spec: { create(): object }): () => readonly Tool[] {
  let tools: readonly Tool[] | undefined;
  return () => (tools ??= specTools(spec));
}

/**
 * A SampleFn that answers successive requests with successive `actions`, tokenized, log-prob 0.
 * It throws InvalidInputError when it runs out of actions or an action exceeds a request's
 * maxTokens — a demonstration that does not fit its episode is a bug to see, not to hide.
 */
export function scriptedSampleFn(tokenizer: Tokenizer, actions: readonly string[]): SampleFn {
  let next = 0;
  return async (requests) =>
    requests.map((r) => {
      if (next >= actions.length) throw new InvalidInputError('scriptedSampleFn', `asked for action ${next + 1} of a script of ${actions.length}`);
      const tokens = tokenizer.encode(actions[next++]);
      if (tokens.length > r.maxTokens) {
        throw new InvalidInputError('scriptedSampleFn', `action "${actions[next - 1]}" is ${tokens.length} tokens, over maxTokens ${r.maxTokens}`);
      }
      return { tokens, logprobs: tokens.map(() => 0) };
    });
}

/** Agent settings for replay; the sampling function is the script. */
export type ReplayAgentOptions = Omit<AgentOptions, 'sample'>;

export interface ReplayResult {
  /** One trajectory per demonstration (per seat that acted, for games); episodeId = demo index. */
  readonly trajectories: readonly Trajectory[];
  /** Demonstrations whose environment failed during replay. */
  readonly dropped: readonly DroppedEpisode[];
}

function renumber<T extends { episodeId: number; groupId: number }>(items: readonly T[], i: number): T[] {
  return items.map((t) => ({ ...t, episodeId: i, groupId: i }));
}

/** The one episode a demonstration replays: its seed, and its variant when it names one. */
const demoEpisode = (demo: Demonstration): EpisodeSpec => ({ seed: demo.seed, groupId: 0, ...(demo.variant === undefined ? {} : { variant: demo.variant }) });

/** Replays single-agent demonstrations through the multi-turn protocol. */
export async function replayDemonstrations(
  spec: EnvSpec,
  demos: readonly Demonstration[],
  agentOptions: ReplayAgentOptions,
  stepTimeoutMs?: number,
): Promise<ReplayResult> {
  const tools = toolsOnce(spec);
  const batches = await Promise.all(
    demos.map((demo) => {
      const actions = demonstrationActions(demo.actions, agentOptions, tools);
      const agent = new Agent({ ...agentOptions, maxTurns: Math.max(1, demo.actions.length), sample: scriptedSampleFn(agentOptions.tokenizer, actions) });
      return rolloutMultiTurn(spec, agent, [demoEpisode(demo)], { seed: 0, ...(stepTimeoutMs === undefined ? {} : { stepTimeoutMs }) });
    }),
  );
  return deepFreeze({
    trajectories: batches.flatMap((b, i) => renumber(b.groups.flatMap((g) => g.trajectories), i)),
    dropped: batches.flatMap((b, i) => renumber(b.dropped, i)),
  });
}

/** Replays turn-based demonstrations (every player's moves in order); every seat is a learner. */
export async function replayTurnBasedDemonstrations(
  spec: TurnBasedEnvSpec,
  demos: readonly Demonstration[],
  agentOptions: ReplayAgentOptions,
  stepTimeoutMs?: number,
): Promise<ReplayResult> {
  const batches = await Promise.all(
    demos.map((demo) => {
      // One script shared by all seats: a game asks for one action at a time, in turn order.
      const sample = scriptedSampleFn(agentOptions.tokenizer, demonstrationActions(demo.actions, agentOptions, toolsOnce(spec)));
      const seats = Array.from({ length: spec.numPlayers }, (_, p) => new Agent({ ...agentOptions, id: `${agentOptions.id ?? 'player'}-${p}`, maxTurns: Math.max(1, demo.actions.length), sample }));
      return rolloutTurnBased(spec, seats, [demoEpisode(demo)], { seed: 0, maxSteps: Math.max(1, demo.actions.length), ...(stepTimeoutMs === undefined ? {} : { stepTimeoutMs }) });
    }),
  );
  return deepFreeze({
    trajectories: batches.flatMap((b, i) => renumber(b.seats.flatMap((s) => (s === null ? [] : s.groups.flatMap((g) => g.trajectories))), i)),
    dropped: batches.flatMap((b, i) => renumber(b.seats.flatMap((s) => s?.dropped ?? []), i)),
  });
}
