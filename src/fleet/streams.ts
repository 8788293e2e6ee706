/**
 * The fleet's JetStream resources, by name: the `WT_JOBS` work-queue stream and its one durable
 * consumer (`workers`: the ack wait is a job's lease, max_deliver its attempts), the `WT_EVENTS`
 * stream of job histories, the `WT_DEAD` stream of dead letters, and the cancel subject.
 * Browser-safe (no Node built-ins), so a page can watch jobs too.
 */
import { AckPolicy, type JetStreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';

export const JOBS_STREAM = 'WT_JOBS';
export const JOBS_SUBJECT = 'wt.jobs';
export const JOBS_CONSUMER = 'workers';
export const EVENTS_STREAM = 'WT_EVENTS';
export const EVENTS_SUBJECT = 'wt.events';
export const DEAD_STREAM = 'WT_DEAD';
export const DEAD_SUBJECT = 'wt.dead';
export const CANCEL_SUBJECT = 'wt.cancel';

/** The queue's timing: the lease (ack wait) and the attempts before dead-lettering. */
export interface QueueSettings {
  readonly ackWaitMs: number;
  readonly maxDeliver: number;
}

export const QUEUE_DEFAULTS: QueueSettings = { ackWaitMs: 30_000, maxDeliver: 5 };

/**
 * Create the streams and the shared consumer when missing; idempotent, run by every command.
 * With `q` (a worker's settings) an existing consumer's ack wait and max_deliver are set to it.
 */
export async function ensureFleet(jsm: JetStreamManager, q?: QueueSettings): Promise<void> {
  const streams: { name: string; subjects: string[]; retention: RetentionPolicy; duplicate_window?: number }[] = [
    { name: JOBS_STREAM, subjects: [`${JOBS_SUBJECT}.>`], retention: RetentionPolicy.Workqueue, duplicate_window: 120e9 },
    { name: EVENTS_STREAM, subjects: [`${EVENTS_SUBJECT}.>`], retention: RetentionPolicy.Limits },
    // Dead letters are deduplicated by job id: several workers may notice the same exhausted job.
    { name: DEAD_STREAM, subjects: [`${DEAD_SUBJECT}.>`], retention: RetentionPolicy.Limits, duplicate_window: 120e9 },
  ];
  for (const s of streams) {
    try {
      await jsm.streams.info(s.name);
    } catch {
      await jsm.streams.add({ ...s, storage: StorageType.File }).catch(async (e) => {
        // Another host created it in between.
        if (!/already in use|exists/i.test(String((e as Error).message))) throw e;
      });
    }
  }
  const want = q ?? QUEUE_DEFAULTS;
  const consumer = { durable_name: JOBS_CONSUMER, ack_policy: AckPolicy.Explicit, ack_wait: want.ackWaitMs * 1e6, max_deliver: want.maxDeliver, max_ack_pending: -1 };
  try {
    const info = await jsm.consumers.info(JOBS_STREAM, JOBS_CONSUMER);
    if (q && (info.config.ack_wait !== consumer.ack_wait || info.config.max_deliver !== consumer.max_deliver)) {
      await jsm.consumers.update(JOBS_STREAM, JOBS_CONSUMER, { ack_wait: consumer.ack_wait, max_deliver: consumer.max_deliver });
    }
  } catch (e) {
    if (!/not found|10014/i.test(String((e as Error).message))) throw e;
    await jsm.consumers.add(JOBS_STREAM, consumer).catch((e) => {
      if (!/already in use|exists/i.test(String((e as Error).message))) throw e;
    });
  }
}
