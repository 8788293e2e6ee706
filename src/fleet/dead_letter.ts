/**
 * Dead letters: a job that can never succeed, or that used up its attempts, is published to
 * `wt.dead.<id>` (the `WT_DEAD` stream, deduplicated by job id: several workers may notice the
 * same job) with its reason, and a `dead` event ends its history. When the job's host died on
 * every attempt no worker sees the last failure; the server then emits a MAX_DELIVERIES advisory,
 * and every worker listens for it (`watchExhausted`): it dead-letters the job and deletes its
 * message, which would otherwise sit in the work queue undelivered.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { publishEvent } from './events.ts';
import { DEAD_SUBJECT, JOBS_CONSUMER, JOBS_STREAM } from './streams.ts';

export interface DeadLetter {
  readonly job: string;
  readonly reason: string;
  /** The delivery it died on. */
  readonly epoch: number;
  readonly host: string;
  readonly at: string;
}

/** Publish the dead letter and the job's `dead` event. */
export async function deadLetter(js: JetStreamClient, letter: Omit<DeadLetter, 'at'>): Promise<void> {
  await js.publish(`${DEAD_SUBJECT}.${letter.job}`, JSON.stringify({ ...letter, at: new Date().toISOString() } satisfies DeadLetter), { msgID: `dead-${letter.job}` });
  await publishEvent(js, letter.job, { type: 'dead', reason: letter.reason, epoch: letter.epoch });
}

/** Dead-letter the jobs the server gave up on (MAX_DELIVERIES advisories of the shared consumer). */
export function watchExhausted(nc: NatsConnection, js: JetStreamClient, jsm: JetStreamManager, host: string, log: (s: string) => void): Subscription {
  return nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${JOBS_STREAM}.${JOBS_CONSUMER}`, {
    callback: (_e, m) => {
      const a = m.json<{ stream_seq: number; deliveries: number }>();
      void (async () => {
        const sm = await jsm.streams.getMessage(JOBS_STREAM, { seq: a.stream_seq }).catch(() => null);
        if (!sm) return; // another worker handled it
        const job = sm.subject.split('.').at(-1)!;
        const reason = `delivered ${a.deliveries} times without finishing: its hosts were lost, or none had room for it`;
        log(`${job}: dead-lettered (${reason})`);
        await deadLetter(js, { job, reason, epoch: a.deliveries, host });
        await jsm.streams.deleteMessage(JOBS_STREAM, a.stream_seq).catch(() => {});
      })().catch((e) => log(`dead-lettering from an advisory failed: ${(e as Error).message}`));
    },
  });
}
