/**
 * One validation of a whole training job, in one place, before any GPU work: every field's type
 * and range, the combinations that only make sense together, and unknown keys at every level.
 * Each refusal is a ConfigError whose `field` is the path of the value at fault (`lora.rank`,
 * `warmStart.steps`, `model.nHead`, `env.maxTurns`).
 *
 * Two entry points, used by every way a job starts:
 * - `checkTrainSettings` checks what a caller hands `train()` / `jobOptions()` (the CLI, `--resume`
 *   and the demo pages go through jobOptions) before defaults fill the gaps: keys and types, so a
 *   typo (`stepz`, `lora: { rnak }`) is an error instead of a silently ignored setting;
 * - `checkJobOptions` checks a resolved JobOptions — the job runner's own input, and what a fleet
 *   job carries — ranges and combinations included. `runTraining` calls it first, so a job built
 *   by hand is held to the same rules as one built by jobOptions.
 *
 * Upper bounds are sanity bounds, far above anything these machines train, there so that a typo or
 * a doctored run.json (`groups: 1e9`) is refused instead of allocating for minutes. The LoRA rank is
 * bounded by the LoRA kernels (LORA_MAX_RANK) and by each target's own size: rank ≤ min(in, out).
 */
import { JOB_ALGORITHMS } from './job_algorithms.ts';
import { ConfigError } from '../errors.ts';
import { LORA_TARGETS, loraTargetDims, type ModelConfig, validateConfig, validateLora } from '../model/config.ts';
import { ModelConfigError, WeightsError } from '../model/errors.ts';
import { checkHostParams } from '../model/base_model.ts';
import { BYTE_VOCAB_SIZE } from '../model/tokenizer/byte.ts';
import { LORA_MAX_RANK } from '../ops/lora_linear.ts';
import type { JobOptions } from './rl_job.ts';
import { LR_SCHEDULES } from './sft_job.ts';

/** Sanity bounds of a job (see the header). */
export const JOB_LIMITS = Object.freeze({
  steps: 1_000_000,
  groups: 4096,
  groupSize: 1024,
  /** groups × groupSize: episodes rolled out per RL step. */
  episodesPerStep: 65_536,
  demos: 1 << 22,
  batchSize: 4096,
  evalEpisodes: 1 << 20,
  rows: 4096,
  maxTurns: 1000,
  /** A timer's longest delay (setTimeout's 2³¹ − 1 ms). */
  stepTimeoutMs: 2 ** 31 - 1,
  idLength: 200,
});

/** Algorithms whose advantages compare attempts within a group: one attempt per task gives them nothing. */

export function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined || typeof v === 'bigint') return String(v);
  if (typeof v === 'function') return 'a function';
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `v` as a plain object with only `allowed` keys (own enumerable keys; symbols are refused too). */
export function record(field: string, v: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (!isObject(v)) throw new ConfigError(field, `expected an object, got ${describe(v)}`);
  for (const k of Reflect.ownKeys(v)) {
    const name = typeof k === 'symbol' ? k.toString() : k;
    if (typeof k === 'symbol' || !allowed.includes(k)) {
      throw new ConfigError(field === '' ? name : `${field}.${name}`, `unknown setting (known: ${allowed.join(', ')})`);
    }
  }
  return v;
}

/** An integer in [min, max]. */
export function intIn(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ConfigError(field, `expected an integer in [${min}, ${max}], got ${describe(v)}`);
  return v;
}

/** A finite number > 0. */
export function positive(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new ConfigError(field, `expected a finite positive number, got ${describe(v)}`);
  return v;
}

export function oneOf<T extends string>(field: string, v: unknown, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) throw new ConfigError(field, `expected one of ${allowed.join(', ')}, got ${describe(v)}`);
  return v as T;
}

function fn(field: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'function') throw new ConfigError(field, `expected a function, got ${describe(v)}`);
}

/** An optional value: checked by `check` only when present (not undefined). */
function opt(s: Record<string, unknown>, key: string, check: (v: unknown) => unknown): void {
  if (s[key] !== undefined) check(s[key]);
}

