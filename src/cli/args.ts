/**
 * Command-line flags of `npm run train`, parsed with node:util's parseArgs (strict: an unknown
 * flag or a missing value is an error). Pure: no I/O, so it is unit-tested in Node and used by the
 * Deno entry point alike. Each flag is documented once, in FLAGS; `--help` prints them.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors.ts';

interface FlagDoc {
  type: 'string' | 'boolean';
  short?: string;
  value?: string;
  help: string;
}

export const FLAGS = {
  help: { type: 'boolean', short: 'h', help: 'print this help and exit' },
  seed: { type: 'string', value: 'N', help: 'seed (u32) fixing every random choice of the run (default 0)' },
  json: { type: 'string', value: 'FILE', help: 'write the run summary as JSON to FILE' },
  quiet: { type: 'boolean', short: 'q', help: 'print nothing but errors (and the JSON file, if asked)' },
} as const satisfies Record<string, FlagDoc>;

export interface TrainOptions {
  help: boolean;
  seed: number;
  json?: string;
  quiet: boolean;
}

function u32(field: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 0xffffffff) throw new ConfigError(field, `expected an integer in [0, 4294967295], got "${v}"`);
  return Number(v);
}

/** Parse argv (without the program name). Throws ConfigError naming the flag that is wrong. */
export function parseTrainArgs(argv: readonly string[]): TrainOptions {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [k, d] of Object.entries(FLAGS)) options[k] = { type: d.type, ...('short' in d ? { short: d.short } : {}) };
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (e) {
    const msg = (e as Error).message;
    const flag = /'(-{1,2}[^']+)'/.exec(msg)?.[1] ?? 'arguments';
    throw new ConfigError(flag, `${msg} (see --help)`);
  }
  return {
    help: values.help === true,
    seed: values.seed === undefined ? 0 : u32('--seed', values.seed as string),
    json: values.json as string | undefined,
    quiet: values.quiet === true,
  };
}

/** The --help text. */
export function trainHelp(): string {
  const rows = Object.entries(FLAGS).map(([k, d]) => {
    const short = 'short' in d ? `-${d.short}, ` : '    ';
    const left = `${short}--${k}${'value' in d ? ` ${d.value}` : ''}`;
    return `  ${left.padEnd(22)} ${d.help}`;
  });
  return [
    'Usage: npm run train -- [flags]',
    '',
    'Acquires the WebGPU adapter (a real GPU, or the software adapter where there is none), reports',
    'it, and checks a kernel on it against its CPU reference.',
    '',
    'Flags:',
    ...rows,
  ].join('\n');
}
