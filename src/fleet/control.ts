/**
 * Steering the fleet from any client — the CLI (cli.ts) or a page over WebSocket (fleet.html):
 * queue a validated job, cancel one, read a job's history. Browser-safe: no Node built-ins, only
 * the NATS clients and the event helpers.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { WebtinkerError } from '../errors.ts';
import { type FleetEvent, foldEvents, publishEvent, replayEvents } from './events.ts';
import type { FleetJob } from './jobs.ts';
import { CANCEL_SUBJECT, JOBS_STREAM, JOBS_SUBJECT } from './streams.ts';

/** A connection with its JetStream client and manager. */
export interface FleetCtx {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/** Queue a job (validated); resolves with its id and whether the server dropped it as a duplicate. */
export async function submitJob(c: FleetCtx, job: FleetJob): Promise<{ id: string; duplicate: boolean; seq: number }> {
  const ack = await c.js.publish(`${JOBS_SUBJECT}.${job.id}`, JSON.stringify(job), { msgID: job.id });
  if (!ack.duplicate) await publishEvent(c.js, job.id, { type: 'submitted', spec: job, seq: ack.seq });
  return { id: job.id, duplicate: ack.duplicate, seq: ack.seq };
}

/** A job's events stored now, in order. */
export async function jobHistory(c: FleetCtx, id: string): Promise<FleetEvent[]> {
  const events: FleetEvent[] = [];
  await replayEvents(c.js, c.jsm, id, (e) => events.push(e));
  return events;
}

/**
 * Cancel a job: 'cancelled' when it was still queued (its message deleted), 'sent' when a worker
 * runs it (it stops at its next step), 'ended' when it had ended already.
 */
export async function cancelJob(c: FleetCtx, id: string): Promise<'cancelled' | 'sent' | 'ended'> {
  const h = await jobHistory(c, id);
  const f = foldEvents(h);
  if (!f.job) throw new WebtinkerError('fleet-not-found', `job "${id}" was never submitted to this server`);
  if (['done', 'dead', 'cancelled'].includes(f.state)) return 'ended';
  // The event first (a worker checks it as it takes the job), then the running worker, then the queue.
  await publishEvent(c.js, id, { type: 'cancel' });
  c.nc.publish(`${CANCEL_SUBJECT}.${id}`, '');
  const sub = h.find((e) => e.type === 'submitted');
  const removed = sub?.type === 'submitted' ? await c.jsm.streams.deleteMessage(JOBS_STREAM, sub.seq).catch(() => false) : false;
  if (removed && f.state === 'queued' && f.starts === 0) {
    await publishEvent(c.js, id, { type: 'cancelled' });
    return 'cancelled';
  }
  return 'sent';
}
