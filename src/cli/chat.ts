/**
 * `npm run chat -- RUN_DIR [--temperature T] [--max-tokens N]` — talks to a trained run: each line
 * read from stdin is a prompt (a task, as the environment would pose it), answered by the trained
 * policy in the job's own format (openRun: run.json's job, the folder's weights). Replies are one
 * action each, as in an episode: they stop at a closed tool call or answer, or an end-of-turn id.
 * Non-interactive use works too: `echo "What is 12*7?" | npm run chat -- runs/x`.
 */
import { exitCodeOf } from './exit.ts';
import process from 'node:process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors.ts';
import { specTools } from '../env/demos.ts';
import { Policy } from '../runtime/policy.ts';
import { openRun } from './eval.ts';

export const CHAT_HELP = `Usage: npm run chat -- RUN_DIR [--temperature T] [--max-tokens N]

Talks to the trained run in RUN_DIR (a folder written by npm run train): each line on stdin is a
prompt, each reply one action of the trained agent in the job's format.
  --temperature T   sampling temperature (default 0: greedy)
  --max-tokens N    tokens per reply (default: the job's action limit)
  -h, --help        print this help`;

async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  let temperature = 0;
  let maxTokens: number | undefined;
  try {
    ({ values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { temperature: { type: 'string' }, 'max-tokens': { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
    if (values.help) {
      console.log(CHAT_HELP);
      return 0;
    }
    if (positionals.length !== 1) throw new ConfigError('RUN_DIR', `expected one run folder, got ${positionals.length} (see --help)`);
    if (values.temperature !== undefined) {
      temperature = Number(values.temperature);
      if (!(temperature >= 0) || !Number.isFinite(temperature)) throw new ConfigError('--temperature', `expected a number ≥ 0, got "${values.temperature}"`);
    }
    if (values['max-tokens'] !== undefined) {
      maxTokens = Number(values['max-tokens']);
      if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new ConfigError('--max-tokens', `expected an integer ≥ 1, got "${values['max-tokens']}"`);
    }
  } catch (e) {
    console.error(`error: ${e instanceof Error ? e.message : e}`);
    return 2;
  }
  let policy: Policy | undefined;
  try {
    const { job, parts } = await openRun(positionals[0]);
    policy = new Policy(parts);
    const tty = process.stdin.isTTY;
    if (tty) console.error(`${job.env.name} · ${job.algo} · ${parts.cfg.name ?? parts.cfg.family}: type a prompt, Ctrl-D to end`);
    const tools = specTools(job.env.spec);
    const lines = createInterface({ input: process.stdin, terminal: false });
    let seed = 0;
    for await (const line of lines) {
      if (line.trim() === '') continue;
      const reply = await policy.sample(line, { temperature, seed: seed++, tools, ...(maxTokens !== undefined ? { maxTokens } : {}) });
      console.log(reply);
    }
    return 0;
  } catch (e) {
    return exitCodeOf(e);
  } finally {
    await policy?.close();
  }
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
