import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/env/agent.ts';
import { rolloutTurnBased, type ScriptedPolicy } from '../../src/env/multiagent.ts';
import type { TurnBasedEnvSpec } from '../../src/env/types.ts';
import { countingGame, fakePolicy, tok } from './env_fakes.ts';

const games = (n: number) => Array.from({ length: n }, (_, i) => ({ seed: i, groupId: i }));

describe('turn-based multi-agent protocol', () => {
  it('alternates seats, gives each its own trajectory, prompt and rewards', async () => {
    const spec = countingGame(4); // p0, p1, p0, p1; p1 takes the last move and wins
    const p0 = fakePolicy(() => 'A');
    const p1 = fakePolicy(() => 'B');
    const a0 = new Agent({ id: 'alice', adapterId: 'lora-a', sample: p0, tokenizer: tok });
    const a1 = new Agent({ id: 'bob', adapterId: 'lora-b', sample: p1, tokenizer: tok });
    const out = await rolloutTurnBased(spec, [a0, a1], games(1), { seed: 1 });
    expect(spec.log).toEqual(['0:A', '1:B', '0:A', '1:B']);
    const [s0, s1] = out.seats;
    const t0 = s0!.groups[0].trajectories[0];
    const t1 = s1!.groups[0].trajectories[0];
    expect([t0.agentId, t0.adapterId, t0.player, t1.agentId, t1.adapterId, t1.player]).toEqual(['alice', 'lora-a', 0, 'bob', 'lora-b', 1]);
    // Each seat's sequence holds only its own actions (mask 1) and what it observed (mask 0).
    expect(tok.decode(t0.tokensT)).toBe('start p0\nA\nmove 2 for p0\nA');
    expect(tok.decode(t1.tokensT)).toBe('move 1 for p1\nB\nmove 3 for p1\nB');
    expect(t0.turns.map((t) => t.action)).toEqual(['A', 'A']);
    expect(t0.turns[0].observation).toBe('move 2 for p0');
    // p0 earns 0.25 on each of its moves, then −1 when p1 wins; p1 earns +1.
    expect(t0.turns.map((t) => t.reward)).toEqual([0.25, 0.25 - 1]);
    expect(t0.reward).toBe(-0.5);
    expect(t1.turns.map((t) => t.reward)).toEqual([0, 1]);
    expect(out.games).toEqual([{ episodeId: 0, groupId: 0, seed: 0, endReason: 'done', rewardsP: [-0.5, 1], steps: 4, message: '' }]);
    expect(p0.calls[0][0].adapterId).toBe('lora-a');
    expect(p1.calls[0][0].adapterId).toBe('lora-b');
  });

  it('batches one sampling call per learning seat per round across games', async () => {
    const p0 = fakePolicy(() => 'A');
    const p1 = fakePolicy(() => 'B');
    const out = await rolloutTurnBased(countingGame(4), [new Agent({ sample: p0, tokenizer: tok }), new Agent({ sample: p1, tokenizer: tok })], games(3), { seed: 2 });
    expect(p0.calls.map((c) => c.length)).toEqual([3, 3]);
    expect(p1.calls.map((c) => c.length)).toEqual([3, 3]);
    expect(out.seats[0]!.metrics).toMatchObject({ episodes: 3, kept: 3, sampleCalls: 2, sampledTokens: 6 });
  });

  it('plays a scripted seat without recording a trajectory for it', async () => {
    const seen: string[] = [];
    const bot: ScriptedPolicy = { kind: 'scripted', id: 'bot', act: (obs) => { seen.push(obs); return 'S'; } };
    const spec = countingGame(3);
    const out = await rolloutTurnBased(spec, [new Agent({ sample: fakePolicy(() => 'A'), tokenizer: tok }), bot], games(1), { seed: 0 });
    expect(spec.log).toEqual(['0:A', '1:S', '0:A']);
    expect(seen).toEqual(['move 1 for p1']);
    expect(out.seats[1]).toBeNull();
    // p0: 0.25 for its first (non-final) move, then +1 for taking the last move.
    expect(out.seats[0]!.groups[0].trajectories[0].reward).toBe(1.25);
    expect(out.games[0].rewardsP).toEqual([1.25, -1]);
  });

  it('drops the whole game for every seat when the environment throws', async () => {
    const mk = () => new Agent({ sample: fakePolicy(() => 'x'), tokenizer: tok });
    const out = await rolloutTurnBased(countingGame(6, { throwAt: 3 }), [mk(), mk()], games(2), { seed: 0 });
    for (const s of out.seats) {
      expect(s!.metrics).toMatchObject({ kept: 0, dropped: 2 });
      expect(s!.dropped.map((d) => d.reason)).toEqual(['env_error', 'env_error']);
    }
    expect(out.games.map((g) => [g.endReason, g.steps])).toEqual([['env_error', 4], ['env_error', 4]]);
    expect(out.games[0].message).toMatch(/game exploded/);
  });

  it('enforces maxSteps and the per-seat turn limit', async () => {
    const mk = (maxTurns = 8) => new Agent({ sample: fakePolicy(() => 'x'), tokenizer: tok, maxTurns });
    const bySteps = await rolloutTurnBased(countingGame(100), [mk(), mk()], games(1), { seed: 0, maxSteps: 5 });
    expect(bySteps.games[0]).toMatchObject({ endReason: 'turn_limit', steps: 5 });
    expect(bySteps.seats[0]!.groups[0].trajectories[0].turns.length).toBe(3);
    const byTurns = await rolloutTurnBased(countingGame(100), [mk(2), mk()], games(1), { seed: 0 });
    expect(byTurns.games[0]).toMatchObject({ endReason: 'turn_limit', steps: 4 });
    expect(byTurns.seats[1]!.groups[0].trajectories[0].endReason).toBe('turn_limit');
  });

  it('drops a game whose rewards are not finite, and rejects a wrong seat count', async () => {
    const spec: TurnBasedEnvSpec = {
      name: 'nan', numPlayers: 2,
      create: () => ({ name: 'nan', numPlayers: 2, reset: async () => ({ player: 0, observation: 'o' }), step: async () => ({ player: 1, observation: 'o', rewardsP: [Number.NaN, 0], done: false }) }),
    };
    const mk = () => new Agent({ sample: fakePolicy(() => 'x'), tokenizer: tok });
    const out = await rolloutTurnBased(spec, [mk(), mk()], games(1), { seed: 0 });
    expect(out.games[0].endReason).toBe('invalid_reward');
    await expect(rolloutTurnBased(spec, [mk()], games(1), { seed: 0 })).rejects.toThrow(/2 players, got 1 seats/);
  });

  it('is frozen, structured-clone safe and deterministic', async () => {
    const run = () => rolloutTurnBased(countingGame(5), [new Agent({ sample: fakePolicy((_p, r) => `m${r.seed % 97}`), tokenizer: tok }), new Agent({ sample: fakePolicy(() => 'y'), tokenizer: tok })], games(2), { seed: 8 });
    const a = await run();
    expect(Object.isFrozen(a.games[0]) && Object.isFrozen(a.seats)).toBe(true);
    expect(structuredClone(a)).toEqual(a);
    expect(JSON.stringify(await run())).toBe(JSON.stringify(a));
  });
});

