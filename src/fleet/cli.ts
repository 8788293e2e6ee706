/**
 * `npm run fleet -- COMMAND` — the fleet's entry point, run by Deno (`deno task fleet`): `worker`
 * runs jobs on this host until SIGINT/SIGTERM (running jobs are handed back to resume elsewhere);
 * `submit` queues a job and prints its id; `status`, `watch` and `cancel` read and steer jobs
 * through their events; `fetch` writes a finished job's run folder as `npm run train` would.
 * Exit codes: 0 done, 1 a job that ended otherwise (watch) or a runtime error, 2 a bad command line.
 */
import { exitCodeOf } from '../cli/exit.ts';
import { hostname } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { WebtinkerError } from '../errors.ts';
import type { JobSummary, StepMetrics } from '../runtime/rl_job.ts';
import { decodeNonFinite } from '../runtime/job_checkpoint.ts';
import { progressBar } from '../cli/progress.ts';
import { summaryTable } from '../cli/report.ts';
import { RUN_FILE, RUN_FORMAT } from '../cli/resume.ts';
import { type FleetArgs, fleetHelp, parseFleetArgs, priorityOf, queueOf } from './cli_args.ts';
import { API_TIMEOUT_MS, connectFleet, openStore } from './connect.ts';
import { type FleetEvent, foldEvents, jobIds, lastEvent, replayEvents } from './events.ts';
import { cancelJob, type FleetCtx, jobHistory, submitJob } from './control.ts';
import { ensureFleet, type FleetJob, JOBS_CONSUMER, JOBS_STREAM, makeJob } from './jobs.ts';
import { isPreset } from '../cli/args.ts';
import { readRepoTexts } from '../hub/pretrained.ts';
import type { ModelConfig } from '../model/config.ts';
import { configFromHf } from '../model/hf_config.ts';
import { loadResult, writeRunFolder } from './results.ts';
import { FleetWorker } from './worker.ts';
import { RolloutWorker } from './rollout_worker.ts';
import { LeaseKeeper } from './lease.ts';

type Ctx = FleetCtx;

export { cancelJob, submitJob } from './control.ts';

const STATE_OF: Partial<Record<FleetEvent['type'], string>> = {
  submitted: 'queued', started: 'running', phase: 'running', step: 'running', checkpoint: 'running', done: 'done',
  failed: 'queued (retry)', abandoned: 'running', cancel: 'cancelling', cancelled: 'cancelled', dead: 'dead',
};

async function status(c: Ctx, a: FleetArgs): Promise<number> {
  if (a.job) {
    const f = foldEvents(await jobHistory(c, a.job));
    if (!f.job && f.starts === 0 && f.state === 'queued') throw new WebtinkerError('fleet-not-found', `job "${a.job}" has no events: never submitted to this server`);
    const lines = [
      `job       ${a.job}`,
      `state     ${f.state}${f.reason ? ` (${f.reason})` : ''}`,
      ...(f.host ? [`host      ${f.host} (delivery ${f.epoch}, ${f.starts} start${f.starts === 1 ? '' : 's'})`] : []),
      ...(f.last ? [`progress  ${f.last.phase} step ${f.last.step + 1}`] : []),
      ...(f.job ? [`settings  ${JSON.stringify(f.job.settings)}`, `scheduler ${f.job.kind}, ${f.job.priority}, weight ${f.job.weight}, ~${(f.job.memoryBytes / 2 ** 20).toFixed(1)} MiB, rollout staleness ${f.job.rolloutStaleness ?? 0}`] : []),
      ...(f.summary ? [`result    held-out success ${(100 * f.summary.successBefore).toFixed(1)}% → ${(100 * f.summary.successAfter).toFixed(1)}%, adapter version ${f.adapterVersion}`] : []),
    ];
    console.log(lines.join('\n'));
    return 0;
  }
  const q = await c.jsm.consumers.info(JOBS_STREAM, JOBS_CONSUMER);
  console.log(`queue: ${q.num_pending} waiting, ${q.num_ack_pending} running (ack wait ${(q.config.ack_wait ?? 0) / 1e9} s, max deliver ${q.config.max_deliver})`);
  for (const id of await jobIds(c.jsm)) {
    const e = await lastEvent(c.jsm, id);
    if (!e) continue;
    const host = 'host' in e && e.host ? ` on ${e.host}` : '';
    const step = e.type === 'step' ? ` ${(JSON.parse(e.line) as StepMetrics).phase} step ${(JSON.parse(e.line) as StepMetrics).step + 1}` : '';
    console.log(`${id.padEnd(40)} ${STATE_OF[e.type] ?? e.type}${host}${step}`);
  }
  return 0;
}