/** Keys a TrainSettings may have (`service` only for train()). */
export const TRAIN_SETTING_KEYS = [
  'env', 'algo', 'model', 'steps', 'seed', 'groups', 'groupSize', 'lr', 'lora', 'warmStart', 'evalEpisodes', 'temperature',
  'maxTurns', 'maxNewTokens', 'format', 'rows', 'maxGradNorm', 'stepTimeoutMs', 'onStep', 'onPhase', 'onWarning', 'checkpoint', 'id', 'hub', 'progress', 'weights',
] as const;
const HUB_KEYS = ['revision', 'endpoint', 'cacheDir', 'offline'];
const PRETRAINED_KEYS = ['repo', 'commit', ...HUB_KEYS];
const LORA_KEYS = ['rank', 'alpha', 'targets'];
const WARM_KEYS = ['steps', 'demos', 'batchSize', 'lr', 'schedule'];
const CHECKPOINT_KEYS = ['every', 'save', 'from'];
const ENV_KEYS = ['name', 'kind', 'spec', 'maxTurns', 'maxNewTokens', 'format', 'context'];
const JOB_KEYS = [
  'env', 'algo', 'model', 'lora', 'steps', 'seed', 'groups', 'groupSize', 'lr', 'warmStart', 'evalEpisodes', 'temperature',
  'maxNewTokens', 'rows', 'maxGradNorm', 'stepTimeoutMs', 'onStep', 'onPhase', 'onWarning', 'id', 'checkpoint', 'pretrained', 'weights', 'rollouts',
];

/** A job's pretrained checkpoint reference (PretrainedJob): strings where given, offline a boolean. */
function checkPretrainedRef(field: string, v: unknown, keys: readonly string[]): void {
  const r = record(field, v, keys);
  if (keys.includes('repo') && (typeof r.repo !== 'string' || r.repo === '')) throw new ConfigError(`${field}.repo`, `expected a Hub repo id or a folder, got ${describe(r.repo)}`);
  for (const k of ['commit', 'revision', 'endpoint', 'cacheDir']) {
    opt(r, k, (x) => { if (typeof x !== 'string' || x === '') throw new ConfigError(`${field}.${k}`, `expected a non-empty string, got ${describe(x)}`); });
  }
  opt(r, 'offline', (x) => { if (typeof x !== 'boolean') throw new ConfigError(`${field}.offline`, `expected a boolean, got ${describe(x)}`); });
}

/**
 * Keys and types of what a caller hands train() / jobOptions(), before defaults fill the gaps;
 * `extraKeys` are the caller's own (train()'s `service`). Ranges that need the resolved job (the
 * rank against the model, maxNewTokens against the context) are left to checkJobOptions.
 */
export function checkTrainSettings(s: unknown, extraKeys: readonly string[] = []): void {
  const o = record('', s, [...TRAIN_SETTING_KEYS, ...extraKeys]);
  if (o.env === undefined) throw new ConfigError('env', 'is required: an environment name, a JobEnv or an EnvSpec');
  opt(o, 'algo', (v) => { if (typeof v !== 'string') throw new ConfigError('algo', `expected a string, got ${describe(v)}`); });
  opt(o, 'model', (v) => { if (typeof v !== 'string' && !isObject(v)) throw new ConfigError('model', `expected a preset name, a Hub repo id, a folder, a loaded pretrained model or a ModelConfig, got ${describe(v)}`); });
  opt(o, 'hub', (v) => checkPretrainedRef('hub', v, HUB_KEYS));
  for (const k of ['steps', 'seed', 'groups', 'groupSize', 'evalEpisodes', 'maxTurns', 'maxNewTokens', 'rows', 'stepTimeoutMs']) {
    opt(o, k, (v) => { if (typeof v !== 'number' || !Number.isInteger(v)) throw new ConfigError(k, `expected an integer, got ${describe(v)}`); });
  }
  opt(o, 'maxTurns', (v) => intIn('maxTurns', v, 1, JOB_LIMITS.maxTurns));
  for (const k of ['lr', 'temperature', 'maxGradNorm']) opt(o, k, (v) => positive(k, v));
  if (o.lora !== undefined && o.lora !== null) {
    const l = record('lora', o.lora, LORA_KEYS);
    opt(l, 'rank', (v) => intIn('lora.rank', v, 1, Number.MAX_SAFE_INTEGER)); // the upper bounds need the model: checkLora
    opt(l, 'alpha', (v) => positive('lora.alpha', v));
    opt(l, 'targets', (v) => {
      if (!Array.isArray(v)) throw new ConfigError('lora.targets', `expected an array of ${LORA_TARGETS.join('|')}, got ${describe(v)}`);
    });
  }
  if (o.warmStart !== undefined && o.warmStart !== null) {
    const w = record('warmStart', o.warmStart, WARM_KEYS);
    // steps 0 means "no warm start" (as null does); then nothing else may be set.
    opt(w, 'steps', (v) => intIn('warmStart.steps', v, 0, JOB_LIMITS.steps));
    if (w.steps === 0) {
      const other = Object.keys(w).filter((k) => k !== 'steps');
      if (other.length > 0) throw new ConfigError(`warmStart.${other[0]}`, 'is set but warmStart.steps is 0 (no warm start); leave it out, or use warmStart: null');
    }
    opt(w, 'demos', (v) => intIn('warmStart.demos', v, 1, JOB_LIMITS.demos));
    opt(w, 'batchSize', (v) => intIn('warmStart.batchSize', v, 1, JOB_LIMITS.batchSize));
    opt(w, 'lr', (v) => positive('warmStart.lr', v));
    opt(w, 'schedule', (v) => oneOf('warmStart.schedule', v, LR_SCHEDULES));
  }
  opt(o, 'progress', (v) => { if (typeof v !== 'boolean') throw new ConfigError('progress', `expected a boolean, got ${describe(v)}`); });
  opt(o, 'format', (v) => { if (!isObject(v)) throw new ConfigError('format', `expected a PromptFormat object, got ${describe(v)}`); });
  for (const k of ['onStep', 'onPhase']) fn(k, o[k]);
  opt(o, 'id', (v) => checkId(v));
  opt(o, 'checkpoint', (v) => checkCheckpointing(v));
  opt(o, 'rollouts', (v) => { if (!isObject(v) || typeof (v as { rollout?: unknown }).rollout !== 'function') throw new ConfigError('rollouts', `expected a StepRollouts ({ rollout(request) }), got ${describe(v)}`); });
  if (o.algo === 'sft') {
    // An SFT job trains every parameter on the demonstrations for `steps` at `lr`: a LoRA or a
    // warm start's steps / lr would be ignored without a word.
    if (o.lora !== undefined) throw new ConfigError('lora', "algo 'sft' trains every parameter: leave lora out");
    const w = o.warmStart as Record<string, unknown> | null | undefined;
    for (const k of ['steps', 'lr', 'schedule']) {
      if (w?.[k] !== undefined) throw new ConfigError(`warmStart.${k}`, `algo 'sft' is itself the SFT run (its steps and lr are the job's steps and lr): leave warmStart.${k} out`);
    }
  }
}

