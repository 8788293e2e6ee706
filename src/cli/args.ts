/**
 * Command-line flags of `npm run train`, parsed with node:util's parseArgs (strict: an unknown
 * flag or a missing value is an error). Pure: no I/O, so it is unit-tested in Node and used by the
 * Deno entry point alike. Each flag is documented once, in FLAGS; `--help` prints them.
 *
 * Defaults are the library's (TRAIN_DEFAULTS in src/runtime/train.ts: the zero-config run, sized
 * to finish in minutes on a 2-core machine's software WebGPU adapter, so that a first run needs no
 * GPU; its measured time and held-out success are in the README, from a dated run).
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors.ts';
import { LORA_TARGETS } from '../model/config.ts';
import { PRESETS } from '../model/presets.ts';
import { ALGOS, type Algo } from '../runtime/rl_job.ts';
import { ENV_NAMES, type EnvName } from '../runtime/job_envs.ts';
import { TRAIN_DEFAULTS } from '../runtime/train.ts';

interface FlagDoc {
  type: 'string' | 'boolean';
  short?: string;
  value?: string;
  help: string;
}

/** The library's defaults (TRAIN_DEFAULTS), plus the CLI's checkpoint interval. */
export const DEFAULTS = {
  ...TRAIN_DEFAULTS,
  /** Checkpoint interval (steps of each phase; a phase's last step always saves). */
  checkpointEvery: 25,
} as const;

export const FLAGS = {
  help: { type: 'boolean', short: 'h', help: 'print this help and exit' },
  env: { type: 'string', value: 'NAME', help: `environment: ${ENV_NAMES.join(' | ')} (default ${DEFAULTS.env})` },
  algo: { type: 'string', value: 'NAME', help: `algorithm: ${ALGOS.join(' | ')} (default ${DEFAULTS.algo})` },
  steps: { type: 'string', value: 'N', help: `RL steps (sft: SFT steps) (default ${DEFAULTS.steps})` },
  seed: { type: 'string', value: 'N', help: 'seed (u32) fixing every random choice of the run (default 0)' },
  model: { type: 'string', value: 'NAME', help: `a preset trained from scratch (${Object.keys(PRESETS).join(', ')}; default ${DEFAULTS.model}), or a pretrained model: a Hugging Face repo id (Qwen/Qwen2.5-0.5B-Instruct) or a folder in its layout (./my-model)` },
  revision: { type: 'string', value: 'REV', help: 'branch, tag or commit of a pretrained --model (default main; the run pins the commit it resolved)' },
  'lora-rank': { type: 'string', value: 'R', help: `LoRA rank of the RL job (default ${DEFAULTS.loraRank}; alpha = 2R)` },
  'lora-targets': { type: 'string', value: 'LIST', help: `comma-separated LoRA targets: ${LORA_TARGETS.join(',')} or the model's module names (q_proj,v_proj; c_attn) (default ${DEFAULTS.loraTargets.join(',')}; gpt2 has no gate)` },
  full: { type: 'boolean', help: 'full-parameter RL instead of LoRA' },
  groups: { type: 'string', value: 'N', help: `tasks per RL step (default ${DEFAULTS.groups})` },
  'group-size': { type: 'string', value: 'G', help: `attempts per task (default ${DEFAULTS.groupSize})` },
  lr: { type: 'string', value: 'X', help: `RL learning rate (sft: SFT learning rate) (default from scratch: ${DEFAULTS.lr} LoRA, ${DEFAULTS.fullLr} --full; pretrained: by the model's width, Tinker's rule, e.g. 5.3e-4 LoRA for Qwen2.5-0.5B)` },
  'no-warmstart': { type: 'boolean', help: 'start RL from the model as it is, without the SFT warm start' },
  'warmstart-steps': { type: 'string', value: 'N', help: `SFT warm-start steps (default ${DEFAULTS.warmstartSteps} from scratch, none for a pretrained model)` },
  'eval-episodes': { type: 'string', value: 'N', help: `held-out episodes per evaluation, 0 for none (default ${DEFAULTS.evalEpisodes})` },
  json: { type: 'string', value: 'FILE', help: 'write the run summary as JSON to FILE' },
  out: { type: 'string', value: 'DIR', help: 'run folder: metrics.jsonl, checkpoints, adapter, curve.svg (default runs/<env>-<algo>[-full][-<model>]-s<seed>/, the model named unless it is the default preset)' },
  overwrite: { type: 'boolean', help: "replace the run in the folder (its outputs and checkpoints are removed first); without it a folder holding another run's run.json is refused" },
  resume: { type: 'string', value: 'DIR', help: 'continue the run in DIR from its last checkpoint up to --steps (required); its other settings come from DIR/run.json' },
  'checkpoint-every': { type: 'string', value: 'N', help: 'save a checkpoint every N steps of each phase, and at its last step (default 25)' },
  quiet: { type: 'boolean', short: 'q', help: 'print nothing but errors (and the files asked for)' },
  'self-check': { type: 'boolean', help: 'only acquire the device and check one kernel against its CPU reference' },
} as const satisfies Record<string, FlagDoc>;

