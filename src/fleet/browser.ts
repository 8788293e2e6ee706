/**
 * The fleet from a browser tab: a WebSocket connection to the fleet's NATS server (its
 * `websocket` listener), the shared store over it (the same NatsKv the hosts use), and a
 * finished job's adapter copied into the page's own store (IndexedDB), where the train page's
 * adapter list and the inference clients find it. Browser-safe: no Node built-ins.
 * A tab can also sample other hosts' RL rollouts over the same connection:
 * `await new RolloutWorker(await connectFleetWs(url), { name }).start()` (rollout_worker.ts; its
 * `alive` messages then come from the page's own thread).
 */
import { type NatsConnection, wsconnect } from '@nats-io/nats-core';
import { ConfigError } from '../errors.ts';
import { AdapterStore, type AdapterMeta } from '../runtime/store/adapter_store.ts';
import type { KvStore } from '../runtime/store/kv.ts';

export { openStore } from './store.ts';

/** Connect to `url` (ws:// or wss://host:port, the server's websocket listener). */
export async function connectFleetWs(url: string, name = 'webtinker page'): Promise<NatsConnection> {
  if (!/^wss?:\/\/\S+$/.test(url)) throw new ConfigError('url', `expected ws://host:port or wss://host:port, got "${url}"`);
  try {
    return await wsconnect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
  } catch (e) {
    throw new ConfigError('url', `cannot connect to ${url}: ${(e as Error).message} (does nats-server have a websocket listener?)`);
  }
}

/**
 * Copy job `id`'s adapter (a version, default the latest) from the fleet's store into `local`
 * under `as` (default the job id): a new version there, with the fleet's metadata and step.
 */
export async function downloadAdapter(fleet: KvStore, id: string, local: KvStore, opts: { version?: number; as?: string } = {}): Promise<AdapterMeta> {
  const { meta, tensors } = await new AdapterStore(fleet).load(id, opts.version);
  const { name: _n, version: _v, createdAt: _c, bytes: _b, ...info } = meta;
  return await new AdapterStore(local).save(opts.as ?? id, tensors, info);
}

export { RolloutWorker } from './rollout_worker.ts';
export type { RolloutWorkerOptions } from './rollout_worker.ts';
