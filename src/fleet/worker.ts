/**
 * A fleet host's worker: pulls jobs from the shared `workers` consumer of `WT_JOBS` and runs each
 * with the local runtime, as `npm run train` does (runTrainingRecovering over a LocalService on
 * this host's WebGPU device, checkpoints through JobCheckpointer), with the checkpoints, the
 * adapter and the result in the NATS KvStore, fenced by the message's delivery count (its epoch).
 *
 * Admission: the worker asks the consumer for a job only while it has a free slot; a job whose
 * estimated GPU bytes exceed this host's whole budget is handed back (nak with a delay) for
 * another host; one that fits the budget but not what is free now is kept, its lease renewed,
 * until running jobs end (the worker pulls nothing else meanwhile). While a job runs, an in-progress ack every third of the ack
 * wait, sent from a thread of its own (lease.ts), extends its lease. A job whose host dies (no ack for an ack wait) is redelivered to any
 * worker and resumes from its last checkpoint; the new owner first claims the job's manifests
 * with its epoch, so the old host, if it comes back, is refused at its next write and abandons
 * the job (it neither acks nor naks: the message belongs to the new delivery).
 *
 * Endings: done — the result stored, a `done` event, then the ack; a ConfigError (bad settings,
 * can never succeed) — dead-lettered at once and the message termed; any other error — nak for
 * another attempt, dead-lettered at the last (max_deliver); a host lost on the last attempt is
 * dead-lettered from the server's MAX_DELIVERIES advisory (dead_letter.ts). Cancel: `wt.cancel.<id>` stops the
 * job at its next step (the message is termed).
 *
 * Jobs held at once (`slots`) share the device through this host's Scheduler, by the priority
 * class and weight the job carries (scheduled_service.ts); the queue itself is taken in order.
 * An RL job from scratch hands its steps' rollouts to rollout workers on other hosts (rollouts.ts).
 */