export interface TrainOptions {
  help: boolean;
  env: EnvName;
  algo: Algo;
  steps: number;
  seed: number;
  /** A preset, or a pretrained model's Hub repo id or folder. */
  model: string;
  /** Revision of a pretrained model (a fresh run writes the commit it resolved into run.json). */
  revision?: string;
  loraRank: number;
  /** Our target names or the model's module names (checked against the model by the job). */
  loraTargets: string[];
  full: boolean;
  groups: number;
  groupSize: number;
  /** Absent: the default for the model and mode (jobOptions). */
  lr?: number;
  warmstart: boolean;
  /** Absent: the default (300 from scratch, none for a pretrained model). */
  warmstartSteps?: number;
  evalEpisodes: number;
  json?: string;
  out?: string;
  /** Run folder to resume (its run.json gives every setting but steps, json, quiet, checkpointEvery). */
  resume?: string;
  /** Steps between checkpoints (absent: 1). */
  checkpointEvery?: number;
  /** Replace a run already in the folder. */
  overwrite?: boolean;
  quiet: boolean;
  selfCheck: boolean;
}

function u32(field: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 0xffffffff) throw new ConfigError(field, `expected an integer in [0, 4294967295], got "${v}"`);
  return Number(v);
}

function count(field: string, v: string, min: number): number {
  const n = u32(field, v);
  if (n < min) throw new ConfigError(field, `must be at least ${min}, got ${n}`);
  return n;
}

function positive(field: string, v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0) throw new ConfigError(field, `expected a positive number, got "${v}"`);
  return n;
}

function oneOf<T extends string>(field: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new ConfigError(field, `expected one of ${allowed.join(', ')}, got "${v}"`);
  return v as T;
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
  const str = (k: string) => values[k] as string | undefined;
  if (str('resume') !== undefined) {
    const extra = Object.keys(values).filter((k) => !RESUME_FLAGS.includes(k));
    if (extra.length > 0) throw new ConfigError('--resume', `the run's settings come from its run.json; only ${RESUME_FLAGS.filter((k) => k !== 'resume').map((k) => `--${k}`).join(', ')} may go with it (got ${extra.map((k) => `--${k}`).join(', ')})`);
    if (str('steps') === undefined) throw new ConfigError('--resume', 'needs --steps N: the step to continue the run to');
  }
  const model = str('model') ?? DEFAULTS.model;
  if (!isPreset(model) && !model.includes('/')) {
    throw new ConfigError('--model', `unknown preset "${model}" (known: ${Object.keys(PRESETS).join(', ')}); a pretrained model is a Hub repo id (org/name) or a folder path (./name)`);
  }
  checkFlagCombinations(values, isPreset(model));
  const targets = str('lora-targets');
  const loraTargets = targets === undefined ? [...DEFAULTS.loraTargets] : targets.split(',').map((t) => t.trim());
  if (loraTargets.some((t) => t === '')) throw new ConfigError('--lora-targets', `expected comma-separated names, got "${targets}"`);
  return {
    help: values.help === true,
    env: str('env') === undefined ? DEFAULTS.env : oneOf('--env', str('env')!, ENV_NAMES),
    algo: str('algo') === undefined ? DEFAULTS.algo : oneOf('--algo', str('algo')!, ALGOS),
    steps: str('steps') === undefined ? DEFAULTS.steps : count('--steps', str('steps')!, 1),
    seed: str('seed') === undefined ? DEFAULTS.seed : u32('--seed', str('seed')!),
    model,
    ...(str('revision') !== undefined ? { revision: str('revision') } : {}),
    loraRank: str('lora-rank') === undefined ? DEFAULTS.loraRank : count('--lora-rank', str('lora-rank')!, 1),
    loraTargets,
    full: values.full === true,
    groups: str('groups') === undefined ? DEFAULTS.groups : count('--groups', str('groups')!, 1),
    groupSize: str('group-size') === undefined ? DEFAULTS.groupSize : count('--group-size', str('group-size')!, 2),
    ...(str('lr') !== undefined ? { lr: positive('--lr', str('lr')!) } : {}),
    warmstart: values['no-warmstart'] !== true,
    ...(str('warmstart-steps') !== undefined ? { warmstartSteps: count('--warmstart-steps', str('warmstart-steps')!, 0) } : {}),
    evalEpisodes: str('eval-episodes') === undefined ? DEFAULTS.evalEpisodes : count('--eval-episodes', str('eval-episodes')!, 0),
    json: str('json'),
    out: str('out'),
    ...(str('resume') !== undefined ? { resume: str('resume') } : {}),
    ...(str('checkpoint-every') !== undefined ? { checkpointEvery: count('--checkpoint-every', str('checkpoint-every')!, 1) } : {}),
    quiet: values.quiet === true,
    ...(values.overwrite === true ? { overwrite: true } : {}),
    selfCheck: values['self-check'] === true,
  };
}