describe('turn-based protocol with tools', () => {
  /** The counting game with a `peek` tool that tells the caller how many moves were made. */
  const withTool = (length: number, fail = false): TurnBasedEnvSpec & { log: string[] } => {
    const base = countingGame(length);
    let calls = 0;
    return {
      ...base,
      create() {
        const env = base.create();
        let moves = 0;
        return {
          ...env, reset: env.reset, tools: [{ name: 'peek', description: 'peek: moves so far', call: (args: string) => { if (fail) throw new Error('peek broke'); calls++; return `moves=${moves} (${args})`; } }],
          async step(a: string) { moves++; return env.step(a); },
        };
      },
      get log() { return base.log; },
      get calls() { return calls; },
    } as TurnBasedEnvSpec & { log: string[] };
  };

  it('answers a seat\'s tool call to that seat alone; the seat acts again before the game moves on', async () => {
    const spec = withTool(4);
    // Seat 0 peeks before each of its moves; seat 1 just moves.
    const p0 = fakePolicy((prompt) => (prompt.endsWith('</result>\n') ? 'A' : '<tool>peek: now</tool>'));
    const p1 = fakePolicy(() => 'B');
    const out = await rolloutTurnBased(spec, [new Agent({ sample: p0, tokenizer: tok }), new Agent({ sample: p1, tokenizer: tok })], games(2), { seed: 4 });
    // The environment saw only the moves; each game has its 4 steps.
    expect(spec.log.filter((x) => x.startsWith('0:'))).toEqual(['0:A', '0:A', '0:A', '0:A']);
    expect(out.games.map((g) => [g.endReason, g.steps])).toEqual([['done', 4], ['done', 4]]);
    const t0 = out.seats[0]!.groups[0].trajectories[0];
    expect(t0.turns.map((t) => [t.kind, t.action])).toEqual([['tool', '<tool>peek: now</tool>'], ['env', 'A'], ['tool', '<tool>peek: now</tool>'], ['env', 'A']]);
    expect(t0.turns[2].observation).toBe('moves=2 (now)');
    expect(out.seats[0]!.metrics.toolCalls).toBe(4);
    // The other seat is offered the tool too, but never sees this seat's call or its result.
    const t1 = out.seats[1]!.groups[0].trajectories[0];
    expect(tok.decode(t1.tokensT)).toContain('- peek: moves so far');
    expect(tok.decode(t1.tokensT)).not.toContain('peek: now');
    expect(tok.decode(t1.tokensT)).not.toContain('moves=');
    expect(out.seats[1]!.metrics.toolCalls).toBe(0);
  });

  it('counts tool calls against the seat\'s maxTurns and answers a failing tool with its error', async () => {
    const always = fakePolicy(() => '<tool>peek: again</tool>');
    const out = await rolloutTurnBased(withTool(4), [new Agent({ sample: always, tokenizer: tok, maxTurns: 3 }), new Agent({ sample: fakePolicy(() => 'B'), tokenizer: tok })], games(1), { seed: 0 });
    expect(out.games[0].endReason).toBe('turn_limit');
    expect(out.games[0].steps).toBe(0);
    expect(out.seats[0]!.groups[0].trajectories[0].turns).toHaveLength(3);
    const broken = await rolloutTurnBased(withTool(4, true), [new Agent({ sample: fakePolicy((p) => (p.includes('<result>') ? 'A' : '<tool>peek: x</tool>')), tokenizer: tok }), new Agent({ sample: fakePolicy(() => 'B'), tokenizer: tok })], games(1), { seed: 0 });
    expect(broken.seats[0]!.groups[0].trajectories[0].turns[0].observation).toBe('error: peek broke');
    const unknown = await rolloutTurnBased(withTool(2), [new Agent({ sample: fakePolicy((p) => (p.includes('<result>') ? 'A' : '<tool>look: x</tool>')), tokenizer: tok }), new Agent({ sample: fakePolicy(() => 'B'), tokenizer: tok })], games(1), { seed: 0 });
    expect(unknown.seats[0]!.groups[0].trajectories[0].turns[0]).toMatchObject({ kind: 'unknown_tool', observation: 'error: unknown tool "look"; tools: peek' });
  });
});