async function watch(c: Ctx, id: string): Promise<number> {
  if (!(await lastEvent(c.jsm, id))) throw new WebtinkerError('fleet-not-found', `job "${id}" has no events: never submitted to this server`);
  const progress = progressBar(process.stderr);
  let algo = '';
  let end: FleetEvent | null = null;
  await replayEvents(c.js, c.jsm, id, (e) => {
    switch (e.type) {
      case 'submitted':
        algo = e.spec.settings.algo;
        progress.note(`job ${id}: ${e.spec.settings.env}, ${algo}, ${e.spec.settings.model}, queued`);
        break;
      case 'started':
        progress.note(`started on ${e.host} (delivery ${e.epoch})${e.from ? `, resuming from ${e.from.phase} step ${e.from.step}` : ''}`);
        break;
      case 'phase':
        if (e.phase === 'warmstart') progress.phase('sft', e.steps ?? 0);
        else if (e.phase === 'rl') progress.phase(algo, e.steps ?? 0);
        else progress.note(e.phase === 'eval-before' ? 'evaluating (before RL)…' : 'evaluating…');
        break;
      case 'step':
        progress.step(decodeNonFinite(JSON.parse(e.line)) as StepMetrics);
        break;
      case 'failed':
      case 'abandoned':
        progress.note(`${e.type} on ${e.host} (delivery ${e.epoch}): ${e.reason}`);
        break;
      case 'cancel':
        progress.note('cancel requested');
        break;
      default:
        end = e;
    }
  }, { follow: true });
  progress.stop();
  const last = end as FleetEvent | null;
  if (last?.type === 'done') {
    console.log(summaryTable(decodeNonFinite(last.summary) as JobSummary));
    return 0;
  }
  console.error(`job ${id}: ${last?.type ?? 'no events'}${last && 'reason' in last ? ` (${last.reason})` : ''}`);
  return 1;
}

async function cancel(c: Ctx, id: string): Promise<number> {
  const r = await cancelJob(c, id);
  console.log(`${id}: ${r === 'cancelled' ? 'cancelled (it was queued)' : r === 'sent' ? 'cancel sent to its worker' : 'it has ended already'}`);
  return r === 'ended' ? 1 : 0;
}

async function fetch(c: Ctx, id: string, out: string): Promise<number> {
  const f = foldEvents(await jobHistory(c, id));
  if (f.state !== 'done' || !f.job) throw new WebtinkerError('fleet-not-done', `job "${id}" is ${f.job ? f.state : 'unknown'}: only a finished job can be fetched`);
  const result = await loadResult(await openStore(c.nc), id);
  const files = await writeRunFolder(out, result, f.metrics);
  await writeFile(join(out, RUN_FILE), JSON.stringify({ format: RUN_FORMAT, settings: f.job.settings }, null, 2) + '\n');
  console.log(summaryTable(f.summary ? decodeNonFinite(f.summary) as JobSummary : result, [...files, join(out, RUN_FILE)]));
  return 0;
}

async function worker(nc: NatsConnection, a: FleetArgs): Promise<number> {
  const quiet = a.values.quiet === true;
  const w = new FleetWorker(nc, {
    url: a.nats,
    name: (a.values.name as string | undefined) ?? `${hostname()}-${process.pid}`,
    slots: a.values.slots !== undefined ? Number(a.values.slots) : 1,
    ...(a.values['memory-mib'] !== undefined ? { memoryBudgetBytes: Number(a.values['memory-mib']) * 2 ** 20 } : {}),
    queue: queueOf(a),
    ...(a.values['rollout-silence'] !== undefined ? { rolloutSilenceMs: 1000 * Number(a.values['rollout-silence']) } : {}),
    log: quiet ? () => {} : (s) => console.error(`[${new Date().toISOString()}] ${s}`),
  });
  await w.start();
  if (!quiet) console.error(`worker ${w.name}: pulling jobs from ${a.nats} (${w.slots} slot${w.slots === 1 ? '' : 's'})`);
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
  });
  if (!quiet) console.error('stopping: running jobs go back to the queue');
  await w.stop();
  return 0;
}

