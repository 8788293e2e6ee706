/**
 * Fleet jobs. A job is the plain, validated settings of `npm run train` (exactly what a run
 * folder's run.json holds) plus scheduler fields — kind, priority class, weight, estimated GPU
 * bytes — as one JSON message on the `WT_JOBS` work-queue stream (streams.ts, re-exported here),
 * published with the job id as its `Nats-Msg-Id`, so a resubmission inside the stream's duplicate
 * window is dropped by the server.
 *
 * Settings are validated by turning them back into `npm run train` flags and parsing those
 * (parseTrainArgs), so a fleet job is refused for exactly the reasons a local run would be, with a
 * ConfigError naming the flag — at submit, and again by the worker (a message may come from any
 * client): a job that fails there can never succeed and is dead-lettered at once.
 */
import { ConfigError } from '../errors.ts';
import { estimateTrainingMemory } from '../model/memory.ts';
import type { PriorityClass } from '../runtime/scheduler.ts';
import { fnv1a } from '../runtime/store/records.ts';
import { isPreset, parseTrainArgs, type TrainOptions } from '../cli/args.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { loraTargetsByName } from '../model/peft.ts';
import { PRETRAINED_CONTEXT } from '../runtime/pretrained_job.ts';
import { TRAIN_DEFAULTS } from '../runtime/train.ts';
import { jobOptionsFrom } from '../cli/job_args.ts';
import { type RunSettings, settingsOf } from '../cli/run_settings.ts';

export * from './streams.ts';

const FORMAT = 'webtinker-fleet-job/1';
const PRIORITIES: readonly PriorityClass[] = ['interactive', 'normal', 'background'];
const ID = /^[A-Za-z0-9_-]{1,100}$/;

export type JobKind = 'lora_rl' | 'full_rl' | 'sft';

export interface FleetJob {
  readonly format: typeof FORMAT;
  readonly id: string;
  /** The run's settings, as run.json holds them. */
  readonly settings: RunSettings;
  /** Steps between checkpoints (each phase's last step always saves). */
  readonly checkpointEvery: number;
  readonly kind: JobKind;
  readonly priority: PriorityClass;
  readonly weight: number;
  /** Estimated GPU bytes of the job alone on a fresh device (estimateTrainingMemory's totalBytes). */
  readonly memoryBytes: number;
  /**
   * Policy versions an RL trajectory sampled by a rollout worker may lag the version trained on it
   * (fleet/rollouts.ts); 0 (absent: 0) waits for the current version's, bitwise the single-host run.
   */
  readonly rolloutStaleness?: number;
  readonly submittedAt: string;
}

const FLAG_OF: Record<string, string> = {
  env: 'env', algo: 'algo', steps: 'steps', seed: 'seed', model: 'model', revision: 'revision', loraRank: 'lora-rank', loraTargets: 'lora-targets',
  groups: 'groups', groupSize: 'group-size', lr: 'lr', warmstartSteps: 'warmstart-steps', evalEpisodes: 'eval-episodes', checkpointEvery: 'checkpoint-every',
};

/** `npm run train` flags that give these settings (a ConfigError naming an unknown or mistyped setting). */
export function settingsToArgs(settings: unknown): string[] {
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) throw new ConfigError('settings', 'expected an object of run settings');
  const args: string[] = [];
  const s = settings as Record<string, unknown>;
  // A full job's LoRA settings and a job without warm start's warm-start steps are the parsed
  // defaults, not choices: passing them back as flags would clash (the CLI refuses the pairs).
  const moot = new Set([...(s.full === true ? ['loraRank', 'loraTargets'] : []), ...(s.warmstart === false ? ['warmstartSteps'] : [])]);
  for (const [k, v] of Object.entries(settings)) {
    if (moot.has(k)) continue;
    if (k === 'full' || k === 'warmstart') {
      if (typeof v !== 'boolean') throw new ConfigError(`settings.${k}`, `expected a boolean, got ${JSON.stringify(v)}`);
      if (k === 'full' && v) args.push('--full');
      if (k === 'warmstart' && !v) args.push('--no-warmstart');
      continue;
    }
    const flag = FLAG_OF[k];
    if (!flag) throw new ConfigError(`settings.${k}`, `unknown setting (known: ${[...Object.keys(FLAG_OF), 'full', 'warmstart'].join(', ')})`);
    if (k === 'loraTargets') {
      if (!Array.isArray(v) || !v.every((t) => typeof t === 'string')) throw new ConfigError('settings.loraTargets', 'expected an array of target names');
      args.push(`--${flag}`, v.join(','));
    } else {
      if (typeof v !== 'string' && typeof v !== 'number') throw new ConfigError(`settings.${k}`, `expected a string or a number, got ${JSON.stringify(v)}`);
      args.push(`--${flag}`, String(v));
    }
  }
  return args;
}

/** The settings parsed as `npm run train` would (a ConfigError naming the flag when one is wrong). */
export function trainOptionsOf(settings: unknown): TrainOptions {
  return parseTrainArgs(settingsToArgs(settings));
}

function kindOf(o: TrainOptions): JobKind {
  return o.algo === 'sft' ? 'sft' : o.full ? 'full_rl' : 'lora_rl';
}