function checkId(v: unknown): void {
  if (typeof v !== 'string' || v.length === 0 || v.length > JOB_LIMITS.idLength) {
    throw new ConfigError('id', `expected a non-empty string of at most ${JOB_LIMITS.idLength} characters, got ${describe(v)}`);
  }
}

function checkCheckpointing(v: unknown): void {
  const c = record('checkpoint', v, CHECKPOINT_KEYS);
  intIn('checkpoint.every', c.every, 1, Number.MAX_SAFE_INTEGER); // huge: only a phase's last step saves
  if (typeof c.save !== 'function') throw new ConfigError('checkpoint.save', `expected a function, got ${describe(c.save)}`);
  if (c.from !== undefined && !isObject(c.from)) throw new ConfigError('checkpoint.from', `expected a checkpoint object, got ${describe(c.from)}`);
}

/** validateConfig's verdict with the field under `model.` (ModelConfigError, a ConfigError). */
export function checkModel(v: unknown): ModelConfig {
  try {
    return validateConfig(v);
  } catch (e) {
    if (e instanceof ModelConfigError) throw new ModelConfigError(`model.${e.field}`, e.message.slice(e.field.length + 2));
    throw e;
  }
}

/** A LoRA for `cfg`: validateLora, the kernels' rank bound and rank ≤ min(in, out) of every target. */
function checkLora(cfg: ModelConfig, v: unknown) {
  const lora = validateLora(cfg, v);
  if (lora.rank > LORA_MAX_RANK) throw new ConfigError('lora.rank', `must be at most ${LORA_MAX_RANK} (the LoRA kernels' largest rank), got ${lora.rank}`);
  for (const t of lora.targets) {
    const [out, inp] = loraTargetDims(cfg, t);
    if (lora.rank > Math.min(out, inp)) {
      throw new ConfigError('lora.rank', `must be at most min(in, out) = ${Math.min(out, inp)} of target "${t}" ([${out}, ${inp}] in this model), got ${lora.rank}`);
    }
  }
  return lora;
}

/**
 * Every field of a resolved job, its ranges and combinations, unknown keys at every level (see
 * the header). Returns `o` as it is; throws ConfigError naming the field path.
 */
