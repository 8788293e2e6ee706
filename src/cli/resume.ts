/**
 * The run folder's memory for `--resume`: run.json (the settings a run was started with), the
 * checkpoints (checkpoints/, a file CheckpointStore through job_checkpoint.ts), and metrics.jsonl
 * cut back to the steps the last checkpoint covers, so the resumed run appends exactly the lines
 * an uninterrupted run would have written after them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';
import { type JobCheckpoint, JobCheckpointer, type StoredJobState } from '../runtime/job_checkpoint.ts';
import { CheckpointStore } from '../runtime/store/checkpoint_store.ts';
import { FileKv } from '../runtime/store/fs_kv.ts';
import type { TrainOptions } from './args.ts';

export const RUN_FILE = 'run.json';
export const RUN_FORMAT = 'webtinker-run/1';
const FORMAT = RUN_FORMAT;

/** What run.json keeps: the settings that define the run (not where its outputs go). */
export type RunSettings = Omit<TrainOptions, 'help' | 'json' | 'out' | 'quiet' | 'selfCheck' | 'resume'>;

export function settingsOf(o: TrainOptions): RunSettings {
  const { help: _h, json: _j, out: _o, quiet: _q, selfCheck: _s, resume: _r, ...settings } = o;
  return settings;
}

/** The options of `--resume DIR --steps N ...`: the run's saved settings, with this command's steps, outputs and checkpoint interval. */
export async function resumedOptions(cli: TrainOptions): Promise<TrainOptions> {
  const dir = cli.resume!;
  let saved: { format?: string; settings?: RunSettings };
  try {
    saved = JSON.parse(await readFile(join(dir, RUN_FILE), 'utf8'));
  } catch (e) {
    throw new ConfigError('--resume', `${join(dir, RUN_FILE)} cannot be read (${(e as Error).message}): is ${dir} a run folder written by \`npm run train -- --out ${dir}\`?`);
  }
  if (saved.format !== FORMAT || !saved.settings) throw new ConfigError('--resume', `${join(dir, RUN_FILE)} is not a ${FORMAT} file`);
  const checkpointEvery = cli.checkpointEvery ?? saved.settings.checkpointEvery;
  return {
    ...saved.settings,
    steps: cli.steps,
    help: false,
    selfCheck: false,
    quiet: cli.quiet,
    out: dir,
    resume: dir,
    ...(cli.json !== undefined ? { json: cli.json } : {}),
    ...(checkpointEvery !== undefined ? { checkpointEvery } : {}),
  };
}

import { metricsBefore } from './report.ts';

export { metricsBefore };

/**
 * Opens the run folder's checkpoints. A fresh run writes run.json, empties metrics.jsonl and drops
 * old checkpoints; a resumed one loads its last checkpoint (a ConfigError when there is none) and
 * cuts metrics.jsonl back to it.
 */
export async function prepareRunFolder(dir: string, o: TrainOptions): Promise<{ checkpoints: JobCheckpointer; from?: JobCheckpoint }> {
  const checkpoints = new JobCheckpointer(new CheckpointStore<StoredJobState>(new FileKv(join(dir, 'checkpoints')), { keepLast: 2 }));
  const metrics = join(dir, 'metrics.jsonl');
  if (!o.resume) {
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
