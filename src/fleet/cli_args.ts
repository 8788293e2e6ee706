/**
 * Command-line flags of `npm run fleet -- COMMAND`, as strict as `npm run train`'s: node:util's
 * parseArgs (an unknown flag or a missing value is a ConfigError naming it), each flag documented
 * once, `--help` printing them. `submit` takes every `npm run train` flag that defines a run
 * (parsed by parseTrainArgs itself) besides its own; the flags about local outputs are refused.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors.ts';
import { FLAGS as TRAIN_FLAGS, parseTrainArgs, type TrainOptions } from '../cli/args.ts';
import type { PriorityClass } from '../runtime/scheduler.ts';
import { QUEUE_DEFAULTS, type QueueSettings } from './streams.ts';

export const COMMANDS = ['worker', 'rollout-worker', 'submit', 'status', 'watch', 'cancel', 'fetch'] as const;
export type Command = (typeof COMMANDS)[number];

interface Flag {
  type: 'string' | 'boolean';
  short?: string;
  value?: string;
  help: string;
}

const NATS: Flag = { type: 'string', value: 'URL', help: 'the NATS server with JetStream (e.g. nats://127.0.0.1:4222); required' };
const HELP: Flag = { type: 'boolean', short: 'h', help: 'print this help and exit' };

/** Each command's own flags. */
export const COMMAND_FLAGS: Record<Command, Record<string, Flag>> = {
  worker: {
    help: HELP,
    nats: NATS,
    name: { type: 'string', value: 'H', help: 'this host\'s name in events and status (default: hostname-pid)' },
    slots: { type: 'string', value: 'N', help: 'jobs run at once on this host (default 1)' },
    'memory-mib': { type: 'string', value: 'M', help: 'GPU MiB this host gives to fleet jobs; a job estimated above what is free is handed back (default: no limit)' },
    'ack-wait': { type: 'string', value: 'S', help: `seconds without a lease renewal before a job is redelivered (the shared consumer's ack wait; default ${QUEUE_DEFAULTS.ackWaitMs / 1000})` },
    'max-deliver': { type: 'string', value: 'N', help: `attempts before a job is dead-lettered (default ${QUEUE_DEFAULTS.maxDeliver})` },
    'rollout-silence': { type: 'string', value: 'S', help: 'seconds a rollout worker may go silent on a slice of a job\'s step before this host samples it itself (default 30)' },
    quiet: { type: 'boolean', short: 'q', help: 'print nothing but errors' },
  },
  'rollout-worker': {
    help: HELP,
    nats: NATS,
    name: { type: 'string', value: 'H', help: 'this host\'s name in the trainers\' logs (default: hostname-pid)' },
    quiet: { type: 'boolean', short: 'q', help: 'print nothing but errors' },
  },
  submit: {
    help: HELP,
    nats: NATS,
    id: { type: 'string', value: 'ID', help: 'job id, 1–100 of A–Z a–z 0–9 _ - (default: <env>-<algo>-s<seed>-<hash of the settings>, so the same settings resubmitted are dropped)' },
    priority: { type: 'string', value: 'CLASS', help: 'priority class: interactive | normal | background (default normal)' },
    weight: { type: 'string', value: 'W', help: 'fair-share weight, a positive number (default 1)' },
    'rollout-staleness': { type: 'string', value: 'N', help: 'policy versions a trajectory sampled by a rollout worker may lag the one trained on it, 0–16 (default 0: wait for the current version\'s; the run is then bitwise the single-host run)' },
  },
  status: { help: HELP, nats: NATS },
  watch: { help: HELP, nats: NATS },
  cancel: { help: HELP, nats: NATS },
  fetch: { help: HELP, nats: NATS, out: { type: 'string', value: 'DIR', help: 'the run folder to write (required): metrics.jsonl, run.json, summary.json, the adapter, curve.svg' } },
};

/** `npm run train` flags that are about this machine's outputs, not the run: refused by submit. */
const LOCAL_ONLY = ['help', 'json', 'out', 'resume', 'quiet', 'self-check'];

export interface FleetArgs {
  command: Command;
  help: boolean;
  nats: string;
  /** watch, cancel, fetch (required), status (optional). */
  job?: string;
  values: Record<string, string | boolean | undefined>;
  /** submit: the run's settings. */
  train?: TrainOptions;
}

function positive(field: string, v: string, integer: boolean): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new ConfigError(field, `expected a positive ${integer ? 'integer' : 'number'}, got "${v}"`);
  return n;
}

