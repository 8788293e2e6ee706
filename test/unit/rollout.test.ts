import { describe, expect, it } from 'vitest';
import { Agent, requestSeed } from '../../src/env/agent.ts';
import { assembleBatch, groupEpisodes } from '../../src/env/batch.ts';
import { replayDemonstrations } from '../../src/env/demos.ts';
import { SampleContractError } from '../../src/env/errors.ts';
import { rolloutGroups, rolloutMultiTurn, rolloutSingleTurn } from '../../src/env/rollout.ts';
import type { EnvSpec, Environment, SampleFn, Tool } from '../../src/env/types.ts';
import { isPlainData } from '../../src/util/freeze.ts';
import { fakePolicy, scriptedEnv, type ScriptStep, tok } from './env_fakes.ts';

const specOf = (make: () => Environment, name = 'scripted'): EnvSpec => ({ name, create: make });
const ok = (reward: number, done: boolean, observation = 'obs'): ScriptStep => ({ observation, reward, done });
const agentWith = (sample: SampleFn, extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}) => new Agent({ sample, tokenizer: tok, ...extra });
const one = [{ seed: 5, groupId: 0 }];

describe('multi-turn protocol', () => {
  it("hands a demonstration's variant to reset, and none in rollouts", async () => {
    const seen: unknown[][] = [];
    const spec = specOf(() => ({ name: 'v', reset: async (...args: unknown[]) => (seen.push(args), 'task'), step: async () => ({ observation: 'end', reward: 1, done: true }) }));
    const r = await replayDemonstrations(spec, [{ seed: 3, actions: ['x'], variant: 'drill' }, { seed: 4, actions: ['y'] }], { tokenizer: tok });
    expect(r.trajectories.length).toBe(2);
    await rolloutMultiTurn(spec, agentWith(fakePolicy(() => 'z')), one, { seed: 1 });
    expect(seen).toEqual([[3, 'drill'], [4], [5]]);
  });

  it('alternates agent and environment and records a token-level trajectory', async () => {
    const env = scriptedEnv([ok(0.5, false, 'more'), ok(1, true, 'end')]);
    const policy = fakePolicy((_p, r) => `a${r.promptTokens.length % 2}`);
    const batch = await rolloutMultiTurn(specOf(() => env), agentWith(policy), one, { seed: 1 });
    const t = batch.groups[0].trajectories[0];
    // Sequence: <bos> "task 5\n" | action 1 | "\nmore\n" | action 2 (the final observation is not appended).
    const prompt = [tok.bosId, ...tok.encode('task 5\n')];
    expect(t.tokensT.slice(0, t.promptLength)).toEqual(prompt);
    const a1 = t.turns[0];
    const a2 = t.turns[1];
    expect(a1.actionStart).toBe(prompt.length);
    expect(tok.decode(t.tokensT.slice(a1.actionEnd, a2.actionStart))).toBe('\nmore\n');
    expect(a2.actionEnd).toBe(t.tokensT.length);
    expect(env.actions).toEqual([a1.action, a2.action]);
    // Mask: 1 exactly on the two actions; log-probs there, 0 elsewhere.
    const expectedMask = t.tokensT.map((_, i) => ((i >= a1.actionStart && i < a1.actionEnd) || i >= a2.actionStart ? 1 : 0));
    expect(t.policyMaskT).toEqual(expectedMask);
    expect(t.logprobsT).toEqual(expectedMask.map((m) => (m ? -0.5 : 0)));
    expect(t.turns.map((x) => [x.kind, x.reward, x.observation])).toEqual([['env', 0.5, 'more'], ['env', 1, 'end']]);
    expect(t.reward).toBe(1.5);
    expect(t.endReason).toBe('done');
    expect(batch.metrics).toMatchObject({ episodes: 1, kept: 1, dropped: 0, meanReward: 1.5, meanTurns: 2, sampleCalls: 2 });
    expect(env.closed).toBe(1);
  });

  it('stops at the turn limit and keeps the episode as truncated', async () => {
    const env = scriptedEnv([ok(0.1, false)]);
    const batch = await rolloutMultiTurn(specOf(() => env), agentWith(fakePolicy(() => 'x'), { maxTurns: 3 }), one, { seed: 1 });
    const t = batch.groups[0].trajectories[0];
    expect([t.endReason, t.turns.length]).toEqual(['turn_limit', 3]);
    expect(t.reward).toBeCloseTo(0.3, 12);
    expect(batch.metrics.endReasons.turn_limit).toBe(1);
  });

  it('ends at the context limit without exceeding maxSequenceTokens', async () => {
    const env = scriptedEnv([ok(0, false, 'a long observation that fills the context')]);
    const agent = agentWith(fakePolicy(() => 'abcdefgh'), { maxSequenceTokens: 40, maxTurns: 50 });
    const batch = await rolloutMultiTurn(specOf(() => env), agent, one, { seed: 1 });
    const t = batch.groups[0].trajectories[0];
    expect(t.endReason).toBe('context_limit');
    expect(t.tokensT.length).toBeLessThanOrEqual(40);
  });

  it('drops episodes whose environment throws, hangs, or returns bad rewards, and goes on', async () => {
    const envs: Environment[] = [
      scriptedEnv([ok(1, true)]),
      scriptedEnv(['throw']),
      scriptedEnv(['hang']),
      scriptedEnv([{ raw: { observation: 'x', reward: Number.NaN, done: true } }]),
      scriptedEnv([{ raw: { observation: 'x', done: true } }]),
      scriptedEnv([{ raw: 'not an object' }]),
      scriptedEnv([ok(1, true)], { resetThrows: true }),
      scriptedEnv([ok(1, true)], { resetHangs: true }),
      scriptedEnv([{ raw: { observation: 7, reward: 0, done: true } }]),
      scriptedEnv([ok(0.25, true)]),
    ];
    let k = 0;
    const spec = specOf(() => envs[k++]);
    const episodes = envs.map((_, i) => ({ seed: i, groupId: 0 }));
    const batch = await rolloutMultiTurn(spec, agentWith(fakePolicy(() => 'go')), episodes, { seed: 3, stepTimeoutMs: 30 });
    expect(batch.groups[0].trajectories.map((t) => [t.episodeId, t.reward])).toEqual([[0, 1], [9, 0.25]]);
    expect(batch.dropped.map((d) => [d.episodeId, d.reason])).toEqual([
      [1, 'env_error'], [2, 'timeout'], [3, 'invalid_reward'], [4, 'invalid_reward'], [5, 'env_error'], [6, 'env_error'], [7, 'timeout'], [8, 'env_error'],
    ]);
    expect(batch.dropped[0].message).toMatch(/step exploded/);
    expect(batch.dropped[2].message).toMatch(/reward NaN/);
    expect(batch.dropped[5].message).toMatch(/reset exploded/);
    expect(batch.metrics).toMatchObject({ episodes: 10, kept: 2, dropped: 8, meanReward: 0.625 });
    expect(batch.metrics.endReasons).toEqual({ done: 2, turn_limit: 0, context_limit: 0, timeout: 2, env_error: 4, invalid_reward: 2 });
  });

  it('drops an episode whose environment factory throws', async () => {
    const spec: EnvSpec = { name: 'broken', create: () => { throw new Error('no env for you'); } };
    const batch = await rolloutMultiTurn(spec, agentWith(fakePolicy(() => 'x')), one, { seed: 0 });
    expect(batch.dropped.map((d) => [d.reason, d.message])).toEqual([['env_error', 'broken.reset(5) threw Error: no env for you']]);
  });

  it('sends unparseable text to the environment unchanged', async () => {
    const env = scriptedEnv([ok(0, true)]);
    const garbage = '<tool>calc: 1+<answer>?? \u0000';
    await rolloutMultiTurn(specOf(() => env), agentWith(fakePolicy(() => garbage)), one, { seed: 0 });
    expect(env.actions).toEqual([garbage]);
  });

  it('batches all live episodes into one sampling call per round, with distinct per-episode seeds', async () => {
    const policy = fakePolicy(() => 'x');
    const spec = specOf(() => scriptedEnv([ok(0, false), ok(0, false), ok(1, true)]));
    const episodes = [0, 1, 2, 3].map((i) => ({ seed: 10 + i, groupId: i }));
    const batch = await rolloutMultiTurn(spec, agentWith(policy), episodes, { seed: 99 });
    expect(policy.calls.map((c) => c.length)).toEqual([4, 4, 4]);
    expect(batch.metrics.sampleCalls).toBe(3);
    expect(policy.calls[0].map((r) => r.seed)).toEqual([0, 1, 2, 3].map((i) => requestSeed(99, i, 0, 0)));
    expect(new Set(policy.calls.flat().map((r) => r.seed)).size).toBe(12);
    expect(policy.calls[0][0]).toMatchObject({ maxTokens: 64, temperature: 1, stopStrings: ['</tool>', '</answer>'], stopTokens: [tok.eosId] });
  });

  it('passes the adapter id and caps maxTokens by the room left', async () => {
    const policy = fakePolicy(() => 'x');
    const agent = agentWith(policy, { adapterId: 'lora-7', maxNewTokens: 100, maxSequenceTokens: 20 });
    await rolloutMultiTurn(specOf(() => scriptedEnv([ok(0, true)])), agent, one, { seed: 0 });
    expect(policy.calls[0][0].adapterId).toBe('lora-7');
    expect(policy.calls[0][0].maxTokens).toBe(20 - policy.calls[0][0].promptTokens.length);
  });

  it('keeps a trailing eos in the tokens but not in the action text', async () => {
    const env = scriptedEnv([ok(1, true)]);
    const sample: SampleFn = async (rs) => rs.map(() => ({ tokens: [...tok.encode('42'), tok.eosId], logprobs: [-1, -1, -0.1] }));
    const batch = await rolloutMultiTurn(specOf(() => env), agentWith(sample), one, { seed: 0 });
    const t = batch.groups[0].trajectories[0];
    expect(env.actions).toEqual(['42']);
    expect(t.tokensT.at(-1)).toBe(tok.eosId);
    expect(t.logprobsT.at(-1)).toBe(-0.1);
  });

  it('lets a failing sampling function throw, after closing the open environments', async () => {
    const envs = [scriptedEnv([ok(0, false)]), scriptedEnv([ok(0, false)])];
    let k = 0;
    let calls = 0;
    const sample: SampleFn = async (rs) => {
      if (++calls === 2) throw new Error('GPU lost');
      return rs.map(() => ({ tokens: [65], logprobs: [-1] }));
    };
    await expect(rolloutMultiTurn(specOf(() => envs[k++]), agentWith(sample), [one[0], one[0]], { seed: 0 })).rejects.toThrow('GPU lost');
    await new Promise((r) => setTimeout(r, 0));
    expect(envs.map((e) => e.closed)).toEqual([1, 1]);
  });

  it('throws SampleContractError when the sampling function breaks its contract', async () => {
    const spec = specOf(() => scriptedEnv([ok(0, true)]));
    const bad: SampleFn[] = [
      async () => [],
      async (rs) => rs.map(() => ({ tokens: [1, 2], logprobs: [0] })),
      async (rs) => rs.map(() => ({ tokens: [999], logprobs: [0] })),
      async (rs) => rs.map(() => ({ tokens: [1], logprobs: [Number.NaN] })),
      async (rs) => rs.map(() => ({ tokens: [1], logprobs: [0.5] })),
      async (rs) => rs.map((r) => ({ tokens: new Array(r.maxTokens + 1).fill(65), logprobs: new Array(r.maxTokens + 1).fill(0) })),
    ];
    for (const sample of bad) await expect(rolloutMultiTurn(spec, agentWith(sample), one, { seed: 0 })).rejects.toThrow(SampleContractError);
  });
});

