// The fleet's pure parts: command lines, job messages and their validation, the fold of a job's
// events (redelivery and a fenced-out host's late events), and the NATS store's key encoding.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTrainArgs } from '../../src/cli/args.ts';
import { settingsOf } from '../../src/cli/resume.ts';
import { ConfigError } from '../../src/errors.ts';
import { fleetHelp, parseFleetArgs, queueOf } from '../../src/fleet/cli_args.ts';
import { type FleetEvent, foldEvents } from '../../src/fleet/events.ts';
import { defaultJobId, makeJob, settingsToArgs, trainOptionsOf, validateJob } from '../../src/fleet/jobs.ts';
import { decodeKey, encodeKey } from '../../src/fleet/nats_kv.ts';

const URL = ['--nats', 'nats://127.0.0.1:4222'];
const field = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).field;
  }
  throw new Error('expected a ConfigError');
};

describe('fleet command lines', () => {
  it('splits submit\'s own flags from the run\'s and parses the run as npm run train does', () => {
    const a = parseFleetArgs(['submit', ...URL, '--model', 'tiny-gpt2', '--id', 'j1', '--steps', '3', '--priority', 'background', '--weight=2', '--full']);
    expect(a.values).toMatchObject({ id: 'j1', priority: 'background', weight: '2' });
    expect(a.train).toEqual(parseTrainArgs(['--model', 'tiny-gpt2', '--steps', '3', '--full']));
  });
  it('refuses what cannot be a fleet command, naming the flag', () => {
    expect(field(() => parseFleetArgs(['train', ...URL]))).toBe('command');
    expect(field(() => parseFleetArgs(['status']))).toBe('--nats');
    expect(field(() => parseFleetArgs(['status', '--nats', 'localhost:4222']))).toBe('--nats');
    expect(field(() => parseFleetArgs(['submit', ...URL, '--out', 'runs/x']))).toBe('--out');
    expect(field(() => parseFleetArgs(['submit', ...URL, '--resume', 'runs/x']))).toBe('--resume');
    expect(field(() => parseFleetArgs(['submit', ...URL, '--stepz', '3']))).toBe('--stepz');
    expect(field(() => parseFleetArgs(['submit', ...URL, '--priority', 'urgent']))).toBe('--priority');
    expect(field(() => parseFleetArgs(['worker', ...URL, '--slots', '0']))).toBe('--slots');
    expect(field(() => parseFleetArgs(['worker', ...URL, 'extra']))).toBe('arguments');
    expect(field(() => parseFleetArgs(['watch', ...URL]))).toBe('JOB');
    expect(field(() => parseFleetArgs(['watch', ...URL, 'a.b']))).toBe('JOB');
    expect(field(() => parseFleetArgs(['fetch', ...URL, 'j1']))).toBe('--out');
  });
  it('reads the worker\'s queue settings and documents every command', () => {
    expect(queueOf(parseFleetArgs(['worker', ...URL, '--ack-wait', '2.5', '--max-deliver', '4']))).toEqual({ ackWaitMs: 2500, maxDeliver: 4 });
    expect(parseFleetArgs(['watch', '--help']).help).toBe(true);
    for (const c of ['worker', 'submit', 'status', 'watch', 'cancel', 'fetch']) expect(fleetHelp()).toContain(`${c} --nats URL`);
    expect(fleetHelp('submit')).toContain('--lora-rank R');
    expect(fleetHelp('submit')).not.toContain('--out DIR');
  });
});

