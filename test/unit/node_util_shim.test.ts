// The pages' stand-in for node:util (demos/src/lib/node_util.ts) against Node's own parseArgs:
// the same values and positionals for accepted argv, an error quoting the same flag for refused
// argv — and through both parsers of the CLI (npm run train's, npm run fleet -- submit's) the
// same options or the same ConfigError field.
import { parseArgs as nodeParseArgs } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { parseArgs } from '../../demos/src/lib/node_util.ts';

const options = {
  help: { type: 'boolean' as const, short: 'h' },
  quiet: { type: 'boolean' as const, short: 'q' },
  steps: { type: 'string' as const },
  name: { type: 'string' as const, short: 'n' },
};

const accepted: string[][] = [
  [],
  ['--steps', '5'],
  ['--steps=5', '--quiet'],
  ['--steps', '5', '--steps', '7'],
  ['-h'],
  ['-qh'],
  ['-n', 'abc'],
  ['-nabc'],
  ['-qnabc'],
  ['--name=', '--steps=-3'],
  ['pos', '--steps', '2', 'more'],
  ['--steps', '1', '--', '--quiet', 'x'],
  ['-'],
];

const refused: string[][] = [
  ['--bogus'],
  ['--bogus=1'],
  ['-x'],
  ['--steps'],
  ['--steps', '--quiet'],
  ['--steps', '-3'],
  ['--quiet=yes'],
  ['-n'],
];

const flagOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return /'(-{1,2}[^']+)'/.exec((e as Error).message)?.[1] ?? (e as Error).message;
  }
  return 'accepted';
};

describe('node:util parseArgs stand-in for the pages', () => {
  for (const allowPositionals of [true, false]) {
    for (const args of accepted) {
      it(`${JSON.stringify(args)} (positionals ${allowPositionals ? 'allowed' : 'refused'}) as Node parses it`, () => {
        const cfg = { args, options, strict: true, allowPositionals };
        const want = flagOf(() => nodeParseArgs(cfg));
        if (want !== 'accepted') {
          expect(flagOf(() => parseArgs(cfg))).not.toBe('accepted');
          return;
        }
        const a = nodeParseArgs(cfg);
        const b = parseArgs(cfg);
        expect({ ...b.values }).toEqual({ ...a.values });
        expect(b.positionals).toEqual(a.positionals);
      });
    }
  }
  for (const args of refused) {
    it(`${JSON.stringify(args)} is refused naming the flag Node names`, () => {
      const cfg = { args, options, strict: true, allowPositionals: false };
      const want = flagOf(() => nodeParseArgs(cfg));
      expect(want).not.toBe('accepted');
      expect(flagOf(() => parseArgs(cfg))).toBe(want);
    });
  }
});

// The CLI's parsers themselves, loaded once with Node's parseArgs and once with the stand-in (as a
// page loads them): the same options for every argv, or a ConfigError naming the same field.
describe('npm run fleet -- submit flags parsed with the stand-in, as with node:util', () => {
  const argvs: string[][] = [
    ['--steps', '2', '--model', 'tiny-gpt2', '--warmstart-steps', '8', '--groups', '2', '--group-size', '2', '--eval-episodes', '0'],
    ['--id', 'job-1', '--priority', 'background', '--weight', '2', '--env', 'nim', '--algo', 'rloo', '--seed=7'],
    ['--full', '--lora-rank', '4'],
    ['--no-warmstart', '--lr', '0.001', '--checkpoint-every', '3'],
    ['--groups', '0'],
    ['--out', 'runs/x'],
    ['--bogus', '1'],
    ['--steps'],
    ['--steps', '--seed', '1'],
    ['--full=yes'],
    ['stray'],
    ['--model', 'gpt2-nope'],
  ];
  type Parse = (argv: readonly string[]) => unknown;
  const outcome = (parse: Parse, argv: string[]) => {
    try {
      return { ok: parse(['submit', '--nats', 'ws://127.0.0.1:1', ...argv]) };
    } catch (e) {
      return { field: (e as { field?: string }).field ?? `not a ConfigError: ${(e as Error).message}` };
    }
  };
  it('gives the same result for each argv', async () => {
    vi.resetModules();
    const real = (await import('../../src/fleet/cli_args.ts')).parseFleetArgs as Parse;
    const standIn = vi.fn(parseArgs);
    vi.doMock('node:util', () => ({ parseArgs: standIn }));
    vi.resetModules();
    const shimmed = (await import('../../src/fleet/cli_args.ts')).parseFleetArgs as Parse;
    vi.doUnmock('node:util');
    expect(shimmed).not.toBe(real);
    for (const argv of argvs) expect(outcome(shimmed, argv), argv.join(' ')).toEqual(outcome(real, argv));
    expect(standIn).toHaveBeenCalled();
    // The cases cover accepted argv and each kind of refusal (the field Node's message quotes).
    expect(argvs.map((a) => outcome(real, a)).map((o) => ('ok' in o ? 'ok' : o.field))).toEqual(
      ['ok', 'ok', '--lora-rank', 'ok', '--groups', '--out', '--bogus', '--steps <value>', '--steps', '--full', 'arguments', '--model'],
    );
  });
});