export function checkJobOptions(o: unknown): JobOptions {
  const j = record('', o, JOB_KEYS);
  const algo = oneOf('algo', j.algo, ['grpo', 'ppo', 'rloo', 'reinforce', 'dpo', 'sft'] as const);
  const model = checkModel(j.model);
  if (j.pretrained !== undefined) checkPretrainedRef('pretrained', j.pretrained, PRETRAINED_KEYS);
  else if (model.vocabSize < BYTE_VOCAB_SIZE) {
    throw new ConfigError('model.vocabSize', `the job's byte tokenizer has ${BYTE_VOCAB_SIZE} tokens, more than the model's ${model.vocabSize}`);
  }
  if (j.weights !== undefined) {
    if (j.pretrained !== undefined) throw new ConfigError('weights', 'a pretrained model brings its own weights: leave weights out');
    if (!isObject(j.weights)) throw new ConfigError('weights', `expected the model's tensors by name (Float32Arrays), got ${describe(j.weights)}`);
    try {
      checkHostParams(model, j.weights as Record<string, Float32Array>, 'weights');
    } catch (e) {
      if (e instanceof WeightsError) throw new ConfigError('weights', e.message);
      throw e;
    }
  }
  const env = record('env', j.env, ENV_KEYS);
  if (typeof env.name !== 'string' || env.name === '') throw new ConfigError('env.name', `expected a non-empty string, got ${describe(env.name)}`);
  oneOf('env.kind', env.kind, ['single', 'game'] as const);
  if (!isObject(env.spec) || typeof env.spec.create !== 'function') throw new ConfigError('env.spec', 'expected an environment spec with a create() function');
  intIn('env.maxTurns', env.maxTurns, 1, JOB_LIMITS.maxTurns);
  intIn('env.maxNewTokens', env.maxNewTokens, 1, JOB_LIMITS.steps);
  if (env.format !== undefined && !isObject(env.format)) throw new ConfigError('env.format', `expected a PromptFormat object, got ${describe(env.format)}`);
  if (env.context !== undefined) intIn('env.context', env.context, 1, Number.MAX_SAFE_INTEGER); // a hint to jobOptions, which raises the model to it
  intIn('maxNewTokens', j.maxNewTokens, 1, model.maxSeqLen - 1);
  if (j.lora !== null) checkLora(model, j.lora);
  intIn('steps', j.steps, 0, JOB_LIMITS.steps);
  intIn('seed', j.seed, 0, 0xffffffff);
  const groups = intIn('groups', j.groups, 1, JOB_LIMITS.groups);
  const groupSize = intIn('groupSize', j.groupSize, algo === 'sft' ? 1 : JOB_ALGORITHMS[algo].minGroupSize, JOB_LIMITS.groupSize);
  if (groups * groupSize > JOB_LIMITS.episodesPerStep) {
    throw new ConfigError('groups', `groups × groupSize = ${groups} × ${groupSize} episodes per step is over ${JOB_LIMITS.episodesPerStep}`);
  }
  positive('lr', j.lr);
  if (j.warmStart !== null) {
    const w = record('warmStart', j.warmStart, WARM_KEYS);
    intIn('warmStart.steps', w.steps, 1, JOB_LIMITS.steps);
    intIn('warmStart.demos', w.demos, 1, JOB_LIMITS.demos);
    intIn('warmStart.batchSize', w.batchSize, 1, JOB_LIMITS.batchSize);
    positive('warmStart.lr', w.lr);
    if (w.schedule !== undefined) oneOf('warmStart.schedule', w.schedule, LR_SCHEDULES);
  }
  intIn('evalEpisodes', j.evalEpisodes, 0, JOB_LIMITS.evalEpisodes);
  positive('temperature', j.temperature);
  const rows = intIn('rows', j.rows, 1, JOB_LIMITS.rows);
  if (algo === 'dpo' && rows + (rows % 2) > JOB_LIMITS.rows) throw new ConfigError('rows', `dpo pairs need an even row count ≤ ${JOB_LIMITS.rows}`);
  if (algo === 'dpo' && j.pretrained !== undefined && j.lora === null && j.warmStart !== null) {
    // The reference would be the warm-started weights: a second full copy of a pretrained model.
    throw new ConfigError('warmStart', 'online DPO of a full-parameter pretrained model takes no warm start (its reference would be a second full copy of the weights): use LoRA, or warmStart: null');
  }
  positive('maxGradNorm', j.maxGradNorm);
  if (j.stepTimeoutMs !== undefined) intIn('stepTimeoutMs', j.stepTimeoutMs, 1, JOB_LIMITS.stepTimeoutMs);
  fn('onStep', j.onStep);
  fn('onPhase', j.onPhase);
  fn('onWarning', j.onWarning);
  if (j.id !== undefined) checkId(j.id);
  if (j.checkpoint !== undefined) checkCheckpointing(j.checkpoint);
  return o as JobOptions;
}
