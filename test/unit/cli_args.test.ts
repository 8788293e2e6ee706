import { describe, expect, it } from 'vitest';
import { parseTrainArgs, trainHelp, FLAGS } from '../../src/cli/args.ts';
import { ConfigError } from '../../src/errors.ts';

describe('train CLI flags', () => {
  it('has defaults with no flags', () => {
    expect(parseTrainArgs([])).toEqual({ help: false, seed: 0, json: undefined, quiet: false });
  });
  it('parses long and short flags', () => {
    expect(parseTrainArgs(['--seed', '42', '--json', 'out.json', '-q'])).toEqual({ help: false, seed: 42, json: 'out.json', quiet: true });
    expect(parseTrainArgs(['--seed=7']).seed).toBe(7);
    expect(parseTrainArgs(['-h']).help).toBe(true);
  });
  it('refuses an unknown flag, naming it', () => {
    expect(() => parseTrainArgs(['--lr', '3'])).toThrow(ConfigError);
    expect(() => parseTrainArgs(['--lr', '3'])).toThrow(/--lr.*Unknown option/);
  });
  it('refuses a missing value and a bad seed, naming the flag', () => {
    expect(() => parseTrainArgs(['--json'])).toThrow(/--json/);
    expect(() => parseTrainArgs(['--seed', '-1'])).toThrow(/--seed/);
    expect(() => parseTrainArgs(['--seed', '4294967296'])).toThrow(/--seed: expected an integer/);
    expect(() => parseTrainArgs(['--seed', '1.5'])).toThrow(ConfigError);
    expect(() => parseTrainArgs(['positional'])).toThrow(ConfigError);
  });
  it('documents every flag in --help', () => {
    const h = trainHelp();
    for (const [k, d] of Object.entries(FLAGS)) {
      expect(h).toContain(`--${k}`);
      expect(h).toContain(d.help);
    }
  });
});