describe('tools in the multi-turn protocol', () => {
  const toolEnv = (tool: Tool) => () => Object.assign(scriptedEnv([ok(1, true)]), { tools: [tool] });
  const echo: Tool = { name: 'echo', description: 'repeats', call: (a) => `echo ${a}` };

  it('runs a tool call, appends <result>, and lets the agent answer', async () => {
    const policy = fakePolicy((p) => (p.includes('<result>') ? '<answer>done</answer>' : '<tool>echo: hi</tool>'));
    const batch = await rolloutMultiTurn(specOf(toolEnv(echo)), agentWith(policy), one, { seed: 0 });
    const t = batch.groups[0].trajectories[0];
    expect(t.turns.map((x) => [x.kind, x.observation, x.reward])).toEqual([['tool', 'echo hi', 0], ['env', 'obs', 1]]);
    expect(tok.decode(t.tokensT.slice(0, t.promptLength))).toBe('Tools:\n- echo: repeats\nCall a tool with <tool>name: input</tool>.\ntask 5\n');
    expect(tok.decode(t.tokensT.slice(t.turns[0].actionEnd, t.turns[1].actionStart))).toBe('\n<result>echo hi</result>\n');
    expect(batch.metrics.toolCalls).toBe(1);
  });

  it('answers unknown tools and throwing tools with an error text, and drops hanging tools', async () => {
    const thrower: Tool = { name: 'boom', description: 'throws', call: () => { throw new Error('bad input'); } };
    const hanger: Tool = { name: 'slow', description: 'hangs', call: () => new Promise<string>(() => {}) };
    const policy = (name: string) => fakePolicy((p) => (p.includes('<result>') ? '<answer>x</answer>' : `<tool>${name}: 1</tool>`));
    const unknown = await rolloutMultiTurn(specOf(toolEnv(echo)), agentWith(policy('nope')), one, { seed: 0 });
    expect(unknown.groups[0].trajectories[0].turns[0]).toMatchObject({ kind: 'unknown_tool', observation: 'error: unknown tool "nope"; tools: echo' });
    const threw = await rolloutMultiTurn(specOf(toolEnv(thrower)), agentWith(policy('boom')), one, { seed: 0 });
    expect(threw.groups[0].trajectories[0].turns[0]).toMatchObject({ kind: 'tool', observation: 'error: bad input' });
    const hung = await rolloutMultiTurn(specOf(toolEnv(hanger)), agentWith(policy('slow')), one, { seed: 0, stepTimeoutMs: 20 });
    expect(hung.dropped.map((d) => d.reason)).toEqual(['timeout']);
  });

  it('counts tool calls against the turn limit', async () => {
    const batch = await rolloutMultiTurn(specOf(toolEnv(echo)), agentWith(fakePolicy(() => '<tool>echo: again</tool>'), { maxTurns: 4 }), one, { seed: 0 });
    expect(batch.groups[0].trajectories[0].endReason).toBe('turn_limit');
    expect(batch.metrics.toolCalls).toBe(4);
  });
});

