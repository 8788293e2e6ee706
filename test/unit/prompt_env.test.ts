// promptEnv: prompts and a reward function as an environment (a TRL user's front door).
import { describe, expect, it } from 'vitest';
import { scriptedSampleFn } from '../../src/env/demos.ts';
import { promptEnv } from '../../src/env/envs/prompt.ts';
import { InvalidInputError } from '../../src/env/errors.ts';
import { groupEpisodes } from '../../src/env/batch.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { rollout } from '../../src/runtime/evaluate.ts';
import { jobOptions } from '../../src/runtime/train.ts';
import { Rng } from '../../src/util/rng.ts';

const prompts = ['What is 2+3?', 'What is 4+4?', 'Say hi.'];
const answers = ['5', '8', 'hi'];
const reward = (c: string, _p: string, i: number) => (c.includes(answers[i]) ? 1 : 0);

describe('promptEnv', () => {
  it('picks the prompt by seed, scores the completion, ends in one turn', async () => {
    const env = promptEnv(prompts, reward).create();
    expect(await env.reset(4)).toBe('What is 4+4?');
    expect(await env.step('<answer>8</answer>')).toEqual({ observation: '', reward: 1, done: true });
    expect(await env.reset(2)).toBe('Say hi.');
    expect((await env.step('bye')).reward).toBe(0);
  });
  it('gives demonstrations when asked, and trains as a job with its tools', async () => {
    const tool = { name: 'calc', description: 'adds', call: (a: string) => String(a.split('+').map(Number).reduce((x, y) => x + y, 0)) };
    const spec = promptEnv(prompts, reward, { name: 'sums', tools: [tool], demonstrations: (_p, i) => [`<tool>calc: ${i}+1</tool>`, `<answer>${answers[i]}</answer>`] });
    const d = spec.demonstrations!(2, new Rng(1));
    expect(d).toHaveLength(2);
    for (const x of d) expect(x.actions[1]).toBe(`<answer>${answers[x.seed % 3]}</answer>`);
    const o = jobOptions({ env: spec, warmStart: null });
    expect(o.env.name).toBe('sums');
    expect(o.env.maxTurns).toBe(4); // a tool: room for calls
    const tok = new ByteTokenizer();
    const r = await rollout(o.env, scriptedSampleFn(tok, ['<tool>calc: 2+3</tool>', '<answer>5</answer>']), groupEpisodes(1, 1, 0), 0, { tokenizer: tok, maxNewTokens: 32, maxSequenceTokens: 512, temperature: 1 });
    expect(r.episodes).toBe(1);
  });
  it('refuses what cannot be an environment', () => {
    expect(() => promptEnv([], reward)).toThrow(InvalidInputError);
    expect(() => promptEnv(['a', ''], reward)).toThrow(/non-empty strings/);
    expect(() => promptEnv(['a'], 3 as never)).toThrow(/reward must be a function/);
  });
});
