import { ConfigError } from '../../src/errors.ts';
import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/env/agent.ts';
import { replayDemonstrations } from '../../src/env/demos.ts';
import { answerMatches, calculatorDemonstrations, calculatorEnv, calculatorTask, calculatorTool } from '../../src/env/envs/calculator.ts';
import { evaluateArithmetic } from '../../src/env/envs/arith.ts';
import { rolloutGroups } from '../../src/env/rollout.ts';
import { Rng } from '../../src/util/rng.ts';
import { fakePolicy, tok } from './env_fakes.ts';

describe('calculator environment', () => {
  it('derives the task from the seed alone, with easy and hard tasks in the set proportion', () => {
    expect(calculatorTask(123)).toEqual(calculatorTask(123));
    const tasks = Array.from({ length: 2000 }, (_, s) => calculatorTask(s, 0.3));
    const hard = tasks.filter((t) => t.hard);
    expect(hard.length / tasks.length).toBeGreaterThan(0.65);
    expect(hard.length / tasks.length).toBeLessThan(0.75);
    for (const t of tasks) {
      expect(t.answer).toBe(evaluateArithmetic(t.expression));
      expect(t.question).toBe(`What is ${t.expression}?`);
      if (t.hard) expect(t.expression).toMatch(/^\d{2,3}\*\d{2}$/);
      else expect(t.expression).toMatch(/^\d[-+*]\d$/);
    }
  });

  it('hard tasks take their factors from hardA × hardB; bad ranges are config errors', async () => {
    const tasks = Array.from({ length: 500 }, (_, s) => calculatorTask(s, 0, [10, 99], [2, 9]));
    for (const t of tasks) expect(t.expression).toMatch(/^\d{2}\*[2-9]$/);
    expect(new Set(tasks.map((t) => t.expression.split('*')[1])).size).toBe(8);
    const env = calculatorEnv({ easyFraction: 0, hardA: [12, 12], hardB: [3, 3] }).create();
    expect(await env.reset(5)).toBe('What is 12*3?');
    expect(() => calculatorEnv({ hardA: [9, 2] })).toThrow(/calculator\.hardA: must be \[min, max\]/);
    expect(() => calculatorEnv({ hardB: [1.5, 3] })).toThrow(ConfigError);
  });

  it('rewards a correct answer, minus the tool cost per call; wrong or missing answers get 0', async () => {
    const spec = calculatorEnv({ toolCost: 0.1 });
    const env = spec.create();
    const q = await env.reset(7);
    const task = calculatorTask(7);
    expect(q).toBe(task.question);
    expect(await env.step(`<answer>${task.answer}</answer>`)).toMatchObject({ reward: 1, done: true, info: { correct: true, toolCalls: 0 } });
    await env.reset(7);
    expect(await env.tools![0].call(task.expression)).toBe(String(task.answer));
    await env.tools![0].call('1+1');
    expect((await env.step(`<answer> ${task.answer}.0 </answer>`)).reward).toBeCloseTo(0.8, 12);
    await env.reset(7);
    expect(await env.step(`<answer>${task.answer + 1}</answer>`)).toMatchObject({ reward: 0, done: true, info: { correct: false } });
    await env.reset(7);
    expect(await env.step(`${task.answer}`)).toMatchObject({ reward: 0, done: true, observation: 'No <answer> given.' });
  });

  it('compares answers numerically', () => {
    expect(answerMatches('1776', 1776)).toBe(true);
    expect(answerMatches('+1776.000', 1776)).toBe(true);
    expect(answerMatches('0.5', 0.5)).toBe(true);
    expect(answerMatches('1,776', 1776)).toBe(false);
    expect(answerMatches('1776x', 1776)).toBe(false);
    expect(answerMatches('', 0)).toBe(false);
    expect(answerMatches(null, 0)).toBe(false);
  });

  it('its tool throws typed errors that reach the agent as text in a rollout', async () => {
    expect(() => calculatorTool().call('1/0')).toThrow(/division by zero/);
    const policy = fakePolicy((p) => (p.includes('<result>') ? '<answer>0</answer>' : '<tool>calculator: 2+</tool>'));
    const batch = await rolloutGroups(calculatorEnv(), new Agent({ sample: policy, tokenizer: tok }), { groups: 1, groupSize: 1, seed: 0 });
    expect(batch.groups[0].trajectories[0].turns[0].observation).toBe("error: expected a number or '(', found the end of the expression (at character 2)");
  });

  it('pays off the tool on hard tasks and not on easy ones, end to end', async () => {
    // An oracle that always uses the tool vs one that answers directly (correct on easy only).
    const toolUser = fakePolicy((p) => {
      const r = /<result>(.*)<\/result>/.exec(p);
      return r ? `<answer>${r[1]}</answer>` : `<tool>calculator: ${/What is (.*)\?/.exec(p)![1]}</tool>`;
    });
    const direct = fakePolicy((p) => {
      const e = /What is (.*)\?/.exec(p)![1];
      return /^\d[-+*]\d$/.test(e) ? `<answer>${evaluateArithmetic(e)}</answer>` : '<answer>1000</answer>';
    });
    const spec = calculatorEnv({ toolCost: 0.1 });
    const run = (sample: typeof toolUser) => rolloutGroups(spec, new Agent({ sample, tokenizer: tok }), { groups: 40, groupSize: 1, seed: 3 });
    const [withTool, without] = [await run(toolUser), await run(direct)];
    const byHard = (b: Awaited<ReturnType<typeof run>>, hard: boolean) => b.groups.flatMap((g) => g.trajectories).filter((t) => calculatorTask(t.seed).hard === hard).map((t) => t.reward);
    expect(byHard(withTool, true).every((r) => Math.abs(r - 0.9) < 1e-12)).toBe(true);
    expect(byHard(withTool, false).every((r) => Math.abs(r - 0.9) < 1e-12)).toBe(true);
    expect(byHard(without, false).every((r) => r === 1)).toBe(true);
    expect(byHard(without, true).every((r) => r === 0)).toBe(true);
    expect(withTool.metrics.toolCalls).toBe(40);
  });

  it('demonstrations mix tool calls and direct guesses, and replay to the expected rewards', async () => {
    const demos = calculatorDemonstrations(200, new Rng(1), { demoToolRate: 0.5 });
    expect(calculatorDemonstrations(200, new Rng(1), { demoToolRate: 0.5 })).toEqual(demos);
    const withTool = demos.filter((d) => d.actions.length === 2);
    expect(withTool.length).toBeGreaterThan(70);
    expect(withTool.length).toBeLessThan(130);
    const spec = calculatorEnv({ toolCost: 0.1 });
    const replay = await replayDemonstrations(spec, demos, { tokenizer: tok });
    expect(replay.dropped).toEqual([]);
    expect(replay.trajectories.length).toBe(200);
    replay.trajectories.forEach((t, i) => {
      const task = calculatorTask(demos[i].seed);
      const usedTool = demos[i].actions.length === 2;
      expect(t.turns.map((x) => x.action)).toEqual(demos[i].actions);
      if (usedTool) expect(t.reward).toBeCloseTo(0.9, 12);
      else if (!task.hard) expect(t.reward).toBe(1);
    });
    const hardGuesses = replay.trajectories.filter((_t, i) => demos[i].actions.length === 1 && calculatorTask(demos[i].seed).hard);
    expect(hardGuesses.length).toBeGreaterThan(20);
    expect(hardGuesses.filter((t) => t.reward > 0).length / hardGuesses.length).toBeLessThan(0.3);
  });
});
