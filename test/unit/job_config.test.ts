// One validation of the whole job (src/runtime/job_config.ts) for train(), jobOptions, runTraining,
// the CLI and --resume: each case of issue 22 item 4 refused by a ConfigError naming the field,
// before any GPU work; and random junk never throws anything but a ConfigError.
import { configError } from './config_error.ts';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { reverseEnv } from '../../demos/own_env.ts';
import { parseTrainArgs } from '../../src/cli/args.ts';
import { resumedOptions, RUN_FILE } from '../../src/cli/resume.ts';
import { ConfigError } from '../../src/errors.ts';
import { preset } from '../../src/model/presets.ts';
import type { ServiceClient } from '../../src/runtime/clients.ts';
import { checkJobOptions, JOB_LIMITS, TRAIN_SETTING_KEYS } from '../../src/runtime/job_config.ts';
import { runTraining } from '../../src/runtime/rl_job.ts';
import { jobOptions, train } from '../../src/runtime/train.ts';


const fieldOf = (settings: object) => configError(() => jobOptions(settings as never)).field;

describe('one validation of the whole job', () => {
  it('bounds the LoRA rank by the kernels (64) and by each target (rank ≤ min(in, out))', () => {
    expect(fieldOf({ env: 'calculator', lora: { rank: 65 } })).toBe('lora.rank');
    expect(fieldOf({ env: 'calculator', lora: { rank: 10000 } })).toBe('lora.rank');
    expect(configError(() => jobOptions({ env: 'calculator', lora: { rank: 65 } })).message).toMatch(/at most 64/);
    // tiny-llama's k and v are [8, 24]: rank 9 is more than either has.
    const e = configError(() => jobOptions({ env: 'calculator', model: 'tiny-llama', lora: { rank: 9, targets: ['q', 'k'] } }));
    expect(e.field).toBe('lora.rank');
    expect(e.message).toMatch(/min\(in, out\) = 8 of target "k"/);
    expect(jobOptions({ env: 'calculator', model: 'tiny-llama', lora: { rank: 8, targets: ['q', 'k'] } }).lora!.rank).toBe(8);
    expect(jobOptions({ env: 'calculator', lora: { rank: 64 } }).lora!.rank).toBe(64);
  });

  it('takes starting weights of a from-scratch model only, checked by name and size', () => {
    expect(fieldOf({ env: 'calculator', weights: 5 })).toBe('weights');
    expect(fieldOf({ env: 'calculator', weights: [] })).toBe('weights');
    const loaded = { config: preset('tiny-gpt2'), source: { repo: 'org/tiny' } };
    expect(fieldOf({ env: 'calculator', model: loaded, weights: {} })).toBe('weights');
    expect(() => jobOptions({ env: 'calculator', model: 'tiny-gpt2', weights: { 'tok_emb.weight': new Float32Array(2) } })).toThrow(/tok_emb\.weight|missing/);
  });

  it('refuses empty or impossible targets and bad turn limits up front', () => {
    expect(fieldOf({ env: 'calculator', lora: { targets: [] } })).toBe('lora.targets');
    expect(fieldOf({ env: 'calculator', lora: { targets: ['gate'] } })).toBe('lora.targets');
    expect(fieldOf({ env: reverseEnv, maxTurns: 0 })).toBe('maxTurns');
    expect(fieldOf({ env: reverseEnv, maxTurns: NaN })).toBe('maxTurns');
    expect(fieldOf({ env: 'guess-number', maxTurns: 0 })).toBe('maxTurns');
    expect(fieldOf({ env: reverseEnv, maxNewTokens: 128 })).toBe('maxNewTokens'); // gpt2-100k has 128 positions
  });

  it('validates a ModelConfig object, naming the field under model.', () => {
    const bad = { ...preset('gpt2-100k'), nHead: 5 };
    expect(fieldOf({ env: 'calculator', model: bad })).toMatch(/^model\./);
    expect(fieldOf({ env: 'calculator', model: { ...preset('gpt2-100k'), nLayers: 2 } })).toBe('model.nLayers');
    expect(fieldOf({ env: 'calculator', model: { ...preset('gpt2-100k'), vocabSize: 100 } })).toBe('model.vocabSize');
    expect(jobOptions({ env: 'calculator', model: preset('tiny-gpt2') }).model.nHead).toBe(3);
  });

  it('gives a seed over 32 bits a ConfigError, not a RangeError', () => {
    expect(fieldOf({ env: 'calculator', seed: 2 ** 40 })).toBe('seed');
    expect(fieldOf({ env: 'calculator', seed: -1 })).toBe('seed');
    expect(jobOptions({ env: 'calculator', seed: 0xffffffff }).seed).toBe(0xffffffff);
  });

  it('refuses unknown keys at every level', () => {
    expect(fieldOf({ env: 'calculator', stepz: 3 })).toBe('stepz');
    expect(fieldOf({ env: 'calculator', lora: { rnak: 4 } })).toBe('lora.rnak');
    expect(fieldOf({ env: 'calculator', warmStart: { step: 4 } })).toBe('warmStart.step');
    expect(fieldOf({ env: 'calculator', warmStart: { schedule: 'bogus' } })).toBe('warmStart.schedule');
    expect(fieldOf({ env: 'calculator', checkpoint: { every: 1, save: async () => {}, keep: 2 } })).toBe('checkpoint.keep');
    const o = jobOptions({ env: 'calculator' });
    expect(configError(() => checkJobOptions({ ...o, env: { ...o.env, maxTurn: 3 } })).field).toBe('env.maxTurn');
    expect(configError(() => checkJobOptions({ ...o, warmStart: { ...o.warmStart!, shedule: 'cosine' } })).field).toBe('warmStart.shedule');
  });

  it('refuses settings the job would ignore, and combinations that contradict each other', () => {
    expect(fieldOf({ env: 'calculator', algo: 'sft', lora: { rank: 4 } })).toBe('lora');
    expect(fieldOf({ env: 'calculator', algo: 'sft', warmStart: { steps: 4 } })).toBe('warmStart.steps');
    expect(fieldOf({ env: 'calculator', warmStart: { steps: 0, demos: 5 } })).toBe('warmStart.demos');
    expect(fieldOf({ env: 'calculator', format: {} })).toBe('format');
    expect(fieldOf({ env: { ...jobOptions({ env: 'calculator' }).env }, maxTurns: 2 })).toBe('maxTurns');
    expect(fieldOf({ env: 'calculator', groupSize: 1 })).toBe('groupSize'); // grpo compares attempts within a group
    expect(jobOptions({ env: 'calculator', algo: 'reinforce', groupSize: 1 }).groupSize).toBe(1);
    expect(fieldOf({ env: 'calculator', groups: 1e9 })).toBe('groups');
    expect(fieldOf({ env: 'calculator', groups: JOB_LIMITS.groups, groupSize: 1024 })).toBe('groups');
    const sft = jobOptions({ env: 'calculator', algo: 'sft', warmStart: { demos: 64 } });
    expect(sft.lora).toBeNull();
    expect(sft.warmStart?.demos).toBe(64);
  });

  it('runTraining checks a hand-built job before it touches the service', async () => {
    const calls: string[] = [];
    const service = new Proxy({}, { get: (_t, k) => (calls.push(String(k)), () => Promise.reject(new Error('touched'))) }) as unknown as ServiceClient;
    const o = jobOptions({ env: 'calculator' });
    for (const bad of [{ ...o, lora: { ...o.lora!, rank: 65 } }, { ...o, seed: 2 ** 40 }, { ...o, model: { ...o.model, nHead: 5 } }, { ...o, stepz: 1 }]) {
      await expect(runTraining(service, bad as never)).rejects.toBeInstanceOf(ConfigError);
    }
    expect(calls).toEqual([]);
  });

  it('train() refuses bad settings before asking for a GPU', async () => {
    // Node has no WebGPU: anything that got as far as acquiring the device would fail otherwise.
    await expect(train({ env: 'calculator', stepz: 1 } as never)).rejects.toBeInstanceOf(ConfigError);
    await expect(train({ env: 'calculator', lora: { rank: 10000 } })).rejects.toThrow(/lora.rank/);
    await expect(train({ env: 'calculator', service: {} as never })).rejects.toThrow(/service/);
  });
});

