/**
 * Talking to a policy outside training: a chat reply (the user's text as the task, in the prompt
 * format the policy was trained on — the job's `format` — with the environment's tools run for it)
 * and a few episodes of its environment played for show. Plain agent-layer calls over a SampleFn.
 */
import {
  ACTION_STOP_STRINGS,
  Agent,
  ByteTokenizer,
  groupEpisodes,
  type JobEnv,
  nimRandomPolicy,
  parseAction,
  plainFormat,
  rolloutMultiTurn,
  rolloutTurnBased,
  type SampleFn,
  type Tool,
  type Trajectory,
} from '../../../src/mod.ts';

const tok = new ByteTokenizer();

export interface ReplyTurn {
  readonly action: string;
  /** The tool's output, when the action was a call of one of the environment's tools. */
  readonly toolOutput?: string;
}

/** The environment's tools (calculator has one; the games none). */
export function toolsOf(env: JobEnv): readonly Tool[] {
  if (env.kind !== 'single') return [];
  const e = env.spec.create();
  const tools = e.tools ?? [];
  void e.close?.();
  return tools;
}

/**
 * The policy's answer to `question`: up to `maxTurns` actions; a tool call is run and its result
 * appended, as in training, before the next action.
 */
export async function reply(sample: SampleFn, env: JobEnv, question: string, o: { maxSeqLen: number; seed: number; temperature?: number; maxTurns?: number }): Promise<ReplyTurn[]> {
  const format = env.format ?? plainFormat();
  const tools = toolsOf(env);
  const tokens = [tok.bosId!, ...tok.encode(format.initial(question.trim(), tools))];
  const turns: ReplyTurn[] = [];
  for (let turn = 0; turn < (o.maxTurns ?? 3); turn++) {
    const room = o.maxSeqLen - tokens.length;
    if (room < 4) break;
    const [r] = await sample([{
      promptTokens: tokens, maxTokens: Math.min(env.maxNewTokens, room), stopStrings: ACTION_STOP_STRINGS, stopTokens: [tok.eosId],
      temperature: o.temperature ?? 0.7, seed: (o.seed + turn * 0x9e37) >>> 0,
    }]);
    const ids = r.tokens.filter((t) => t !== tok.eosId);
    const action = tok.decode(ids);
    tokens.push(...r.tokens);
    const a = parseAction(action);
    const tool = a.kind === 'tool' ? tools.find((t) => t.name === a.name) : undefined;
    if (a.kind !== 'tool' || !tool) {
      turns.push({ action });
      break;
    }
    let out: string;
    try {
      out = await tool.call(a.args);
    } catch (e) {
      out = `error: ${e instanceof Error ? e.message : String(e)}`;
    }
    turns.push({ action, toolOutput: out });
    tokens.push(...tok.encode(format.toolResult(tool.name, out, { history: [], endedWithStopToken: false })));
  }
  return turns;
}

export interface Episode {
  readonly text: string;
  readonly reward: number;
  readonly endReason: string;
}

/** `n` episodes of the environment with the policy (games: as player 1 against random moves). */
export async function playEpisodes(sample: SampleFn, env: JobEnv, n: number, o: { maxSeqLen: number; seed: number }): Promise<Episode[]> {
  const agent = new Agent({
    sample, tokenizer: tok, maxTurns: env.maxTurns, maxNewTokens: env.maxNewTokens, maxSequenceTokens: o.maxSeqLen, temperature: 0.7,
    ...(env.format ? { format: env.format } : {}),
  });
  const episodes = groupEpisodes(n, 1, o.seed);
  const batch = env.kind === 'single'
    ? await rolloutMultiTurn(env.spec, agent, episodes, { seed: o.seed })
    : (await rolloutTurnBased(env.spec, [agent, nimRandomPolicy()], episodes, { seed: o.seed, maxSteps: 2 * env.maxTurns })).seats[0];
  const trajs: Trajectory[] = batch ? batch.groups.flatMap((g) => [...g.trajectories]) : [];
  return trajs.map((t) => ({ text: tok.decode([...t.tokensT].filter((id) => id !== tok.bosId && id !== tok.eosId)), reward: t.reward, endReason: t.endReason }));
}

/** A task of the environment as its first observation says it (what a user may ask the policy). */
export async function sampleTask(env: JobEnv, seed: number): Promise<string> {
  const e = env.spec.create();
  try {
    const first = await e.reset(seed);
    return typeof first === 'string' ? first : first.observation;
  } finally {
    void e.close?.();
  }
}
