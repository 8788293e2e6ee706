/**
 * Flags of `npm run bench`, parsed with node:util's parseArgs (strict: an unknown flag or a
 * missing value is an error). Pure, so the Node unit tests cover it.
 */
import { parseArgs } from 'node:util';

/** Every benchmark part, in the order BENCHMARKS.md lists them. */
export const PARTS = ['kernels', 'model', 'pretrained', 'scheduler', 'algorithms', 'paper', 'agents', 'fleet'] as const;
export type Part = (typeof PARTS)[number];
/** The parts that have code today; `--only` of another fails with "part X is not implemented yet". */
export const IMPLEMENTED_PARTS: readonly Part[] = ['kernels', 'model', 'pretrained', 'scheduler', 'algorithms', 'paper', 'agents', 'fleet'];
/** Parts that run only when named by --only (pretrained: real model shapes, many minutes on a software adapter). */
export const OPT_IN_PARTS: readonly Part[] = ['pretrained'];

export const DEFAULT_MARKDOWN = 'BENCHMARKS.md';

export class BenchArgsError extends Error {
  override name = 'BenchArgsError';
}

const FLAGS = {
  only: { type: 'string', value: 'PART', help: `run only PART (${PARTS.join(', ')}); repeat or comma-separate for several; ${OPT_IN_PARTS.join(', ')} only runs when named` },
  quick: { type: 'boolean', help: 'few iterations and only the small shapes (a smoke run)' },
  filter: { type: 'string', value: 'TEXT', help: 'run only the benchmarks whose name contains TEXT (e.g. attention)' },
  // --quick and --filter runs leave BENCHMARKS.md alone unless --markdown names a file.
  json: { type: 'string', value: 'FILE', help: 'write the results as JSON to FILE' },
  markdown: { type: 'string', value: 'FILE', help: `write the tables into FILE (default ${DEFAULT_MARKDOWN}, but none with --quick or --filter)` },
  'no-markdown': { type: 'boolean', help: 'do not write any markdown file' },
  'from-json': { type: 'string', value: 'FILE', help: 'measure nothing: render the --only part\'s section again from FILE, a --json run of it (agents only)' },
  help: { type: 'boolean', short: 'h', help: 'print this help and exit' },
} as const;

export interface BenchArgs {
  help: boolean;
  /** Parts to run, in PARTS order. */
  parts: Part[];
  quick: boolean;
  /** Only benchmarks whose name contains this. */
  filter?: string;
  json?: string;
  /** Markdown file to update, or undefined for none. */
  markdown?: string;
  /** Render the --only part's section from this saved --json run instead of measuring. */
  fromJson?: string;
  /** The flags as given (for the "measured with" line). */
  argv: string[];
}

/** Parse argv (without the program name). Throws BenchArgsError with a message naming the problem. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        only: { type: 'string', multiple: true },
        quick: { type: 'boolean' },
        json: { type: 'string' },
        filter: { type: 'string' },
        markdown: { type: 'string' },
        'no-markdown': { type: 'boolean' },
        'from-json': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new BenchArgsError(`${(e as Error).message} (see --help)`);
  }
  const only = ((values.only as string[] | undefined) ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s);
  for (const p of only) {
    if (!(PARTS as readonly string[]).includes(p)) throw new BenchArgsError(`--only: unknown part "${p}" (parts: ${PARTS.join(', ')})`);
    if (!IMPLEMENTED_PARTS.includes(p as Part)) throw new BenchArgsError(`part ${p} is not implemented yet`);
  }
  const parts = only.length ? PARTS.filter((p) => only.includes(p)) : IMPLEMENTED_PARTS.filter((p) => !OPT_IN_PARTS.includes(p));
  const quick = values.quick === true;
  if (values['no-markdown'] === true && values.markdown !== undefined) throw new BenchArgsError('--markdown and --no-markdown contradict each other');
  const markdown = values['no-markdown'] === true ? undefined : (values.markdown as string | undefined) ?? (quick || values.filter !== undefined ? undefined : DEFAULT_MARKDOWN);
  const fromJson = values['from-json'] as string | undefined;
  if (fromJson !== undefined) {
    if (only.length !== 1 || only[0] !== 'agents') throw new BenchArgsError(`--from-json renders the agents section alone: give --only agents (got ${only.length ? only.join(', ') : 'no --only'})`);
    if (markdown === undefined) throw new BenchArgsError('--from-json writes a markdown file: not with --no-markdown');
    if (values.json !== undefined || values.filter !== undefined || quick) throw new BenchArgsError('--from-json measures nothing: not with --json, --filter or --quick');
  }
  return {
    help: values.help === true,
    parts,
    quick,
    ...(values.json !== undefined ? { json: values.json as string } : {}),
    ...(values.filter !== undefined ? { filter: values.filter as string } : {}),
    ...(markdown !== undefined ? { markdown } : {}),
    ...(fromJson !== undefined ? { fromJson } : {}),
    argv: [...argv],
  };
}

/** The --help text. */
export function benchHelp(): string {
  const rows = Object.entries(FLAGS).map(([k, d]) => {
    const short = 'short' in d ? `-${d.short}, ` : '    ';
    const left = `${short}--${k}${'value' in d ? ` ${d.value}` : ''}`;
    return `  ${left.padEnd(22)} ${d.help}`;
  });
  const missing = PARTS.filter((p) => !IMPLEMENTED_PARTS.includes(p));
  return [
    'Usage: npm run bench -- [flags]',
    '',
    'Runs the benchmarks under Deno on the WebGPU adapter, beside tfjs-backend-webgpu and jax-js in the',
    'same process, prints a table per part, and regenerates those parts\' sections of BENCHMARKS.md.',
    `Parts: ${PARTS.join(', ')}${missing.length ? ` (not implemented yet: ${missing.join(', ')})` : ''}.`,
    `Without --only, every implemented part runs but ${OPT_IN_PARTS.join(', ')} (SmolLM2-135M and Qwen2.5-0.5B shapes beside torch CPU: minutes on a software adapter).`,
    '',
    'Flags:',
    ...rows,
  ].join('\n');
}