async function rolloutWorker(nc: NatsConnection, a: FleetArgs): Promise<number> {
  const quiet = a.values.quiet === true;
  // `alive` from a thread of its own, as job leases are: this thread compiles pipelines for seconds.
  const keepAlive = new LeaseKeeper([a.nats], 3000);
  await keepAlive.ready();
  const w = new RolloutWorker(nc, {
    keepAlive,
    name: (a.values.name as string | undefined) ?? `${hostname()}-${process.pid}`,
    log: quiet ? () => {} : (s) => console.error(`[${new Date().toISOString()}] ${s}`),
  });
  await w.start();
  if (!quiet) console.error(`rollout worker ${w.o.name}: sampling rollout tasks from ${a.nats}`);
  await new Promise<void>((resolve) => {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => resolve());
  });
  await w.stop();
  await keepAlive.close();
  return 0;
}

export async function main(argv: readonly string[]): Promise<number> {
  let a: FleetArgs;
  try {
    a = parseFleetArgs(argv);
    if (a.help) {
      console.log(fleetHelp(argv[0] && !argv[0].startsWith('-') ? a.command : undefined));
      return 0;
    }
  } catch (e) {
    return exitCodeOf(e);
  }
  let job: FleetJob | null = null;
  try {
    job = a.command === 'submit' ? await submittedJob(a) : null;
  } catch (e) {
    return exitCodeOf(e);
  }
  const nc = await connectFleet(a.nats, `webtinker fleet ${a.command}`);
  try {
    const jsm = await jetstreamManager(nc, { timeout: API_TIMEOUT_MS });
    const c: Ctx = { nc, js: jetstream(nc, { timeout: API_TIMEOUT_MS }), jsm };
    if (a.command === 'worker') return await worker(nc, a);
    if (a.command === 'rollout-worker') return await rolloutWorker(nc, a);
    await ensureFleet(jsm);
    switch (a.command) {
      case 'submit': {
        const r = await submitJob(c, job!);
        console.log(r.id);
        if (r.duplicate) console.error(`${r.id}: already submitted (dropped as a duplicate within the stream's window)`);
        return 0;
      }
      case 'status':
        return await status(c, a);
      case 'watch':
        return await watch(c, a.job!);
      case 'cancel':
        return await cancel(c, a.job!);
      case 'fetch':
        return await fetch(c, a.job!, a.values.out as string);
    }
  } finally {
    await nc.drain().catch(() => nc.close());
  }
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  const d = (globalThis as unknown as { Deno: { args: string[]; exit(c: number): never } }).Deno;
  main(d.args).then((code) => d.exit(code), (e) => {
    console.error(e instanceof WebtinkerError ? `error: ${e.message}` : e);
    d.exit(e instanceof WebtinkerError && e.code === 'config' ? 2 : 1);
  });
}

/**
 * The job `submit` publishes. A pretrained --model: its config.json alone is read here (for the
 * memory estimate), and the commit its revision resolves to is pinned in the job, so every host
 * trains the same weights however the branch moves.
 */
async function submittedJob(a: FleetArgs): Promise<FleetJob> {
  let o = a.train!;
  let cfg: ModelConfig | undefined;
  if (!isPreset(o.model)) {
    const { texts, commit } = await readRepoTexts(o.model, ['config.json'], [], o.revision !== undefined ? { revision: o.revision } : {});
    cfg = configFromHf(texts['config.json'], { name: o.model, file: `${o.model}/config.json` });
    if (commit !== undefined) o = { ...o, revision: commit };
  }
  const fields = {
    ...(a.values.id ? { id: a.values.id as string } : {}), ...(priorityOf(a) ? { priority: priorityOf(a) } : {}), ...(a.values.weight ? { weight: Number(a.values.weight) } : {}),
    ...(a.values['rollout-staleness'] !== undefined ? { rolloutStaleness: Number(a.values['rollout-staleness']) } : {}),
  };
  return makeJob(o, fields, cfg);
}
