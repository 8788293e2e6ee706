// The pages' stand-in for node:util (demos/src/lib/node_util.ts) against Node's own parseArgs:
// the same values and positionals for accepted argv, an error quoting the same flag for refused
// argv — and through both parsers of the CLI (npm run train's, npm run fleet -- submit's) the
// same options or the same ConfigError field.
import { parseArgs as nodeParseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
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