describe('--resume checks run.json like a fresh job', () => {
  const settings = {
    env: 'calculator', algo: 'grpo', steps: 3, seed: 0, model: 'gpt2-100k', loraRank: 8, loraTargets: ['q', 'v'], full: false,
    groups: 2, groupSize: 4, lr: 0.005, warmstart: true, warmstartSteps: 2, evalEpisodes: 0, checkpointEvery: 1,
  };
  const resumeWith = async (s: unknown) => {
    const dir = await mkdtemp(join(tmpdir(), 'webtinker-resume-'));
    await writeFile(join(dir, RUN_FILE), JSON.stringify({ format: 'webtinker-run/1', settings: s }));
    return resumedOptions(parseTrainArgs(['--resume', dir, '--steps', '5']));
  };

  it('accepts the settings a fresh run writes', async () => {
    expect(await resumeWith(settings)).toMatchObject({ steps: 5, loraRank: 8, groups: 2 });
  });

  it('refuses an out-of-range, mistyped or unknown setting, naming it', async () => {
    await expect(resumeWith({ ...settings, loraRank: 100000 })).rejects.toThrow(/run\.json.*lora\.rank/);
    await expect(resumeWith({ ...settings, groups: 1e9 })).rejects.toThrow(/run\.json.*groups/);
    await expect(resumeWith({ ...settings, json: '/etc/passwd' })).rejects.toThrow(/settings\.json is not a run setting/);
    await expect(resumeWith({ ...settings, lr: '0.1' })).rejects.toThrow(/settings\.lr must be a number/);
    await expect(resumeWith({ ...settings, checkpointEvery: 0 })).rejects.toThrow(/checkpointEvery/);
    await expect(resumeWith({ ...settings, loraTargets: 'q' })).rejects.toBeInstanceOf(ConfigError);
    await expect(resumeWith(null)).rejects.toBeInstanceOf(ConfigError);
  });
});

