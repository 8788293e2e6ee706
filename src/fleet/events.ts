/**
 * A job's history on the `WT_EVENTS` stream, one subject per job (`wt.events.<id>`): submitted,
 * started (host, delivery epoch, the checkpoint it resumed from), phase changes, one `step` event
 * per training step carrying the exact metrics.jsonl line `npm run train` writes, checkpoints,
 * and the end — done (with the summary), failed, abandoned (fenced out), cancelled, dead.
 *
 * A watcher replays a job from its start with an ordered consumer. Redelivery makes the raw
 * history longer than the run: the steps after a resumed checkpoint appear twice, and a fenced-out
 * host may publish a few events after the new owner started. `foldEvents` gives the run as one
 * host would have written it: each `started` of a newer epoch cuts the metrics back to its
 * checkpoint (resume.ts's metricsBefore rule), and events of older epochs after it are ignored.
 */
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { JobSummary } from '../runtime/rl_job.ts';
import { metricsBefore } from '../cli/report.ts';
import type { FleetJob } from './jobs.ts';
import { EVENTS_STREAM, EVENTS_SUBJECT } from './streams.ts';

export type Where = { readonly phase: 'sft' | 'rl'; readonly step: number };

export type FleetEventBody =
  | { type: 'submitted'; spec: FleetJob; seq: number }
  | { type: 'started'; host: string; epoch: number; from: Where | null }
  | { type: 'phase'; host: string; epoch: number; phase: string; steps?: number }
  | { type: 'step'; host: string; epoch: number; line: string }
  | { type: 'checkpoint'; host: string; epoch: number; phase: 'sft' | 'rl'; step: number }
  | { type: 'done'; host: string; epoch: number; summary: JobSummary; adapterVersion: number }
  | { type: 'failed'; host: string; epoch: number; reason: string; retry: boolean }
  | { type: 'abandoned'; host: string; epoch: number; reason: string }
  | { type: 'cancel' }
  | { type: 'cancelled'; host?: string; epoch?: number }
  | { type: 'dead'; reason: string; epoch: number };

export type FleetEvent = FleetEventBody & { readonly job: string; readonly at: string };

/** Events after which nothing more happens to a job. */
export const FINAL: ReadonlySet<FleetEvent['type']> = new Set(['done', 'dead', 'cancelled']);

export function eventSubject(jobId: string): string {
  return `${EVENTS_SUBJECT}.${jobId}`;
}

let eventNonce = 0;

/**
 * Publish one event; resolves once the stream has stored it. A publish that times out (a loaded
 * host or server) is sent again under the same message id, so the stream keeps it once.
 */
export async function publishEvent(js: JetStreamClient, jobId: string, body: FleetEventBody, msgID = `${jobId}.${Date.now().toString(36)}.${Math.random().toString(36).slice(2)}.${eventNonce++}`): Promise<void> {
  const data = JSON.stringify({ ...body, job: jobId, at: new Date().toISOString() });
  for (let attempt = 1; ; attempt++) {
    try {
      await js.publish(eventSubject(jobId), data, { msgID, timeout: 10_000 });
      return;
    } catch (e) {
      if (attempt >= 5 || !/timeout|503|no responders/i.test(String((e as Error).message))) throw e;
    }
  }
}

/** The latest event of a job, or null when it has none. */
export async function lastEvent(jsm: JetStreamManager, jobId: string): Promise<FleetEvent | null> {
  try {
    const m = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: eventSubject(jobId) });
    return m ? m.json<FleetEvent>() : null;
  } catch (e) {
    if (/no message found|10037/i.test(String((e as Error).message))) return null;
    throw e;
  }
}

/** Ids of every job with events, sorted. */
export async function jobIds(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(EVENTS_STREAM, { subjects_filter: `${EVENTS_SUBJECT}.>` });
  return Object.keys(info.state.subjects ?? {}).map((s) => s.slice(EVENTS_SUBJECT.length + 1)).sort();
}

/**
 * Replays a job's events from its start, calling `onEvent` in order. Without `follow` it stops at
 * the last event stored now; with it, at a final event (done, dead, cancelled).
 */
export async function replayEvents(js: JetStreamClient, jsm: JetStreamManager, jobId: string, onEvent: (e: FleetEvent) => void, opts: { follow?: boolean } = {}): Promise<void> {
  const last = await lastEvent(jsm, jobId);
  if (!last && !opts.follow) return;
  if (last && FINAL.has(last.type)) opts = { ...opts, follow: false };
  const c = await js.consumers.get(EVENTS_STREAM, { filter_subjects: eventSubject(jobId), deliver_policy: DeliverPolicy.All });
  const it = await c.consume();
  try {
    for await (const m of it) {
      const e = m.json<FleetEvent>();
      onEvent(e);
      if (opts.follow ? FINAL.has(e.type) : m.info.pending === 0) break;
    }
  } finally {
    it.stop();
    await c.delete().catch(() => {});
  }
}

/** A job's run as one host would have written it (see the header). */
export interface FoldedJob {
  state: 'queued' | 'running' | 'done' | 'failed' | 'abandoned' | 'cancelling' | 'cancelled' | 'dead';
  job?: FleetJob;
  host?: string;
  epoch: number;
  /** metrics.jsonl, as `npm run train` writes it. */
  metrics: string;
  last?: Where;
  summary?: JobSummary;
  adapterVersion?: number;
  reason?: string;
  /** Starts (first run and resumptions). */
  starts: number;
}

export function foldEvents(events: readonly FleetEvent[]): FoldedJob {
  const f: FoldedJob = { state: 'queued', epoch: 0, metrics: '', starts: 0 };
  for (const e of events) {
    const epoch = 'epoch' in e && typeof e.epoch === 'number' ? e.epoch : undefined;
    if (epoch !== undefined && epoch < f.epoch && e.type !== 'dead') continue; // a fenced-out host's late events
    switch (e.type) {
      case 'submitted':
        f.job = e.spec;
        break;
      case 'started':
        f.state = 'running';
        f.host = e.host;
        f.epoch = e.epoch;
        f.starts++;
        f.metrics = e.from ? metricsBefore(f.metrics, e.from) : '';
        f.last = e.from ?? undefined;
        break;
      case 'step': {
        f.metrics += `${e.line}\n`;
        const m = JSON.parse(e.line) as Where;
        f.last = { phase: m.phase, step: m.step };
        break;
      }
      case 'done':
        f.state = 'done';
        f.summary = e.summary;
        f.adapterVersion = e.adapterVersion;
        break;
      case 'failed':
        f.state = e.retry ? 'queued' : 'failed';
        f.reason = e.reason;
        break;
      case 'abandoned':
        f.state = 'abandoned';
        f.reason = e.reason;
        break;
      case 'cancel':
        if (f.state !== 'done' && f.state !== 'dead') f.state = 'cancelling';
        break;
      case 'cancelled':
        f.state = 'cancelled';
        break;
      case 'dead':
        f.state = 'dead';
        f.reason = e.reason;
        break;
    }
  }
  return f;
}
