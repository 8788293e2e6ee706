// What a newcomer sees: train()'s progress lines and warnings, the turn budget of an environment
// with tools, and the tool list in its default prompt.
import { describe, expect, it } from 'vitest';
import { scriptedSampleFn } from '../../src/env/demos.ts';
import type { EnvSpec } from '../../src/env/types.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { rollout } from '../../src/runtime/evaluate.ts';
import { type JobOptions, type StepMetrics, turnLimitWarning } from '../../src/runtime/rl_job.ts';
import { jobOptions, TRAIN_DEFAULTS } from '../../src/runtime/train.ts';
import { progressLine, withProgress } from '../../src/runtime/train_progress.ts';
import { groupEpisodes } from '../../src/env/batch.ts';

const rl = (step: number, extra: Partial<StepMetrics> = {}): StepMetrics => ({
  phase: 'rl', step, loss: -1e-8, reward: 0.25, success: 0.5, gradNorm: 0.8123, skipped: false, trainTokens: 512, sampledTokens: 64,
  trainSeconds: 1, sampleSeconds: 1, datums: 8, dropped: 0, approxKl: 0.00123, clipFraction: 0.0625, entropy: 1.234, ...extra,
});

/** An environment with one tool; its episodes ask for the answer after a lookup. */
const lookupEnv: EnvSpec = {
  name: 'lookup',
  create: () => ({
    name: 'lookup',
    tools: [{ name: 'lookup', description: 'finds a word', call: (a: string) => a.toUpperCase() }],
    reset: async () => 'Find x.',
    step: async (a: string) => ({ observation: '', reward: a.includes('X') ? 1 : 0, done: true }),
  }),
};

describe('progress lines', () => {
  it('say what tells on an RL step (KL, clip, entropy, |g|, tokens), not the surrogate loss', () => {
    const line = progressLine(rl(2, { turnLimited: 3, dropped: 1, droppedBy: { timeout: { count: 1, message: 'slow' } } }), 20);
    expect(line).toBe('rl 3/20  reward 0.250  success 50%  kl 1.2e-3  clip 0.063  entropy 1.234  |g| 0.812  tokens 512  turn-limited 3  dropped 1: timeout ×1 (first: slow)');
    expect(line).not.toContain('loss');
    expect(progressLine(rl(0, { datums: 0 }), 5)).toContain('(no update: every group tied)');
    expect(progressLine({ ...rl(4), phase: 'sft', loss: 2.5 }, 300)).toBe('sft 5/300  loss 2.5000  |g| 0.812  tokens 512');
  });
  it('come on the first step, every tenth and the last of a phase, beside the caller’s callbacks', () => {
    const lines: string[] = [];
    const seen: number[] = [];
    const warned: string[] = [];
    const given: Pick<JobOptions, 'onStep' | 'onPhase' | 'onWarning'> = { onStep: (m) => void seen.push(m.step), onWarning: (w) => void warned.push(w) };
    const o = withProgress(given, true, (l) => lines.push(l));
    o.onPhase!('rl', { steps: 25 });
    for (let s = 0; s < 25; s++) o.onStep!(rl(s));
    o.onWarning!('careful');
    expect(seen).toHaveLength(25);
    expect(lines[0]).toBe('RL: 25 steps');
    expect(lines.slice(1, -1).map((l) => l.split('  ')[0])).toEqual(['rl 1/25', 'rl 3/25', 'rl 6/25', 'rl 9/25', 'rl 12/25', 'rl 15/25', 'rl 18/25', 'rl 21/25', 'rl 24/25', 'rl 25/25']);
    expect(lines.at(-1)).toBe('warning: careful');
    expect(warned).toEqual(['careful']);
    const silent = { onStep: () => {} };
    expect(withProgress(silent, false)).toBe(silent);
  });
});

describe('turns and tools', () => {
  it('an environment with tools gets room for calls and a prompt that lists them', () => {
    const o = jobOptions({ env: lookupEnv });
    expect(o.env.maxTurns).toBe(TRAIN_DEFAULTS.maxTurnsWithTools);
    expect(o.env.format!.initial('Find x.', lookupEnv.create().tools!)).toContain('- lookup: finds a word\nCall a tool with <tool>name: input</tool>.');
    expect(jobOptions({ env: lookupEnv, maxTurns: 2 }).env.maxTurns).toBe(2);
    expect(jobOptions({ env: { ...lookupEnv, create: () => ({ ...lookupEnv.create(), tools: [] }) } }).env.maxTurns).toBe(1);
  });
  it('episodes cut by the turn limit are counted, and most of them make one warning', async () => {
    const o = jobOptions({ env: lookupEnv, maxTurns: 1 });
    const tok = new ByteTokenizer();
    const calls = Array.from({ length: 4 }, () => '<tool>lookup: x</tool>');
    const r = await rollout(o.env, scriptedSampleFn(tok, calls), groupEpisodes(2, 2, 1), 1, { tokenizer: tok, maxNewTokens: 32, maxSequenceTokens: 128, temperature: 1 });
    expect(r.turnLimited).toBe(4);
    expect(turnLimitWarning(o.env, 0, r.episodes, r.turnLimited)).toBe('RL step 0: 4 of 4 episodes of lookup ended at the turn limit (1 turns; each tool call is one) — raise maxTurns if the agent needs more calls before it answers');
    expect(turnLimitWarning(o.env, 0, 4, 2)).toBeNull();
  });
});

describe('success', () => {
  it('is reward > 0 unless the environment says what a success is', async () => {
    const tok = new ByteTokenizer();
    const run = (spec: EnvSpec) => rollout(jobOptions({ env: spec, maxTurns: 1 }).env, scriptedSampleFn(tok, ['<answer>X</answer>', '<answer>y</answer>']), groupEpisodes(2, 1, 3), 3, { tokenizer: tok, maxNewTokens: 32, maxSequenceTokens: 256, temperature: 1 });
    expect((await run(lookupEnv)).success).toBe(0.5);
    expect((await run({ ...lookupEnv, success: (t) => t.reward >= 2 })).success).toBe(0);
  });
});

describe('the tool list', () => {
  it('does not repeat a name the description starts with', async () => {
    const { describeTools } = await import('../../src/env/format.ts');
    const t = (name: string, description: string) => ({ name, description, call: (a: string) => a });
    expect(describeTools([t('lookup', 'lookup: WORD → its definition'), t('calc', 'adds')])).toBe('Tools:\n- lookup: WORD → its definition\n- calc: adds\nCall a tool with <tool>name: input</tool>.');
  });
});