/** Parse `COMMAND [flags]`. Throws ConfigError naming the flag that is wrong. */
export function parseFleetArgs(argv: readonly string[]): FleetArgs {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return { command: 'status', help: true, nats: '', values: {} };
  if (!(COMMANDS as readonly string[]).includes(command)) throw new ConfigError('command', `expected one of ${COMMANDS.join(', ')}, got "${command}" (see --help)`);
  const cmd = command as Command;
  const own = COMMAND_FLAGS[cmd];
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [k, d] of Object.entries(own)) options[k] = { type: d.type, ...(d.short ? { short: d.short } : {}) };
  let trainArgv: string[] = [];
  let mine = [...rest];
  if (cmd === 'submit') {
    // Split: submit's own flags here, the run's flags to parseTrainArgs.
    mine = [];
    for (let i = 0; i < rest.length; i++) {
      const name = /^--([^=]+)/.exec(rest[i])?.[1];
      const isOwn = name !== undefined && Object.hasOwn(own, name);
      if (isOwn || rest[i] === '-h') {
        mine.push(rest[i]);
        if (isOwn && own[name!].type === 'string' && !rest[i].includes('=') && i + 1 < rest.length) mine.push(rest[++i]);
      } else {
        if (name !== undefined && LOCAL_ONLY.includes(name)) throw new ConfigError(`--${name}`, 'is about local outputs, not a fleet job\'s settings (fetch the run folder with `npm run fleet -- fetch JOB --out DIR`)');
        trainArgv.push(rest[i]);
      }
    }
  }
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: mine, options, strict: true, allowPositionals: cmd !== 'submit' && cmd !== 'worker' && cmd !== 'rollout-worker' }));
  } catch (e) {
    const msg = (e as Error).message;
    throw new ConfigError(/'(-{1,2}[^']+)'/.exec(msg)?.[1] ?? 'arguments', `${msg} (see npm run fleet -- ${cmd} --help)`);
  }
  const help = values.help === true;
  if (help) return { command: cmd, help, nats: '', values };
  const nats = values.nats as string | undefined;
  if (!nats) throw new ConfigError('--nats', 'is required: the URL of the NATS server (nats://host:port)');
  if (!/^(nats|tls|wss?):\/\/[^\s]+$/.test(nats)) throw new ConfigError('--nats', `expected nats://host:port, got "${nats}"`);
  const out: FleetArgs = { command: cmd, help, nats, values };
  if (positionals.length > 1) throw new ConfigError('JOB', `one job id expected, got ${positionals.length}`);
  if (['watch', 'cancel', 'fetch'].includes(cmd) && positionals.length === 0) throw new ConfigError('JOB', `${cmd} needs a job id (npm run fleet -- ${cmd} --nats URL JOB)`);
  if (positionals[0] !== undefined) {
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(positionals[0])) throw new ConfigError('JOB', `not a job id: "${positionals[0]}"`);
    out.job = positionals[0];
  }
  if (cmd === 'fetch' && !values.out) throw new ConfigError('--out', 'fetch needs --out DIR, the run folder to write');
  if (cmd === 'submit') {
    out.train = parseTrainArgs(trainArgv);
    if (values.priority !== undefined && !['interactive', 'normal', 'background'].includes(values.priority as string)) {
      throw new ConfigError('--priority', `expected one of interactive, normal, background, got "${values.priority}"`);
    }
    if (values.weight !== undefined) positive('--weight', values.weight as string, false);
    const st = values['rollout-staleness'] as string | undefined;
    if (st !== undefined && !/^(\d|1[0-6])$/.test(st)) throw new ConfigError('--rollout-staleness', `expected an integer from 0 to 16, got "${st}"`);
  }
  if (cmd === 'worker') {
    for (const k of ['slots', 'memory-mib', 'ack-wait', 'max-deliver', 'rollout-silence']) if (values[k] !== undefined) positive(`--${k}`, values[k] as string, k !== 'ack-wait' && k !== 'rollout-silence');
  }
  return out;
}

export function priorityOf(a: FleetArgs): PriorityClass | undefined {
  return a.values.priority as PriorityClass | undefined;
}

export function queueOf(a: FleetArgs): QueueSettings {
  return {
    ackWaitMs: a.values['ack-wait'] !== undefined ? Math.round(1000 * Number(a.values['ack-wait'])) : QUEUE_DEFAULTS.ackWaitMs,
    maxDeliver: a.values['max-deliver'] !== undefined ? Number(a.values['max-deliver']) : QUEUE_DEFAULTS.maxDeliver,
  };
}

const USAGE: Record<Command, string> = {
  worker: 'worker --nats URL [--name H] [--slots N] [--memory-mib M]   run jobs on this host until interrupted',
  'rollout-worker': 'rollout-worker --nats URL [--name H]                  sample other hosts\' RL rollouts on this host until interrupted',
  submit: 'submit --nats URL [--id ID] [train flags]                    queue a job; prints its id',
  status: 'status --nats URL [JOB]                                      every job\'s state, or one job\'s',
  watch: 'watch --nats URL JOB                                         a job\'s progress from its start, until it ends',
  cancel: 'cancel --nats URL JOB                                        stop a queued or running job',
  fetch: 'fetch --nats URL JOB --out DIR                               a finished job\'s run folder, as npm run train writes it',
};

function rows(flags: Record<string, Flag>): string[] {
  return Object.entries(flags).map(([k, d]) => `  ${`${d.short ? `-${d.short}, ` : '    '}--${k}${d.value ? ` ${d.value}` : ''}`.padEnd(26)} ${d.help}`);
}

/** The --help text: every command, or one command's flags. */
export function fleetHelp(cmd?: Command): string {
  if (!cmd) {
    return [
      'Usage: npm run fleet -- COMMAND --nats URL [flags]',
      '',
      'Runs training jobs on a fleet of hosts through one NATS JetStream server (nats-server -js): jobs',
      'queue on the WT_JOBS work-queue stream, each host\'s worker takes them as it has room, checkpoints',
      'and adapters go to the server\'s KV bucket and Object Store, progress to the WT_EVENTS stream.',
      '',
      'Commands:',
      ...COMMANDS.map((c) => `  ${USAGE[c]}`),
      '',
      'npm run fleet -- COMMAND --help lists a command\'s flags.',
    ].join('\n');
  }
  const lines = [`Usage: npm run fleet -- ${USAGE[cmd]}`, '', 'Flags:', ...rows(COMMAND_FLAGS[cmd])];
  if (cmd === 'submit') {
    const train = Object.fromEntries(Object.entries(TRAIN_FLAGS).filter(([k]) => !LOCAL_ONLY.includes(k)));
    lines.push('', 'The run\'s settings, as for npm run train:', ...rows(train as Record<string, Flag>));
  }
  return lines.join('\n');
}