/**
 * The job's estimated GPU bytes alone on a fresh device (its RL phase; the warm start trains the
 * same model). A pretrained --model needs its config (`pretrained`, from its config.json: the
 * submitter reads that file alone); its sequences are bounded by PRETRAINED_CONTEXT.
 */
export function estimateJobBytes(o: TrainOptions, pretrained?: ModelConfig): number {
  if (!isPreset(o.model)) {
    if (!pretrained) throw new ConfigError('model', `the memory estimate of "${o.model}" needs its config.json`);
    const lora: LoraConfig | undefined = o.full ? undefined : { rank: o.loraRank, alpha: 2 * o.loraRank, targets: loraTargetsByName(pretrained, o.loraTargets, '--lora-targets') };
    const seqLen = Math.min(pretrained.maxSeqLen, PRETRAINED_CONTEXT);
    return estimateTrainingMemory(pretrained, { batch: TRAIN_DEFAULTS.rows, seqLen, mode: lora ? 'lora' : 'full', ...(lora ? { lora } : {}) }).totalBytes;
  }
  const job = jobOptionsFrom(o);
  const lora = job.lora ?? undefined;
  return estimateTrainingMemory(job.model, { batch: job.rows, seqLen: job.model.maxSeqLen, mode: lora ? 'lora' : 'full', ...(lora ? { lora } : {}) }).totalBytes;
}

/** The default job id: readable, and the same for the same settings (so resubmitting them is dropped). */
export function defaultJobId(settings: RunSettings): string {
  const h = fnv1a(new TextEncoder().encode(JSON.stringify(settings))).toString(16).padStart(8, '0');
  return `${settings.env}-${settings.algo}-s${settings.seed}-${h}`;
}

export interface SchedulerFields {
  id?: string;
  priority?: PriorityClass;
  weight?: number;
  rolloutStaleness?: number;
}

/** The largest rolloutStaleness: policies further apart than this are not worth sampling with. */
export const MAX_ROLLOUT_STALENESS = 16;

/**
 * A validated job from parsed `npm run train` options and scheduler fields. A pretrained --model
 * comes with its config (`pretrained`); pin its commit in `o.revision` first, so every host trains
 * the same weights.
 */
export function makeJob(o: TrainOptions, s: SchedulerFields = {}, pretrained?: ModelConfig): FleetJob {
  const settings = settingsOf(o);
  const job: FleetJob = {
    format: FORMAT,
    id: s.id ?? defaultJobId(settings),
    settings,
    checkpointEvery: o.checkpointEvery ?? 25,
    kind: kindOf(o),
    priority: s.priority ?? 'normal',
    weight: s.weight ?? 1,
    memoryBytes: estimateJobBytes(o, pretrained),
    rolloutStaleness: s.rolloutStaleness ?? 0,
    submittedAt: new Date().toISOString(),
  };
  return validateJob(job).job;
}

/** Check a job message: its fields, and its settings as `npm run train` would. Throws ConfigError. */
export function validateJob(raw: unknown): { job: FleetJob; options: TrainOptions } {
  const j = raw as Partial<FleetJob> | null;
  if (typeof j !== 'object' || j === null) throw new ConfigError('job', 'expected a JSON object');
  if (j.format !== FORMAT) throw new ConfigError('job.format', `expected "${FORMAT}", got ${JSON.stringify(j.format)}`);
  if (typeof j.id !== 'string' || !ID.test(j.id)) throw new ConfigError('job.id', `expected 1–100 of A–Z a–z 0–9 _ -, got ${JSON.stringify(j.id)}`);
  if (!PRIORITIES.includes(j.priority as PriorityClass)) throw new ConfigError('job.priority', `expected one of ${PRIORITIES.join(', ')}, got ${JSON.stringify(j.priority)}`);
  if (typeof j.weight !== 'number' || !(j.weight > 0) || !Number.isFinite(j.weight)) throw new ConfigError('job.weight', `expected a positive number, got ${JSON.stringify(j.weight)}`);
  if (!Number.isSafeInteger(j.memoryBytes) || j.memoryBytes! < 0) throw new ConfigError('job.memoryBytes', `expected a byte count, got ${JSON.stringify(j.memoryBytes)}`);
  if (!Number.isSafeInteger(j.checkpointEvery) || j.checkpointEvery! < 1) throw new ConfigError('job.checkpointEvery', `expected a positive integer, got ${JSON.stringify(j.checkpointEvery)}`);
  if (j.rolloutStaleness !== undefined && !(Number.isSafeInteger(j.rolloutStaleness) && j.rolloutStaleness >= 0 && j.rolloutStaleness <= MAX_ROLLOUT_STALENESS)) {
    throw new ConfigError('job.rolloutStaleness', `expected an integer from 0 to ${MAX_ROLLOUT_STALENESS} (policy versions a trajectory may lag), got ${JSON.stringify(j.rolloutStaleness)}`);
  }
  const options = trainOptionsOf(j.settings);
  if (j.kind !== kindOf(options)) throw new ConfigError('job.kind', `the settings make a ${kindOf(options)} job, the message says ${JSON.stringify(j.kind)}`);
  return { job: j as FleetJob, options: { ...options, checkpointEvery: j.checkpointEvery! } };
}
