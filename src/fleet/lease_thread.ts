/**
 * The lease keeper's thread (a module Worker; see lease.ts): its own NATS connection sends the
 * in-progress acks (`+WPI` to each held message's reply subject) every `intervalMs`, so a job's
 * lease outlives the main thread's long synchronous stretches (pipeline compiles, device polls on
 * a software adapter run for seconds). It stops renewing when the main thread has not said it is
 * alive for `maxSilenceMs`: a hung host then loses its jobs after one more ack wait.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { LeaseCommand } from './lease.ts';

const scope = self as unknown as { onmessage: ((e: MessageEvent<LeaseCommand>) => void) | null; postMessage(m: unknown): void };
const held = new Map<string, string>();
let nc: NatsConnection | null = null;
let lastAlive = Date.now();
let timer: ReturnType<typeof setInterval> | null = null;

scope.onmessage = async (e) => {
  const c = e.data;
  switch (c.type) {
    case 'init':
      nc = await connect({ servers: c.servers, name: 'webtinker lease', maxReconnectAttempts: -1, reconnectTimeWait: 500 });
      timer = setInterval(() => {
        if (Date.now() - lastAlive > c.maxSilenceMs) return;
        for (const reply of held.values()) nc!.publish(reply, '+WPI');
      }, c.intervalMs);
      scope.postMessage({ type: 'ready' });
      break;
    case 'hold':
      held.set(c.id, c.reply);
      nc?.publish(c.reply, '+WPI');
      break;
    case 'release':
      held.delete(c.id);
      break;
    case 'alive':
      lastAlive = Date.now();
      break;
    case 'close':
      if (timer) clearInterval(timer);
      await nc?.drain().catch(() => {});
      scope.postMessage({ type: 'closed' });
      break;
  }
};
