/** `--resume`: the flags it allows, run.json, metrics.jsonl cut back to the last checkpoint, checkpoint files. */
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTrainArgs } from '../../src/cli/args.ts';
import { metricsBefore, prepareRunFolder, resumedOptions, RUN_FILE } from '../../src/cli/resume.ts';
import { ConfigError } from '../../src/errors.ts';
import { type JobCheckpoint, JobCheckpointer, type StoredJobState } from '../../src/runtime/job_checkpoint.ts';
import { CheckpointStore } from '../../src/runtime/store/checkpoint_store.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';

const base = { w: Float32Array.of(3, 4, 5) };
const line = (phase: 'sft' | 'rl', step: number) => JSON.stringify({ phase, step, loss: 1 });

function checkpoint(phase: 'sft' | 'rl', step: number, lossCurve: number[]): JobCheckpoint {
  return {
    phase, step, sftLossCurve: [2, 1], rewardCurve: lossCurve.map(() => 0.5), lossCurve, before: { success: 0.25, meanReward: 0.5 },
    baseline: { value: 0.1, count: 2 }, trainTokens: 10, trainSeconds: 1.5, sampledTokens: 4, sampleSeconds: 0.5, wallSeconds: 3, peakGpuBytes: 1024,
    trainer: { trainable: 'lora', step: 2, skipped: 1, params: { a: Float32Array.of(1, 2) }, m: { a: Float32Array.of(0.1, 0.2) }, v: { a: Float32Array.of(0.01, 0.02) } },
    base,
  };
}

describe('train CLI --resume', () => {
  it('takes --steps, --json, --quiet and --checkpoint-every with --resume, and nothing else', () => {
    const o = parseTrainArgs(['--resume', 'runs/x', '--steps', '9', '--json', 'a.json', '-q', '--checkpoint-every', '3']);
    expect(o).toMatchObject({ resume: 'runs/x', steps: 9, json: 'a.json', quiet: true, checkpointEvery: 3 });
    expect(() => parseTrainArgs(['--resume', 'runs/x'])).toThrow(/--resume: needs --steps/);
    expect(() => parseTrainArgs(['--resume', 'runs/x', '--steps', '3', '--lr', '1'])).toThrow(/--resume:.*got --lr/);
    expect(() => parseTrainArgs(['--checkpoint-every', '0'])).toThrow(/--checkpoint-every: must be at least 1/);
    expect(parseTrainArgs([]).checkpointEvery).toBeUndefined();
  });

  it('keeps the metrics lines a checkpoint covers', () => {
    const jsonl = [line('sft', 0), line('sft', 1), line('rl', 0), line('rl', 1), line('rl', 2)].join('\n') + '\n';
    expect(metricsBefore(jsonl, { phase: 'rl', step: 2 })).toBe([line('sft', 0), line('sft', 1), line('rl', 0), line('rl', 1)].join('\n') + '\n');
    expect(metricsBefore(jsonl, { phase: 'rl', step: 0 })).toBe([line('sft', 0), line('sft', 1)].join('\n') + '\n');
    expect(metricsBefore(jsonl, { phase: 'sft', step: 1 })).toBe(`${line('sft', 0)}\n`);
    expect(metricsBefore('', { phase: 'sft', step: 1 })).toBe('');
  });

  it('a fresh run writes run.json; a resume reads it back, loads the last checkpoint bitwise and cuts metrics.jsonl', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webtinker-cli-'));
    const opts = parseTrainArgs(['--env', 'nim', '--seed', '4', '--lr', '0.5', '--steps', '3', '--out', dir, '--checkpoint-every', '2']);
    const fresh = await prepareRunFolder(dir, opts);
    expect(fresh.from).toBeUndefined();
    const ck = checkpoint('rl', 1, [NaN]);
    await fresh.checkpoints.save(checkpoint('rl', 0, []));
    await fresh.checkpoints.save(ck);
    await writeFile(join(dir, 'metrics.jsonl'), [line('sft', 0), line('sft', 1), line('rl', 0), line('rl', 1)].join('\n') + '\n');

    const resumed = await resumedOptions(parseTrainArgs(['--resume', dir, '--steps', '7', '--json', 'x.json']));
    expect(resumed).toMatchObject({ env: 'nim', seed: 4, lr: 0.5, steps: 7, json: 'x.json', out: dir, resume: dir, checkpointEvery: 2, quiet: false });
    const again = await prepareRunFolder(dir, resumed);
    expect(again.from).toBeDefined();
    const from = again.from!;
    expect(from.lossCurve.length).toBe(1);
    expect(Number.isNaN(from.lossCurve[0])).toBe(true); // a NaN loss survives the JSON files
    expect({ ...from, lossCurve: [] }).toEqual({ ...ck, lossCurve: [] });
    expect(await readFile(join(dir, 'metrics.jsonl'), 'utf8')).toBe([line('sft', 0), line('sft', 1), line('rl', 0)].join('\n') + '\n');
    // The base was stored once; a later save after the resume does not store it again.
    await again.checkpoints.save({ ...checkpoint('rl', 2, [NaN, 1]), base: from.base });
    expect((await again.checkpoints.store.versions('run.base')).length).toBe(1);
    expect((await again.checkpoints.store.versions('run')).map((v) => v.step)).toEqual([1, 2]);

    // One layout: the records under <dir>/checkpoints/ (no checkpoints/checkpoints/).
    expect((await readdir(join(dir, 'checkpoints'))).sort()).toEqual(['run', 'run.base']);

    // A fresh run in the same folder is refused (another run's files are there) unless --overwrite,
    // which removes the old run's outputs first: no stale model.safetensors beside a new adapter.
    await expect(prepareRunFolder(dir, opts)).rejects.toThrow(/holds another run \(its run.json\).*--overwrite/);
    await writeFile(join(dir, 'model.safetensors'), 'old');
    await mkdir(join(dir, 'peft'));
    const over = await prepareRunFolder(dir, { ...opts, overwrite: true });
    expect(over.from).toBeUndefined();
    expect(await over.checkpoints.latest()).toBeUndefined();
    expect((await readdir(dir)).sort()).toEqual(['metrics.jsonl', RUN_FILE]);
  });

  it('still resumes a run folder of the old layout (checkpoints/checkpoints/)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webtinker-cli-'));
    const opts = parseTrainArgs(['--steps', '3', '--out', dir]);
    const old = new JobCheckpointer(new CheckpointStore<StoredJobState>(new FileKv(join(dir, 'checkpoints')), { keepLast: 2 }));
    await old.save(checkpoint('rl', 1, [0.5]));
    const again = await prepareRunFolder(dir, { ...opts, resume: dir });
    expect(again.from?.step).toBe(1);
  });

  it('refuses a folder that is not a run, or has no checkpoint', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webtinker-cli-'));
    await expect(resumedOptions(parseTrainArgs(['--resume', dir, '--steps', '2']))).rejects.toThrow(new RegExp(`${RUN_FILE} cannot be read`));
    const opts = parseTrainArgs(['--out', dir]);
    await prepareRunFolder(dir, opts);
    const resumed = await resumedOptions(parseTrainArgs(['--resume', dir, '--steps', '2']));
    await expect(prepareRunFolder(dir, resumed)).rejects.toThrow(ConfigError);
    await expect(prepareRunFolder(dir, resumed)).rejects.toThrow(/no checkpoint to resume from/);
  });
});
