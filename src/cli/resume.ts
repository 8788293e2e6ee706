/**
 * The run folder's memory for `--resume`: run.json (the settings a run was started with), the
 * checkpoints (checkpoints/, a file CheckpointStore through job_checkpoint.ts), and metrics.jsonl
 * cut back to the steps the last checkpoint covers, so the resumed run appends exactly the lines
 * an uninterrupted run would have written after them.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';
import { type JobCheckpoint, JobCheckpointer, type StoredJobState } from '../runtime/job_checkpoint.ts';
import { CheckpointStore } from '../runtime/store/checkpoint_store.ts';
import { FileKv } from '../runtime/store/fs_kv.ts';
import { isPreset, type TrainOptions } from './args.ts';
import { jobOptionsFrom } from './job_args.ts';

export const RUN_FILE = 'run.json';
export const RUN_FORMAT = 'webtinker-run/1';
const FORMAT = RUN_FORMAT;

// The run's settings live in run_settings.ts (browser-safe, for the fleet page); re-exported here.
import { type RunSettings, settingsOf } from './run_settings.ts';
export { type RunSettings, settingsOf };

/** The options of `--resume DIR --steps N ...`: the run's saved settings, with this command's steps, outputs and checkpoint interval. */
export async function resumedOptions(cli: TrainOptions): Promise<TrainOptions> {
  const dir = cli.resume!;
  let saved: { format?: string; settings?: RunSettings };
  try {
    saved = JSON.parse(await readFile(join(dir, RUN_FILE), 'utf8'));
  } catch (e) {
    throw new ConfigError('--resume', `${join(dir, RUN_FILE)} cannot be read (${(e as Error).message}): is ${dir} a run folder written by \`npm run train -- --out ${dir}\`?`);
  }
  if (typeof saved !== 'object' || saved === null || saved.format !== FORMAT || !saved.settings) throw new ConfigError('--resume', `${join(dir, RUN_FILE)} is not a ${FORMAT} file`);
  const settings = checkRunSettings(join(dir, RUN_FILE), saved.settings);
  const checkpointEvery = cli.checkpointEvery ?? settings.checkpointEvery;
  const resumed: TrainOptions = {
    ...settings,
    steps: cli.steps,
    help: false,
    selfCheck: false,
    quiet: cli.quiet,
    out: dir,
    resume: dir,
    ...(cli.json !== undefined ? { json: cli.json } : {}),
    ...(checkpointEvery !== undefined ? { checkpointEvery } : {}),
  };
  // The settings as a job, checked as any job is (job_config.ts), before any work: a doctored
  // run.json (loraRank 100000, groups 1e9) is refused here, naming the file and the field.
  try {
    // A pretrained model's job needs its config.json: the entry point checks it once it has opened it.
    if (isPreset(resumed.model)) jobOptionsFrom(resumed);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`--resume`, `${join(dir, RUN_FILE)} holds a job that is not valid: ${e.message}`);
    throw e;
  }
  return resumed;
}

/** run.json's fields and the type of each (a key not listed is refused: it could choose where to write, like `json`). */
const RUN_FIELDS: Record<keyof RunSettings, 'string' | 'number' | 'boolean' | 'strings'> = {
  env: 'string', algo: 'string', steps: 'number', seed: 'number', model: 'string', revision: 'string', loraRank: 'number', loraTargets: 'strings', full: 'boolean',
  groups: 'number', groupSize: 'number', lr: 'number', warmstart: 'boolean', warmstartSteps: 'number', evalEpisodes: 'number', checkpointEvery: 'number',
};
/** Everything a run writes in its folder (removed by --overwrite). */
const RUN_OUTPUTS = [RUN_FILE, 'metrics.jsonl', 'summary.json', 'adapter.safetensors', 'model.safetensors', 'peft', 'base', 'curve.svg', 'checkpoints'];

/** Fields a fresh run leaves out when the default applies. */
const OPTIONAL_RUN_FIELDS = ['checkpointEvery', 'revision', 'lr', 'warmstartSteps'];

/** run.json's settings: only the keys a fresh run writes, each of its type (ranges: the job's check). */
function checkRunSettings(file: string, x: unknown): RunSettings {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new ConfigError('--resume', `${file}: settings must be an object`);
  const o = x as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!Object.hasOwn(RUN_FIELDS, k)) throw new ConfigError('--resume', `${file}: settings.${k} is not a run setting (known: ${Object.keys(RUN_FIELDS).join(', ')})`);
  }
  for (const [k, type] of Object.entries(RUN_FIELDS)) {
    const v = o[k];
    if (v === undefined && OPTIONAL_RUN_FIELDS.includes(k)) continue;
    const ok = type === 'strings' ? Array.isArray(v) && v.every((t) => typeof t === 'string') : typeof v === type;
    if (!ok) throw new ConfigError('--resume', `${file}: settings.${k} must be ${type === 'strings' ? 'an array of strings' : `a ${type}`}, got ${JSON.stringify(v) ?? 'nothing'}`);
  }
  if (o.checkpointEvery !== undefined && (!Number.isInteger(o.checkpointEvery) || (o.checkpointEvery as number) < 1 || (o.checkpointEvery as number) > 1_000_000)) {
    throw new ConfigError('--resume', `${file}: settings.checkpointEvery must be an integer in [1, 1000000], got ${String(o.checkpointEvery)}`);
  }
  return o as unknown as RunSettings;
}

import { metricsBefore } from './report.ts';

export { metricsBefore };

/**
 * Opens the run folder's checkpoints. A fresh run writes run.json, empties metrics.jsonl and drops
 * old checkpoints; a resumed one loads its last checkpoint (a ConfigError when there is none) and
 * cuts metrics.jsonl back to it.
 */
export async function prepareRunFolder(dir: string, o: TrainOptions): Promise<{ checkpoints: JobCheckpointer; from?: JobCheckpoint }> {
  // Checkpoint records live under <dir>/checkpoints/ (runs before 2026-12-05 nested them one level deeper: still resumable).
  const legacy = await stat(join(dir, 'checkpoints', 'checkpoints')).then((s) => s.isDirectory(), () => false);
  const checkpoints = new JobCheckpointer(new CheckpointStore<StoredJobState>(new FileKv(legacy ? join(dir, 'checkpoints') : dir), { keepLast: 2 }));
  const metrics = join(dir, 'metrics.jsonl');
  if (!o.resume) {
    if (await stat(join(dir, RUN_FILE)).then(() => true, () => false)) {
      if (!o.overwrite) throw new ConfigError('--out', `${dir} holds another run (its ${RUN_FILE}); choose another --out, --resume it, or pass --overwrite to replace it`);
      // One layout: nothing of the old run stays beside the new one's files (a full run's model.safetensors beside a LoRA adapter).
      for (const f of RUN_OUTPUTS) await rm(join(dir, f), { recursive: true, force: true });
    }
    await checkpoints.clear();
    await writeFile(join(dir, RUN_FILE), JSON.stringify({ format: FORMAT, settings: settingsOf(o) }, null, 2) + '\n');
    await writeFile(metrics, '');
    return { checkpoints };
  }
  const from = await checkpoints.latest();
  if (!from) throw new ConfigError('--resume', `${dir} has no checkpoint to resume from`);
  const old = await readFile(metrics, 'utf8').catch(() => '');
  await writeFile(metrics, metricsBefore(old, from));
  return { checkpoints, from };
}
