// Deno suite: the fleet's queue without a GPU — a job whose hosts all died (delivered max_deliver
// times, never acked) is dead-lettered from the server's advisory and leaves the work queue, and
// the lease thread keeps a job's message from being redelivered while its holder lives.
import { assert } from 'chai';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { submitJob } from '../../src/fleet/cli.ts';
import { connectFleet } from '../../src/fleet/connect.ts';
import { watchExhausted } from '../../src/fleet/dead_letter.ts';
import { lastEvent } from '../../src/fleet/events.ts';
import { DEAD_STREAM, ensureFleet, JOBS_CONSUMER, JOBS_STREAM, makeJob, trainOptionsOf } from '../../src/fleet/jobs.ts';
import { LeaseKeeper } from '../../src/fleet/lease.ts';
import { startNatsServer } from '../shared/nats_server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test('fleet queue: exhausted jobs are dead-lettered; a held lease stops redelivery', async (t) => {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const c = { nc, js, jsm };
    await ensureFleet(jsm, { ackWaitMs: 500, maxDeliver: 2 });
    const consumer = await js.consumers.get(JOBS_STREAM, JOBS_CONSUMER);
    const job = (id: string) => makeJob(trainOptionsOf({ model: 'tiny-gpt2', steps: 1 }), { id });

    await t.step('a job delivered max_deliver times without an ack goes to the dead letters, off the queue', async () => {
      const logs: string[] = [];
      const sub = watchExhausted(nc, js, jsm, 'watcher', (s) => logs.push(s));
      await submitJob(c, job('lost'));
      // Two "hosts" take it and die (never ack, never renew).
      for (let d = 1; d <= 2; d++) {
        const m = await consumer.next({ expires: 5000 });
        assert.strictEqual(m?.info.deliveryCount, d);
      }
      // The server gives up (and advises) as it would deliver a third time: to a waiting pull, as idle workers keep one.
      assert.isNull(await consumer.next({ expires: 2000 }));
      let dead = null;
      for (let i = 0; i < 100 && dead?.type !== 'dead'; i++) {
        await sleep(100);
        dead = await lastEvent(jsm, 'lost');
      }
      assert.strictEqual(dead?.type, 'dead', logs.join('\n'));
      const letter = (await jsm.streams.getMessage(DEAD_STREAM, { last_by_subj: 'wt.dead.lost' }))!.json<{ reason: string; host: string }>();
      assert.match(letter.reason, /delivered 2 times without finishing: its hosts were lost, or none had room for it/);
      assert.strictEqual(letter.host, 'watcher');
      assert.strictEqual((await jsm.streams.info(JOBS_STREAM)).state.messages, 0);
      sub.unsubscribe();
    });

    await t.step('the lease thread renews a held job past many ack waits; released, it is redelivered', async () => {
      const lease = new LeaseKeeper([server.url], 500);
      await lease.ready();
      try {
        await submitJob(c, job('held'));
        const m = (await consumer.next({ expires: 5000 }))!;
        lease.hold('held', (m as unknown as { reply: string }).reply);
        // Six ack waits: without renewals it would have been redelivered (and exhausted) long ago.
        assert.isNull(await consumer.next({ expires: 3000 }));
        lease.release('held');
        const again = await consumer.next({ expires: 5000 });
        assert.strictEqual(again?.info.deliveryCount, 2);
        again!.ack();
      } finally {
        await lease.close();
      }
    });
  } finally {
    await nc.close();
    await server.stop();
  }
});