describe('single-turn protocol and groups', () => {
  it('takes one action, sends tool syntax to step as text, and truncates if not done', async () => {
    const env = Object.assign(scriptedEnv([ok(0.3, false)]), { tools: [{ name: 'echo', description: 'd', call: () => 'x' }] });
    const batch = await rolloutSingleTurn(specOf(() => env), agentWith(fakePolicy(() => '<tool>echo: 1</tool>')), one, { seed: 0 });
    const t = batch.groups[0].trajectories[0];
    expect(env.actions).toEqual(['<tool>echo: 1</tool>']);
    expect([t.turns.length, t.endReason, t.reward]).toEqual([1, 'turn_limit', 0.3]);
    expect(tok.decode(t.tokensT.slice(0, t.promptLength))).toBe('task 5\n'); // no tool list offered
  });

  it('gives every attempt of a group the same env seed, and different groups different seeds', async () => {
    const eps = groupEpisodes(3, 4, 11);
    expect(eps.map((e) => e.groupId)).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    expect(new Set(eps.slice(0, 4).map((e) => e.seed)).size).toBe(1);
    expect(new Set([eps[0].seed, eps[4].seed, eps[8].seed]).size).toBe(3);
    expect(groupEpisodes(3, 4, 11)).toEqual(eps);
    const batch = await rolloutGroups(specOf(() => scriptedEnv([ok(1, true)])), agentWith(fakePolicy(() => 'x')), { groups: 3, groupSize: 4, seed: 11 });
    expect(batch.groups.map((g) => [g.groupId, g.seed, g.trajectories.length])).toEqual([0, 1, 2].map((g) => [g, eps[g * 4].seed, 4]));
    expect(batch.groups[1].trajectories.map((t) => t.seed)).toEqual(new Array(4).fill(eps[4].seed));
  });

  it('is deterministic from its seed even when environments answer in a different order', async () => {
    const slowFirst = (delays: number[]) => {
      let k = 0;
      return specOf(() => {
        const d = delays[k++ % delays.length];
        return { name: 'timed', async reset(s: number) { return `t${s}`; }, async step(a: string) { await new Promise((r) => setTimeout(r, d)); return { observation: a, reward: a.length, done: true }; } };
      });
    };
    const policy = () => fakePolicy((_p, r) => `s${r.seed % 1000}`);
    const a = await rolloutGroups(slowFirst([15, 0, 5, 1]), agentWith(policy()), { groups: 2, groupSize: 2, seed: 4 });
    const b = await rolloutGroups(slowFirst([0, 15, 1, 5]), agentWith(policy()), { groups: 2, groupSize: 2, seed: 4 });
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    const c = await rolloutGroups(slowFirst([0]), agentWith(policy()), { groups: 2, groupSize: 2, seed: 5 });
    expect(JSON.stringify(c)).not.toBe(JSON.stringify(a));
  });

  it('returns frozen, structured-clone-safe batches', async () => {
    const batch = await rolloutGroups(specOf(() => scriptedEnv([ok(0, false), ok(1, true)])), agentWith(fakePolicy(() => 'x')), { groups: 1, groupSize: 2, seed: 0 });
    const t = batch.groups[0].trajectories[0];
    expect(Object.isFrozen(batch) && Object.isFrozen(batch.groups) && Object.isFrozen(t) && Object.isFrozen(t.tokensT) && Object.isFrozen(t.turns[0])).toBe(true);
    expect(Object.isFrozen(batch.metrics.endReasons)).toBe(true);
    expect(() => (t.tokensT as number[]).push(1)).toThrow(TypeError);
    expect(structuredClone(batch)).toEqual(batch);
    expect(isPlainData(batch)).toBe(true);
  });
});

