import { describe, expect, it } from 'vitest';
import { DEFAULTS, defaultOutDir, FLAGS, parseTrainArgs, trainHelp } from '../../src/cli/args.ts';
import { jobOptionsFrom } from '../../src/cli/job_args.ts';
import { ConfigError } from '../../src/errors.ts';

describe('train CLI flags', () => {
  it('has the zero-config defaults with no flags', () => {
    const o = parseTrainArgs([]);
    expect(o).toMatchObject({
      help: false, env: 'calculator', algo: 'grpo', steps: DEFAULTS.steps, seed: 0, model: DEFAULTS.model, loraRank: DEFAULTS.loraRank,
      full: false, warmstart: true, quiet: false, selfCheck: false, json: undefined, out: undefined,
    });
    expect(o.loraTargets).toEqual(['q', 'k', 'v', 'o', 'up', 'down']);
    expect(defaultOutDir(o)).toBe('runs/calculator-grpo-s0');
    // Named by what tells runs apart: full-parameter RL and a model other than the default.
    expect(defaultOutDir(parseTrainArgs(['--full', '--model', 'gpt2-1m', '--seed', '2']))).toBe('runs/calculator-grpo-full-gpt2-1m-s2');
    expect(defaultOutDir(parseTrainArgs(['--algo', 'sft']))).toBe('runs/calculator-sft-s0');
  });
  it('parses every documented flag', () => {
    const o = parseTrainArgs([
      '--env', 'guess-number', '--algo', 'ppo', '--steps', '60', '--seed=7', '--json', 'out.json', '--model', 'llama-1m', '--lora-rank', '4',
      '--lora-targets', 'q,v,gate', '--groups', '3', '--group-size', '5', '--lr', '1e-3', '--warmstart-steps', '9',
      '--eval-episodes', '0', '--out', 'runs/x', '-q', '--self-check',
    ]);
    expect(o).toEqual({
      help: false, env: 'guess-number', algo: 'ppo', steps: 60, seed: 7, json: 'out.json', model: 'llama-1m', loraRank: 4, loraTargets: ['q', 'v', 'gate'],
      full: false, groups: 3, groupSize: 5, lr: 1e-3, warmstart: true, warmstartSteps: 9, evalEpisodes: 0, out: 'runs/x', quiet: true, selfCheck: true,
    });
    // --full and --no-warmstart, which the flags above contradict.
    const fw = parseTrainArgs(['--full', '--no-warmstart']);
    expect(fw).toMatchObject({ full: true, warmstart: false, loraRank: DEFAULTS.loraRank });
    // Left out when not given: the job's defaults depend on the model and the mode (jobOptions).
    expect(fw.warmstartSteps).toBeUndefined();
    expect(fw.lr).toBeUndefined();
    expect(parseTrainArgs(['-h']).help).toBe(true);
    for (const algo of ['grpo', 'ppo', 'rloo', 'reinforce', 'dpo', 'sft']) expect(parseTrainArgs(['--algo', algo]).algo).toBe(algo);
    for (const env of ['calculator', 'guess-number', 'nim']) expect(parseTrainArgs(['--env', env]).env).toBe(env);
  });
  it('refuses an unknown flag, naming it', () => {
    expect(() => parseTrainArgs(['--learning-rate', '3'])).toThrow(ConfigError);
    expect(() => parseTrainArgs(['--learning-rate', '3'])).toThrow(/--learning-rate.*Unknown option/);
  });
  it('refuses bad values, naming the flag', () => {
    expect(() => parseTrainArgs(['--json'])).toThrow(/--json/);
    expect(() => parseTrainArgs(['--seed', '-1'])).toThrow(/--seed/);
    expect(() => parseTrainArgs(['--seed', '4294967296'])).toThrow(/--seed: expected an integer/);
    expect(() => parseTrainArgs(['--seed', '1.5'])).toThrow(ConfigError);
    expect(() => parseTrainArgs(['positional'])).toThrow(ConfigError);
    expect(() => parseTrainArgs(['--env', 'chess'])).toThrow(/--env: expected one of calculator, guess-number, nim/);
    expect(() => parseTrainArgs(['--algo', 'a2c'])).toThrow(/--algo/);
    expect(() => parseTrainArgs(['--model', 'gpt5'])).toThrow(/--model: unknown preset/);
    expect(() => parseTrainArgs(['--steps', '0'])).toThrow(/--steps: must be at least 1/);
    expect(() => parseTrainArgs(['--group-size', '1'])).toThrow(/--group-size/);
    expect(() => parseTrainArgs(['--lr=-1'])).toThrow(/--lr: expected a positive number/);
    expect(() => parseTrainArgs(['--lr', 'abc'])).toThrow(/--lr/);
    expect(() => parseTrainArgs(['--lora-targets', 'q,,v'])).toThrow(/--lora-targets/);
    // Target names are checked against the model once the job is built (ours or its module names).
    expect(() => jobOptionsFrom(parseTrainArgs(['--lora-targets', 'q,attn']))).toThrow(/lora.targets: unknown target "attn" for a gpt2 model \(ours: q, k, v, o, up, down; its module names: c_attn, c_proj, c_fc\)/);
    expect(jobOptionsFrom(parseTrainArgs(['--lora-targets', 'c_attn,c_fc'])).lora?.targets).toEqual(['q', 'k', 'v', 'up']);
    expect(jobOptionsFrom(parseTrainArgs(['--model', 'llama-1m', '--lora-targets', 'q_proj,down_proj,o'])).lora?.targets).toEqual(['q', 'o', 'down']);
  });
  it('takes a pretrained model as a Hub repo id or a folder, with a revision', () => {
    const o = parseTrainArgs(['--model', 'Qwen/Qwen2.5-0.5B-Instruct', '--revision', 'v1', '--lora-targets', 'q_proj,v_proj']);
    expect(o).toMatchObject({ model: 'Qwen/Qwen2.5-0.5B-Instruct', revision: 'v1', loraTargets: ['q_proj', 'v_proj'] });
    expect(defaultOutDir(o)).toBe('runs/calculator-grpo-Qwen2.5-0.5B-Instruct-s0');
    expect(defaultOutDir(parseTrainArgs(['--model', './models/my-twin/']))).toBe('runs/calculator-grpo-my-twin-s0');
    expect(() => parseTrainArgs(['--revision', 'main'])).toThrow(/--revision: goes with a pretrained --model/);
    expect(() => parseTrainArgs(['--model', 'gpt5'])).toThrow(/a pretrained model is a Hub repo id \(org\/name\) or a folder path/);
    // A pretrained SFT job trains LoRA (or --full); it has no separate warm start.
    expect(parseTrainArgs(['--model', 'org/m', '--algo', 'sft', '--lora-rank', '4']).loraRank).toBe(4);
    expect(() => parseTrainArgs(['--model', 'org/m', '--algo', 'sft', '--warmstart-steps', '4'])).toThrow(/--warmstart-steps: cannot go with --algo sft/);
    // Without the model opened (I/O the entry point does), no job.
    expect(() => jobOptionsFrom(o)).toThrow(/is no preset/);
  });
  it('refuses flags that contradict each other or that the job would ignore, naming them', () => {
    expect(() => parseTrainArgs(['--full', '--lora-rank', '4'])).toThrow(/--lora-rank: cannot go with --full/);
    expect(() => parseTrainArgs(['--lora-targets', 'q', '--full'])).toThrow(/--lora-targets: cannot go with --full/);
    expect(() => parseTrainArgs(['--no-warmstart', '--warmstart-steps', '5'])).toThrow(/--warmstart-steps: cannot go with --no-warmstart/);
    expect(() => parseTrainArgs(['--algo', 'sft', '--lora-rank', '4'])).toThrow(/--lora-rank: cannot go with --algo sft/);
    expect(() => parseTrainArgs(['--algo', 'sft', '--warmstart-steps', '4'])).toThrow(/--warmstart-steps: cannot go with --algo sft/);
    for (const argv of [['--full', '--lora-rank', '4'], ['--no-warmstart', '--warmstart-steps', '5']]) {
      expect(() => parseTrainArgs(argv)).toThrow(ConfigError);
    }
  });
  it('documents every flag in --help', () => {
    const h = trainHelp();
    for (const [k, d] of Object.entries(FLAGS)) {
      expect(h).toContain(`--${k}`);
      expect(h).toContain(d.help);
    }
  });
});