/**
 * Flags that contradict each other, or that the job would ignore: refused by name before anything
 * runs (the job's own settings are checked by job_config.ts once the flags become a job).
 */
function checkFlagCombinations(values: Record<string, string | boolean | undefined>, fromScratch: boolean): void {
  const given = (k: string) => values[k] !== undefined && values[k] !== false;
  const clash = (a: string, bs: string[], why: string) => {
    const b = bs.find(given);
    if (given(a) && b !== undefined) throw new ConfigError(`--${b}`, `cannot go with --${a}: ${why}`);
  };
  clash('full', ['lora-rank', 'lora-targets'], 'full-parameter RL has no LoRA');
  clash('no-warmstart', ['warmstart-steps'], 'there is no warm start');
  if (fromScratch && given('revision')) throw new ConfigError('--revision', 'goes with a pretrained --model (a Hub repo id), not a preset');
  if (values.algo === 'sft' && !fromScratch) {
    // A pretrained SFT job trains a LoRA adapter (or, --full, every weight) for --steps at --lr.
    const b = ['no-warmstart', 'warmstart-steps'].find(given);
    if (b !== undefined) throw new ConfigError(`--${b}`, 'cannot go with --algo sft: an SFT job is the SFT itself, with no separate warm start');
  } else if (values.algo === 'sft') {
    const b = ['full', 'lora-rank', 'lora-targets', 'no-warmstart', 'warmstart-steps'].find(given);
    if (b !== undefined) throw new ConfigError(`--${b}`, 'cannot go with --algo sft: an SFT job trains every parameter for --steps at --lr, with no RL and no separate warm start');
  }
}

/** Whether `model` names a from-scratch preset (else a pretrained model's repo id or folder). */
export function isPreset(model: string): boolean {
  return Object.hasOwn(PRESETS, model);
}

/** The flags that may go with --resume. */
const RESUME_FLAGS = ['resume', 'steps', 'json', 'quiet', 'checkpoint-every'];

/** The run folder when --out is not given. */
export function defaultOutDir(o: Pick<TrainOptions, 'env' | 'algo' | 'seed'> & { model?: string; full?: boolean }): string {
  // Named by what tells runs apart: full-parameter RL, and the model unless it is the default
  // preset (a pretrained one by its last path part: Qwen2.5-0.5B-Instruct).
  const m = o.model !== undefined && o.model !== DEFAULTS.model ? `-${o.model.split('/').filter(Boolean).at(-1)}` : '';
  const full = o.full && o.algo !== 'sft' ? '-full' : '';
  return `runs/${o.env}-${o.algo}${full}${m}-s${o.seed}`;
}

/** The --help text. */
export function trainHelp(): string {
  const rows = Object.entries(FLAGS).map(([k, d]) => {
    const short = 'short' in d ? `-${d.short}, ` : '    ';
    const left = `${short}--${k}${'value' in d ? ` ${d.value}` : ''}`;
    return `  ${left.padEnd(26)} ${d.help}`;
  });
  return [
    'Usage: npm run train -- [flags]',
    '',
    'Trains a tool-using agent on the local WebGPU adapter (a real GPU, or the software adapter where',
    'there is none): a small transformer from scratch with an SFT warm start on the environment\'s',
    'demonstrations, or a pretrained model (--model org/name) in its own chat format; then RL (LoRA by',
    'default), with held-out success measured before RL and after.',
    'Progress goes to stderr; the run folder gets metrics.jsonl, the adapter and a learning curve.',
    '',
    'Flags:',
    ...rows,
  ].join('\n');
}
