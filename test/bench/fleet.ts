/**
 * The `fleet` part (issue 21): the fleet on one machine — nats-server on loopback, worker
 * processes (`npm run fleet -- worker`), tiny-gpt2 jobs. Figures:
 *
 *   - failover: from a worker's SIGKILL (after its first checkpoint) to the job started again on
 *     another worker, and to its first step there (target: ack wait + 2 s);
 *   - steps lost: steps the killed worker had finished past the checkpoint the job resumed from
 *     (target: at most one checkpoint interval);
 *   - checkpoint upload and download through the NATS KvStore (KV entries + Object Store), MB/s
 *     of a CheckpointStore save and load of `blobMiB` MiB of f32 tensors, median of 3;
 *   - queue overhead per job: the wall time of N jobs on one worker, divided by N, less the
 *     runs' own wall time (runTraining's wallSeconds) — what the queue, device acquisition and the
 *     checkpoint and result uploads add to each job;
 *   - throughput of 1 and of 2 worker processes on N tiny jobs (jobs per minute; this machine
 *     has 2 cores, shared: two workers share them with nats-server and each other).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { submitJob } from '../../src/fleet/cli.ts';
import { connectFleet, openStore } from '../../src/fleet/connect.ts';
import type { FleetEvent } from '../../src/fleet/events.ts';
import { ensureFleet, EVENTS_STREAM, makeJob, trainOptionsOf } from '../../src/fleet/jobs.ts';
import { CheckpointStore } from '../../src/runtime/store/checkpoint_store.ts';
import { Rng } from '../../src/util/rng.ts';
import { startNatsServer } from '../shared/nats_server.ts';
import { fmtNum } from './harness.ts';
import { markdownTable } from './markdown.ts';

export interface FleetBenchSettings {
  readonly jobs: number;
  readonly warmstartSteps: number;
  readonly steps: number;
  readonly checkpointEvery: number;
  readonly ackWaitS: number;
  readonly blobMiB: number;
}

export const FLEET_RUN: FleetBenchSettings = { jobs: 4, warmstartSteps: 16, steps: 2, checkpointEvery: 4, ackWaitS: 3, blobMiB: 16 };
export const FLEET_QUICK: FleetBenchSettings = { jobs: 2, warmstartSteps: 6, steps: 1, checkpointEvery: 2, ackWaitS: 2, blobMiB: 2 };

export interface FleetFigures {
  failover_started_s: number;
  failover_first_step_s: number;
  ack_wait_s: number;
  steps_lost: number;
  checkpoint_interval: number;
  checkpoint_mib: number;
  upload_mb_s: number;
  download_mb_s: number;
  queue_overhead_s: number;
  jobs_per_min_1_worker: number;
  jobs_per_min_2_workers: number;
}

export interface FleetReport {
  settings: FleetBenchSettings;
  figures: FleetFigures;
  targets: { failover: boolean; stepsLost: boolean };
}

const CLI = fileURLToPath(new URL('../../src/fleet/cli.ts', import.meta.url));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function runFleet(s: FleetBenchSettings, log: (s: string) => void): Promise<FleetReport> {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  const workers: { name: string; proc: ChildProcess; log: string }[] = [];
  const events: FleetEvent[] = [];
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const c = { nc, js, jsm };
    await ensureFleet(jsm, { ackWaitMs: s.ackWaitS * 1000, maxDeliver: 5 });
    const all = await (await js.consumers.get(EVENTS_STREAM, { filter_subjects: 'wt.events.>', deliver_policy: DeliverPolicy.All })).consume();
    void (async () => {
      for await (const m of all) events.push(m.json<FleetEvent>());
    })();
    const waitFor = async (what: string, pred: (e: FleetEvent) => boolean, limitMs = 600_000): Promise<FleetEvent> => {
      for (const until = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 20))) {
        const hit = events.find(pred);
        if (hit) return hit;
        if (Date.now() > until) throw new Error(`fleet bench: no ${what} within ${limitMs / 1000} s; workers said:\n${workers.map((w) => `${w.name}: ${w.log}`).join('\n')}`);
      }
    };
    const startWorker = async (name: string) => {
      const proc = spawn(Deno.execPath(), ['run', '--allow-read', '--allow-write', '--allow-env', '--allow-net', '--allow-sys', CLI, 'worker', '--nats', server.url, '--name', name, '--ack-wait', String(s.ackWaitS)], { stdio: ['ignore', 'ignore', 'pipe'] });
      const w = { name, proc, log: '' };
      proc.stderr!.on('data', (d) => (w.log += String(d)));
      workers.push(w);
      for (const until = Date.now() + 120_000; !w.log.includes('pulling jobs'); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > until || proc.exitCode !== null) throw new Error(`fleet bench: worker ${name} did not start:\n${w.log}`);
      }
    };
    const job = (id: string, seed: number, warmstartSteps = s.warmstartSteps) =>
      makeJob(trainOptionsOf({ model: 'tiny-gpt2', steps: s.steps, warmstartSteps, groups: 2, groupSize: 2, evalEpisodes: 0, seed, checkpointEvery: s.checkpointEvery }), { id });

    // Checkpoint bytes through the store.
    const store = new CheckpointStore(await openStore(nc), { keepLast: 1 });
    const per = (s.blobMiB * 2 ** 20) / 4 / 8;
    const tensors = Array.from({ length: 8 }, (_, i) => ({ name: `t${i}`, shape: [per], dtype: 'f32' as const, data: new Rng(i).normalArray(per) }));
    const up: number[] = [], down: number[] = [];
    for (let i = 0; i < 3; i++) {
      let t0 = performance.now();
      await store.save('bench', tensors, { step: i, state: {} });
      up.push(performance.now() - t0);
      t0 = performance.now();
      await store.load('bench');
      down.push(performance.now() - t0);
    }
    const mb = (s.blobMiB * 2 ** 20) / 1e6;
    log(`checkpoint of ${s.blobMiB} MiB: save ${fmtNum(median(up))} ms, load ${fmtNum(median(down))} ms`);

    // N jobs on one worker, then N others on two.
    const batch = async (tag: string, seed0: number) => {
      const t0 = Date.now();
      const ids = Array.from({ length: s.jobs }, (_, i) => `${tag}-${i}`);
      for (const [i, id] of ids.entries()) await submitJob(c, job(id, seed0 + i));
      const done = await Promise.all(ids.map((id) => waitFor(`${id} done`, (e) => e.job === id && e.type === 'done')));
      const seconds = (Date.now() - t0) / 1000;
      const runSeconds = done.map((e) => (e.type === 'done' ? e.summary.wallSeconds : 0));
      return { seconds, runSeconds };
    };
    await startWorker('w1');
    const one = await batch('one', 100);
    log(`${s.jobs} jobs on 1 worker: ${one.seconds.toFixed(1)} s (runs ${one.runSeconds.map((x) => x.toFixed(1)).join(', ')} s)`);
    await startWorker('w2');
    const two = await batch('two', 200);
    log(`${s.jobs} jobs on 2 workers: ${two.seconds.toFixed(1)} s`);

    // Failover: SIGKILL the worker running a job after its first checkpoint.
    await submitJob(c, job('failover', 300, 4 * s.checkpointEvery));
    const ck = await waitFor('failover: first checkpoint', (e) => e.job === 'failover' && e.type === 'checkpoint');
    const victim = workers.find((w) => ck.type === 'checkpoint' && w.name === ck.host)!;
    const held = ck.type === 'checkpoint' ? ck.epoch : 0;
    const lastStep = () => Math.max(-1, ...events.filter((e) => e.job === 'failover' && e.type === 'step' && e.host === victim.name).map((e) => (e.type === 'step' ? JSON.parse(e.line).step as number : -1)));
    const tKill = Date.now();
    process.kill(victim.proc.pid!, 'SIGKILL');
    const done = lastStep() + 1;
    const again = await waitFor('failover: restart', (e) => e.job === 'failover' && e.type === 'started' && e.epoch > held);
    const first = await waitFor('failover: first step after it', (e) => e.job === 'failover' && e.type === 'step' && e.epoch > held);
    await waitFor('failover done', (e) => e.job === 'failover' && e.type === 'done');
    const from = again.type === 'started' ? again.from : null;
    const figures: FleetFigures = {
      failover_started_s: (Date.parse(again.at) - tKill) / 1000,
      failover_first_step_s: (Date.parse(first.at) - tKill) / 1000,
      ack_wait_s: s.ackWaitS,
      steps_lost: from && from.phase === 'sft' ? Math.max(0, done - from.step) : done,
      checkpoint_interval: s.checkpointEvery,
      checkpoint_mib: s.blobMiB,
      upload_mb_s: mb / (median(up) / 1000),
      download_mb_s: mb / (median(down) / 1000),
      queue_overhead_s: one.seconds / s.jobs - one.runSeconds.reduce((a, b) => a + b, 0) / s.jobs,
      jobs_per_min_1_worker: (60 * s.jobs) / one.seconds,
      jobs_per_min_2_workers: (60 * s.jobs) / two.seconds,
    };
    log(`failover: started again ${figures.failover_started_s.toFixed(2)} s after the SIGKILL, first step ${figures.failover_first_step_s.toFixed(2)} s; ${figures.steps_lost} steps lost`);
    return { settings: s, figures, targets: { failover: figures.failover_started_s <= s.ackWaitS + 2, stepsLost: figures.steps_lost <= s.checkpointEvery } };
  } finally {
    for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGKILL');
    await Promise.all(workers.map((w) => (w.proc.exitCode !== null || w.proc.signalCode !== null ? undefined : new Promise((r) => w.proc.once('exit', r)))));
    await nc.close();
    await server.stop();
  }
}

export function fleetMarkdown(rep: FleetReport, measured: string, quick: boolean): string {
  const f = rep.figures;
  const s = rep.settings;
  const yes = (ok: boolean) => (ok ? 'yes' : '**no**');
  return [
    '## Fleet',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): fewer, shorter jobs — a smoke test, not a measurement.' : '',
    '',
    `nats-server on loopback, worker processes of \`npm run fleet -- worker\` (ack wait ${s.ackWaitS} s), tiny-gpt2 jobs of ${s.warmstartSteps} SFT and ${s.steps} LoRA GRPO steps checkpointed every ${s.checkpointEvery} steps, ${s.jobs} per throughput batch. On this machine's 2 shared cores the workers also share the CPU with nats-server and each other.`,
    '',
    markdownTable(['figure', 'value', 'issue 21 target', 'met'], [
      ['failover: SIGKILL → started on another worker', `${f.failover_started_s.toFixed(2)} s`, `≤ ack wait + 2 s = ${s.ackWaitS + 2} s`, yes(rep.targets.failover)],
      ['failover: SIGKILL → first step there', `${f.failover_first_step_s.toFixed(2)} s`, '', ''],
      ['steps lost per failure', String(f.steps_lost), `≤ checkpoint interval = ${s.checkpointEvery}`, yes(rep.targets.stepsLost)],
      [`checkpoint upload (${f.checkpoint_mib} MiB of f32)`, `${f.upload_mb_s.toFixed(1)} MB/s`, '', ''],
      [`checkpoint download (${f.checkpoint_mib} MiB of f32)`, `${f.download_mb_s.toFixed(1)} MB/s`, '', ''],
      ['queue overhead per job (outside the run)', `${f.queue_overhead_s.toFixed(2)} s`, '', ''],
      ['throughput, 1 worker', `${f.jobs_per_min_1_worker.toFixed(2)} jobs/min`, '', ''],
      ['throughput, 2 workers', `${f.jobs_per_min_2_workers.toFixed(2)} jobs/min`, '', ''],
    ]),
    '',
    'The queue overhead includes acquiring the device and compiling the kernels for each job (a worker runs each job on a fresh device), and storing its checkpoints and result.',
    '',
  ].join('\n');
}