import { jetstream, type JetStreamClient, jetstreamManager, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { ConfigError, WebtinkerError } from '../errors.ts';
import { acquireGpu } from '../gpu/device.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import { JobCancelledError } from '../runtime/errors.ts';
import { encodeNonFinite, JobCheckpointer, type StoredJobState } from '../runtime/job_checkpoint.ts';
import { LocalService } from '../runtime/local_service.ts';
import { LocalServiceSource, runTrainingRecovering } from '../runtime/recovery.ts';
import { type JobSummary, summaryOf } from '../runtime/rl_job.ts';
import { CheckpointStore } from '../runtime/store/checkpoint_store.ts';
import { jobOptionsFrom } from '../cli/train.ts';
import { HubError, type HubErrorKind } from '../hub/errors.ts';
import { openUnlessPreset } from '../runtime/pretrained_job.ts';

/** Hub errors no retry can cure (a network failure or a full disk may pass: those are retried). */
const NEVER_LOADS: readonly HubErrorKind[] = ['bad-repo-id', 'bad-revision', 'not-found', 'gated', 'bad-file'];
import { metricsLine } from '../cli/report.ts';
import { type FleetEventBody, lastEvent, publishEvent } from './events.ts';
import { CANCEL_SUBJECT, ensureFleet, type FleetJob, JOBS_CONSUMER, JOBS_STREAM, QUEUE_DEFAULTS, type QueueSettings, validateJob } from './jobs.ts';
import { FencedError, type NatsKv } from './nats_kv.ts';
import { API_TIMEOUT_MS, openStore } from './connect.ts';
import { deadLetter, watchExhausted } from './dead_letter.ts';
import { LeaseKeeper } from './lease.ts';
import { saveResult } from './results.ts';
import { agentRecipeOf, FleetRollouts } from './rollouts.ts';
import { jobSpecOf, scheduledService } from './scheduled_service.ts';
import { Scheduler } from '../runtime/scheduler.ts';

export interface WorkerOptions {
  /** The NATS server's URL (the lease thread connects to it too). */
  readonly url: string;
  /** This host's name in events and status (default: hostname and pid). */
  readonly name: string;
  /** Jobs run at once (default 1). */
  readonly slots?: number;
  /** GPU bytes this host gives to fleet jobs (default: no limit). */
  readonly memoryBudgetBytes?: number;
  readonly queue?: QueueSettings;
  /** A rollout worker silent this long on a slice of a job's step: the slice is sampled here (default 30 s; rollouts.ts). */
  readonly rolloutSilenceMs?: number;
  readonly log?: (line: string) => void;
}

/** The job's keys a new owner stamps with its epoch before it reads anything (see nats_kv.ts). */
export function manifestsOf(id: string): string[] {
  return [`checkpoints/${id}/manifest`, `checkpoints/${id}.base/manifest`, `adapters/${id}/manifest`, `bases/${id}/manifest`, `results/${id}`];
}

export class FleetWorker {
  readonly nc: NatsConnection;
  readonly name: string;
  readonly url: string;
  readonly slots: number;
  readonly budget: number;
  readonly queue: QueueSettings;
  readonly log: (line: string) => void;
  readonly o: WorkerOptions;
  #js!: JetStreamClient;
  #jsm!: JetStreamManager;
  #store!: NatsKv;
  #running = new Map<string, { bytes: number; abort: (e: Error) => void }>();
  #stopped = false;
  #loop: Promise<void> | null = null;
  #advisories: Subscription | null = null;
  #wake: (() => void) | null = null;
  /** Waiting for a running job to end (room for a job held back by its memory). */
  #roomWaiters: (() => void)[] = [];
  #lease!: LeaseKeeper;
  /** Device time between this host's running jobs, by their priority and weight (memory is the worker's own check). */
  readonly scheduler = new Scheduler({ memoryBudgetBytes: Infinity });

  constructor(nc: NatsConnection, o: WorkerOptions) {
    this.nc = nc;
    this.o = o;
    this.name = o.name;
    this.url = o.url;
    this.slots = o.slots ?? 1;
    this.budget = o.memoryBudgetBytes ?? Infinity;
    this.queue = o.queue ?? QUEUE_DEFAULTS;
    this.log = o.log ?? (() => {});
    if (!Number.isInteger(this.slots) || this.slots < 1) throw new ConfigError('--slots', `must be a positive integer, got ${this.slots}`);
  }

  /** Start pulling jobs; resolves once connected and the streams exist. */
  async start(): Promise<void> {
    this.#jsm = await jetstreamManager(this.nc, { timeout: API_TIMEOUT_MS });
    this.#js = jetstream(this.nc, { timeout: API_TIMEOUT_MS });
    await ensureFleet(this.#jsm, this.queue);
    this.#store = await openStore(this.nc);
    this.#lease = new LeaseKeeper([this.url], this.queue.ackWaitMs);
    await this.#lease.ready();
    this.#advisories = watchExhausted(this.nc, this.#js, this.#jsm, this.name, this.log);
    this.#loop = this.#pull();
  }

  /** Stop taking jobs; running ones are handed back (nak) to resume elsewhere from their checkpoints. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const r of this.#running.values()) r.abort(new WorkerStopping());
    this.#wake?.();
    for (const r of this.#roomWaiters.splice(0)) r();
    this.#advisories?.unsubscribe();
    await this.#loop;
    while (this.#running.size > 0) await new Promise((r) => setTimeout(r, 50));
    await this.#lease.close();
  }

  get free(): number {
    return this.budget - [...this.#running.values()].reduce((s, r) => s + r.bytes, 0);
  }

  async #pull(): Promise<void> {
    const consumer = await this.#js.consumers.get(JOBS_STREAM, JOBS_CONSUMER);
    while (!this.#stopped) {
      if (this.#running.size >= this.slots) {
        await new Promise<void>((r) => (this.#wake = r));
        continue;
      }
      let m: JsMsg | null = null;
      try {
        m = await consumer.next({ expires: 2000 });
      } catch (e) {
        if (this.#stopped) break;
        this.log(`pull failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      if (!m) continue;
      if (this.#stopped) {
        m.nak();
        break;
      }
      await this.#take(m);
    }
  }

  async #take(m: JsMsg): Promise<void> {
    const epoch = m.info.deliveryCount;
    let job: FleetJob;
    let options;
    try {
      ({ job, options } = validateJob(m.json()));
    } catch (e) {
      const id = (() => {
        try {
          return String((m.json() as { id?: unknown }).id ?? m.subject.split('.').at(-1));
        } catch {
          return m.subject.split('.').at(-1)!;
        }
      })();
      await this.#dead(m, id, epoch, `bad job: ${(e as Error).message}`);
      return;
    }
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    if (job.memoryBytes > this.budget) {
      // It can never run here: another host may have room (each hand-back counts as a delivery).
      this.log(`${job.id}: needs ~${mib(job.memoryBytes)}, more than this host's ${mib(this.budget)}; handed back`);
      m.nak(1000);
      return;
    }
    if (job.memoryBytes > this.free) {
      // It fits once running jobs end: keep it (its lease renewed, no delivery spent), pull nothing else meanwhile.
      const reply = (m as JsMsg & { reply?: string }).reply;
      if (reply) this.#lease.hold(`${job.id}#${epoch}`, reply);
      this.log(`${job.id}: needs ~${mib(job.memoryBytes)}, ${mib(this.free)} free here; waiting for room`);
      while (job.memoryBytes > this.free && !this.#stopped) await new Promise<void>((r) => this.#roomWaiters.push(r));
      if (this.#stopped) {
        this.#lease.release(`${job.id}#${epoch}`);
        m.nak();
        return;
      }
    }
    let abort: (e: Error) => void = () => {};
    const aborted = new Promise<never>((_r, rej) => (abort = rej));
    aborted.catch(() => {});
    // By delivery: a job redelivered here while its older delivery still runs (to be fenced out) is another entry.
    const key = `${job.id}#${epoch}`;
    this.#running.set(key, { bytes: job.memoryBytes, abort });
    void this.#run(m, job, options, epoch, aborted).finally(() => {
      this.#running.delete(key);
      this.#wake?.();
      for (const r of this.#roomWaiters.splice(0)) r();
    });
  }

  async #event(id: string, body: FleetEventBody): Promise<void> {
    await publishEvent(this.#js, id, body);
  }

  async #dead(m: JsMsg, id: string, epoch: number, reason: string): Promise<void> {
    this.log(`${id}: dead-lettered (${reason})`);
    await deadLetter(this.#js, { job: id, reason, epoch, host: this.name });
    // No reason on the wire: nats-server 2.9 ignores "+TERM <reason>" (2.10 added reasons) and
    // would redeliver the job after the ack wait; the reason is in the dead letter.
    m.term();
  }

  async #run(m: JsMsg, job: FleetJob, options: ReturnType<typeof validateJob>['options'], epoch: number, aborted: Promise<never>): Promise<void> {
    const id = job.id;
    // The ack subject (JsMsgImpl's reply; the JsMsg type does not declare it).
    const reply = (m as JsMsg & { reply?: string }).reply;
    const leaseKey = `${id}#${epoch}`;
    if (reply) this.#lease.hold(leaseKey, reply);
    let cancelled = false;
    const cancelSub = this.nc.subscribe(`${CANCEL_SUBJECT}.${id}`, { callback: () => { cancelled = true; } });
    const store = this.#store.withEpoch(epoch);
    const where = { host: this.name, epoch };
    let source: LocalServiceSource | null = null;
    let rollouts: FleetRollouts | null = null;
    let scheduled = false;
    // Events go out in order, without holding up the steps; one that cannot be stored (after
    // publishEvent's retries) fails the job at its next step, so the attempt is retried from its
    // checkpoint and the replayed metrics never miss a line.
    let events = Promise.resolve();
    let eventError: unknown = null;
    const emit = (b: FleetEventBody) => (events = events.then(() => this.#event(id, b)).catch((e) => void (eventError ??= e)));
    try {
      const last = await lastEvent(this.#jsm, id);
      if (last?.type === 'cancel' || last?.type === 'cancelled') throw new JobCancelledError(id);
      if (last?.type === 'done') {
        // An earlier delivery finished (result stored, `done` published) but its ack was lost.
        await m.ackAck();
        return;
      }
      await store.claim(manifestsOf(id));
      const checkpoints = new JobCheckpointer(new CheckpointStore<StoredJobState>(store, { keepLast: 2 }), id);
      const from = await checkpoints.latest();
      this.log(`${id}: delivery ${epoch}, ${from ? `resuming from ${from.phase} step ${from.step}` : 'starting'}`);
      await this.#event(id, { type: 'started', ...where, from: from ? { phase: from.phase, step: from.step } : null });
      // A pretrained model: its files into this host's Hugging Face cache (the commit the submitter pinned).
      const opened = await Promise.race([openUnlessPreset(options.model, options.revision !== undefined ? { revision: options.revision } : {}), aborted]);
      const ctx = await Promise.race([acquireGpu({ label: `fleet ${id}` }), aborted]);
      const tok = new ByteTokenizer();
      // The job's GPU calls as quanta of this host's scheduler, by its priority class and weight (scheduled_service.ts).
      await this.scheduler.submit(jobSpecOf(job, leaseKey));
      scheduled = true;
      source = new LocalServiceSource(ctx, (c) => scheduledService(new LocalService(c, { decode: (ids) => tok.decode(ids), maxSkippedInARow: 5 }), this.scheduler, leaseKey), { label: `fleet ${id}` });
      const check = () => {
        if (cancelled) throw new JobCancelledError(id);
        if (eventError !== null) throw eventError;
      };
      const jobOpts = jobOptionsFrom(options, opened);
      // RL steps' rollouts across hosts (rollouts.ts): from-scratch models (a pretrained base stays on its hosts).
      rollouts = opened || jobOpts.algo === 'sft' ? null : new FleetRollouts(this.nc, store, {
        job: id, epoch, agent: agentRecipeOf(jobOpts), staleness: job.rolloutStaleness ?? 0, log: this.log,
        ...(this.o.rolloutSilenceMs !== undefined ? { silenceMs: this.o.rolloutSilenceMs } : {}),
      });
      const run = runTrainingRecovering(source, {
        ...jobOpts,
        ...(rollouts ? { rollouts } : {}),
        checkpoint: {
          ...checkpoints.checkpointing(job.checkpointEvery, from),
          save: async (c) => {
            await events; // the step events a checkpoint covers are stored before it
            check();
            await checkpoints.save(c);
            emit({ type: 'checkpoint', ...where, phase: c.phase, step: c.step });
          },
        },
        onPhase: (phase, d) => emit({ type: 'phase', ...where, phase, ...(d.steps !== undefined ? { steps: d.steps } : {}) }),
        onStep: (s) => {
          check();
          emit({ type: 'step', ...where, line: metricsLine(s) });
        },
      }, { latest: () => checkpoints.latest(), ...(opened ? { pretrained: opened } : {}) });
      run.catch(() => {}); // when aborted, the run fails later, as its device is destroyed
      const result = await Promise.race([aborted, run]);
      await events;
      check();
      const summary = summaryOf(result);
      const adapterVersion = await saveResult(store, id, result, summary);
      await this.#event(id, { type: 'done', ...where, summary: encodeNonFinite(summary) as JobSummary, adapterVersion });
      await m.ackAck();
      this.log(`${id}: done (adapter version ${adapterVersion})`);
      await checkpoints.clear().catch(() => {});
    } catch (e) {
      await events;
      await this.#ended(m, id, epoch, e);
    } finally {
      this.#lease.release(leaseKey);
      cancelSub.unsubscribe();
      await rollouts?.close();
      await source?.close().catch(() => {});
      if (scheduled) this.scheduler.finish(leaseKey);
    }
  }

  async #ended(m: JsMsg, id: string, epoch: number, e: unknown): Promise<void> {
    const reason = e instanceof Error ? e.message : String(e);
    const where = { host: this.name, epoch };
    if (e instanceof FencedError) {
      this.log(`${id}: abandoned (${reason})`);
      await this.#event(id, { type: 'abandoned', ...where, reason });
    } else if (e instanceof JobCancelledError) {
      this.log(`${id}: cancelled`);
      await this.#event(id, { type: 'cancelled', ...where });
      m.term(); // (no reason: see #dead)
    } else if (e instanceof WorkerStopping) {
      this.log(`${id}: handed back (worker stopping)`);
      await this.#event(id, { type: 'failed', ...where, reason, retry: true });
      m.nak();
    } else if (e instanceof ConfigError) {
      await this.#dead(m, id, epoch, `bad config: ${reason}`);
    } else if (e instanceof HubError && NEVER_LOADS.includes(e.kind)) {
      await this.#dead(m, id, epoch, `the model cannot be loaded: ${reason}`);
    } else if (epoch >= this.queue.maxDeliver) {
      await this.#dead(m, id, epoch, `failed on each of ${epoch} attempts, last: ${reason}`);
    } else {
      this.log(`${id}: attempt ${epoch} failed (${reason}); handed back`);
      await this.#event(id, { type: 'failed', ...where, reason, retry: true });
      m.nak(1000);
    }
  }
}

class WorkerStopping extends WebtinkerError {
  constructor() {
    super('worker-stopping', 'the worker is stopping');
  }
}