describe('fleet jobs', () => {
  const o = parseTrainArgs(['--model', 'tiny-gpt2', '--steps', '2', '--seed', '5', '--checkpoint-every', '4']);
  it('turn settings back into the flags that give them', () => {
    expect(trainOptionsOf(settingsOf(o))).toEqual({ ...o, json: undefined, out: undefined });
    const full = parseTrainArgs(['--full', '--no-warmstart']);
    expect(trainOptionsOf(settingsOf(full))).toMatchObject({ full: true, warmstart: false });
    const targets = parseTrainArgs(['--lora-targets', 'q,v', '--lora-rank', '4']);
    expect(trainOptionsOf(settingsOf(targets))).toMatchObject({ loraTargets: ['q', 'v'], loraRank: 4 });
  });
  it('make a validated job with scheduler fields and a default id that follows the settings', () => {
    const j = makeJob(o, { priority: 'interactive' });
    expect(j).toMatchObject({ kind: 'lora_rl', priority: 'interactive', weight: 1, checkpointEvery: 4 });
    expect(j.memoryBytes).toBeGreaterThan(0);
    expect(j.id).toBe(defaultJobId(settingsOf(o)));
    expect(j.id).toMatch(/^calculator-grpo-s5-[0-9a-f]{8}$/);
    expect(makeJob(parseTrainArgs(['--model', 'tiny-gpt2', '--steps', '2', '--seed', '6'])).id).not.toBe(j.id);
    expect(validateJob(JSON.parse(JSON.stringify(j))).options).toMatchObject({ model: 'tiny-gpt2', steps: 2, seed: 5, checkpointEvery: 4 });
  });
  it('refuse a bad message, naming the field', () => {
    const j = makeJob(o);
    expect(field(() => validateJob({ ...j, format: 'x' }))).toBe('job.format');
    expect(field(() => validateJob({ ...j, id: 'a.b' }))).toBe('job.id');
    expect(field(() => validateJob({ ...j, priority: 'now' }))).toBe('job.priority');
    expect(field(() => validateJob({ ...j, kind: 'sft' }))).toBe('job.kind');
    expect(field(() => validateJob({ ...j, settings: { ...j.settings, model: 'gpt2-nope' } }))).toBe('--model');
    expect(field(() => validateJob({ ...j, settings: { ...j.settings, steps: -1 } }))).toBe('--steps');
    expect(field(() => validateJob({ ...j, settings: { ...j.settings, colour: 'red' } }))).toBe('settings.colour');
    expect(field(() => settingsToArgs({ full: 'yes' }))).toBe('settings.full');
  });
});

describe('a job\'s events, folded', () => {
  const at = '2026-01-01T00:00:00Z';
  const line = (phase: string, step: number) => JSON.stringify({ phase, step, loss: step });
  const ev = (b: Record<string, unknown>) => ({ job: 'j', at, ...b }) as unknown as FleetEvent;
  it('cut a resumed run back to its checkpoint and ignore a fenced-out host\'s late events', () => {
    const events = [
      ev({ type: 'submitted', spec: makeJob(parseTrainArgs([])), seq: 1 }),
      ev({ type: 'started', host: 'A', epoch: 1, from: null }),
      ...[0, 1, 2, 3, 4, 5].map((s) => ev({ type: 'step', host: 'A', epoch: 1, line: line('sft', s) })),
      ev({ type: 'started', host: 'B', epoch: 2, from: { phase: 'sft', step: 4 } }),
      ev({ type: 'step', host: 'A', epoch: 1, line: line('sft', 6) }),
      ev({ type: 'abandoned', host: 'A', epoch: 1, reason: 'fenced' }),
      ...[4, 5, 6].map((s) => ev({ type: 'step', host: 'B', epoch: 2, line: line('sft', s) })),
      ev({ type: 'step', host: 'B', epoch: 2, line: line('rl', 0) }),
    ];
    const f = foldEvents(events);
    expect(f).toMatchObject({ state: 'running', host: 'B', epoch: 2, starts: 2, last: { phase: 'rl', step: 0 } });
    expect(f.metrics.trim().split('\n').map((l) => JSON.parse(l).step)).toEqual([0, 1, 2, 3, 4, 5, 6, 0]);
    expect(foldEvents([...events, ev({ type: 'done', host: 'B', epoch: 2, summary: {}, adapterVersion: 1 })]).state).toBe('done');
    expect(foldEvents([...events, ev({ type: 'dead', epoch: 3, reason: 'r' })])).toMatchObject({ state: 'dead', reason: 'r' });
    expect(foldEvents([ev({ type: 'submitted', spec: {}, seq: 1 }), ev({ type: 'cancel' })]).state).toBe('cancelling');
  });
});

describe('NATS store keys', () => {
  it('map every key to valid subject tokens and back', () => {
    fc.assert(fc.property(fc.array(fc.string({ unit: fc.oneof(fc.constantFrom('.', '/', '=', 'u', 'a', '-'), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))) }), { minLength: 1, maxLength: 5 }), (segs) => {
      const key = segs.join('/');
      const k = encodeKey(key);
      expect(k).toMatch(/^[A-Za-z0-9_=-]+(\.[A-Za-z0-9_=-]+)*$/);
      expect(decodeKey(k)).toBe(key);
    }), { numRuns: 300 });
    expect(decodeKey(encodeKey('a\uD800/é.b'))).toBe('a\uD800/é.b');
    fc.assert(fc.property(fc.string(), (key) => {
      expect(decodeKey(encodeKey(key))).toBe(key);
    }));
  });
});
