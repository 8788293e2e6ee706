// jobOptions: the defaults `train()` and `npm run train` share, contexts raised for long episodes,
// any EnvSpec accepted, bad settings refused by name; and the README's example is demos/own_env.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { reverseEnv } from '../../demos/own_env.ts';
import { parseTrainArgs } from '../../src/cli/args.ts';
import { jobOptionsFrom } from '../../src/cli/train.ts';
import { ConfigError } from '../../src/errors.ts';
import { preset } from '../../src/model/presets.ts';
import { jobEnv } from '../../src/runtime/evaluate.ts';
import { jobOptions, TRAIN_DEFAULTS } from '../../src/runtime/train.ts';

describe('jobOptions', () => {
  it('fills the zero-config job: the same options as `npm run train` with no flags', () => {
    const o = jobOptions({ env: 'calculator' });
    // Every option equal; the env specs are separate instances of the same environment.
    const { env: { spec: _a, ...env }, ...rest } = o;
    const { env: { spec: _b, ...cliEnv }, ...cliRest } = jobOptionsFrom(parseTrainArgs([]));
    expect(rest).toEqual(cliRest);
    expect(env).toEqual(cliEnv);
    expect(o).toMatchObject({
      algo: 'grpo', steps: 20, seed: 0, groups: 16, groupSize: 4, lr: 5e-3, evalEpisodes: 128, rows: 16, maxGradNorm: 1, temperature: 1,
      lora: { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o', 'up', 'down'] },
      warmStart: { steps: 300, demos: 4096, batchSize: 32, lr: 1e-2 },
    });
    expect(o.model).toEqual(preset('gpt2-100k'));
    expect(o.maxNewTokens).toBe(jobEnv('calculator').maxNewTokens);
  });

  it('raises a from-scratch model’s context to what the environment’s episodes need', () => {
    expect(jobOptions({ env: 'calculator' }).model.maxSeqLen).toBe(128);
    expect(jobOptions({ env: 'guess-number' }).model.maxSeqLen).toBe(384);
    expect(jobOptions({ env: 'nim' }).model.maxSeqLen).toBe(512);
    // A model with more positions keeps them.
    expect(jobOptions({ env: 'guess-number', model: 'gpt2-10m' }).model.maxSeqLen).toBe(512);
    expect(jobOptionsFrom(parseTrainArgs(['--env', 'nim'])).model.maxSeqLen).toBe(512);
  });

  it('takes any EnvSpec as a single-agent job with one turn and 32 tokens unless told', () => {
    const o = jobOptions({ env: reverseEnv, maxTurns: 2, warmStart: { steps: 10 }, lora: { rank: 4 } });
    expect(o.env).toMatchObject({ name: 'reverse', kind: 'single', maxTurns: 2, maxNewTokens: TRAIN_DEFAULTS.maxNewTokens });
    expect(o.env.spec).toBe(reverseEnv);
    expect(o.warmStart).toEqual({ steps: 10, demos: 4096, batchSize: 32, lr: 1e-2 });
    expect(o.lora).toEqual({ rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'up', 'down'] });
    expect(jobOptions({ env: reverseEnv }).env.maxTurns).toBe(1);
    expect(jobOptions({ env: reverseEnv, lora: null, warmStart: null })).toMatchObject({ lora: null, warmStart: null });
    // gpt2 has no gate projection: a target list naming it is refused, not silently cut down.
    expect(() => jobOptions({ env: reverseEnv, lora: { targets: ['q', 'gate'] } })).toThrow(/lora.targets: gpt2 has no gate/);
    expect(jobOptions({ env: reverseEnv, model: 'llama-1m', lora: { targets: ['gate', 'q'] } }).lora!.targets).toEqual(['q', 'gate']);
  });

  it('refuses bad settings with a ConfigError naming the field', () => {
    const bad: [object, string][] = [
      [{ env: 'chess' }, 'env'],
      [{ env: { name: 'x' } }, 'env'],
      [{ env: 'calculator', algo: 'a2c' }, 'algo'],
      [{ env: 'calculator', steps: 1.5 }, 'steps'],
      [{ env: 'calculator', lr: 0 }, 'lr'],
      [{ env: 'calculator', lora: { rank: 0 } }, 'lora.rank'],
      [{ env: 'calculator', lora: { targets: ['qq'] } }, 'lora.targets'],
      [{ env: 'calculator', warmStart: { batchSize: -1 } }, 'warmStart.batchSize'],
      [{ env: 'calculator', model: 'gpt5' }, 'model'],
    ];
    for (const [s, field] of bad) {
      let err: unknown;
      try {
        jobOptions(s as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(s)).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message, JSON.stringify(s)).toContain(field);
    }
  });
});

describe('README', () => {
  it('shows demos/own_env.ts verbatim as its "train your own environment" example', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const file = readFileSync(new URL('../../demos/own_env.ts', import.meta.url), 'utf8');
    expect(readme).toContain('```ts\n' + file + '```');
  });
});