describe('a rollout in slices', () => {
  // Each episode's action (and so its reward) comes from its request's sampler seed.
  const seeded = () => fakePolicy((_p, r) => `a${r.seed % 7}`);
  const rewardEnv = (): EnvSpec => specOf(() => {
    let turns = 0;
    return {
      name: 'seeded',
      reset: (seed: number) => Promise.resolve(`task ${seed % 3}\n`),
      step: (action: string) => Promise.resolve({ observation: 'o', reward: Number(action.slice(1)) / 10, done: ++turns >= 2 }),
    };
  });

  it('gives each episode the trajectory it has in the whole rollout, under its own id', async () => {
    const episodes = groupEpisodes(3, 2, 77);
    const whole = await rolloutMultiTurn(rewardEnv(), agentWith(seeded()), episodes, { seed: 9 });
    const slices = [[4, 5], [1, 0], [2, 3]];
    const kept = [];
    for (const idx of slices) {
      const b = await rolloutMultiTurn(rewardEnv(), agentWith(seeded()), idx.map((i) => episodes[i]), { seed: 9, indices: idx });
      kept.push(...b.groups.flatMap((g) => g.trajectories));
    }
    const byId = (ts: readonly { episodeId: number }[]) => [...ts].sort((a, b) => a.episodeId - b.episodeId);
    expect(byId(kept)).toEqual(byId(whole.groups.flatMap((g) => g.trajectories)));
    await expect(rolloutMultiTurn(rewardEnv(), agentWith(seeded()), episodes.slice(0, 2), { seed: 9, indices: [0] })).rejects.toThrow(RangeError);
  });

  it('means the same bits whatever order its episodes ended in', () => {
    const traj = (episodeId: number, reward: number) => ({ episodeId, groupId: 0, player: 0, reward, turns: [], endReason: 'done' }) as never;
    // Summed in the order given, 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in the last bit.
    const rewards = [0.1, 0.2, 0.3];
    expect(rewards.reduce((a, b) => a + b)).not.toBe([...rewards].reverse().reduce((a, b) => a + b));
    const kept = rewards.map((r, i) => traj(i, r));
    const episodes = rewards.map(() => ({ seed: 1, groupId: 0 }));
    const counters = { toolCalls: 0, sampledTokens: 0, sampleCalls: 0 };
    const means = [kept, [...kept].reverse(), [kept[2], kept[0], kept[1]]].map((k) => assembleBatch(episodes, k, [], counters).metrics.meanReward);
    expect(means).toEqual([(0.1 + 0.2 + 0.3) / 3, (0.1 + 0.2 + 0.3) / 3, (0.1 + 0.2 + 0.3) / 3]);
  });
});