describe('random junk never throws anything but ConfigError', () => {
  const junk = fc.anything({ withNullPrototype: true, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withBoxedValues: true });
  // Settings with the real keys (and some junk ones), each holding a value of a plausible kind or junk.
  const value = fc.oneof(junk, fc.integer(), fc.double(), fc.constantFrom('grpo', 'sft', 'calculator', 'gpt2-100k', 'tiny-llama', 'cosine'),
    fc.record({ rank: fc.oneof(fc.integer(), junk), alpha: fc.oneof(fc.double(), junk), targets: fc.oneof(fc.array(fc.constantFrom('q', 'k', 'gate', 'zz')), junk) }, { requiredKeys: [] }),
    fc.record({ steps: fc.oneof(fc.integer({ min: -1, max: 5 }), junk), demos: fc.integer(), batchSize: fc.integer(), lr: fc.double(), schedule: fc.oneof(fc.string(), junk) }, { requiredKeys: [] }));
  const keys = fc.constantFrom(...TRAIN_SETTING_KEYS, 'stepz', '__proto__', 'constructor');
  const env = fc.oneof(fc.constantFrom<unknown>('calculator', 'nim', reverseEnv, { name: 'x', create: 5 }), junk);
  const settings = fc.tuple(env, fc.dictionary(keys, value, { maxKeys: 6 })).map(([e, d]) => ({ ...d, env: e }));

  const onlyConfigErrors = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
    }
  };

  it('jobOptions', () => {
    fc.assert(fc.property(fc.oneof(settings, junk), (s) => onlyConfigErrors(() => jobOptions(s as never))), { numRuns: 3000 });
  });

  it('checkJobOptions on a valid job with one field replaced by junk', () => {
    const o = jobOptions({ env: 'calculator' }) as unknown as Record<string, unknown>;
    const fields = fc.constantFrom(...Object.keys(o), 'stepz');
    fc.assert(fc.property(fields, fc.oneof(junk, value), (k, v) => onlyConfigErrors(() => checkJobOptions({ ...o, [k]: v }))), { numRuns: 3000 });
    fc.assert(fc.property(junk, (v) => onlyConfigErrors(() => checkJobOptions(v))), { numRuns: 1000 });
  });

  it('the CLI flags', () => {
    const flag = fc.constantFrom('--steps', '--seed', '--lora-rank', '--groups', '--group-size', '--lr', '--full', '--no-warmstart', '--warmstart-steps', '--algo', '--model', '--bogus');
    const arg = fc.oneof(fc.string(), fc.integer().map(String), fc.double().map(String), fc.constantFrom('sft', 'gpt2-100k', 'q,gate'));
    fc.assert(fc.property(fc.array(fc.oneof(flag, arg), { maxLength: 8 }), (argv) => onlyConfigErrors(() => parseTrainArgs(argv))), { numRuns: 3000 });
  });
});
