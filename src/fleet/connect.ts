/**
 * Connecting to the fleet's NATS server and opening the shared store (the KV bucket of manifests
 * and results, the Object Store of tensors), created on first use by whichever command runs
 * first. Buckets keep one value per key (history 1) on file storage.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConfigError } from '../errors.ts';
import { BLOB_BUCKET, STORE_BUCKET } from './jobs.ts';
import { NatsKv } from './nats_kv.ts';

/** JetStream API timeout: generous, as a loaded host (or server) can stall for seconds. */
export const API_TIMEOUT_MS = 20_000;

/** Connect to `url` (nats://host:port); a ConfigError naming --nats when it is unreachable. */
export async function connectFleet(url: string, name = 'webtinker'): Promise<NatsConnection> {
  try {
    return await connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
  } catch (e) {
    throw new ConfigError('--nats', `cannot connect to ${url}: ${(e as Error).message} (is nats-server running with -js?)`);
  }
}

/** The shared store, as a plain (epoch 0) client; `withEpoch` gives a job owner's fenced view. */
export async function openStore(nc: NatsConnection, buckets: { kv?: string; objects?: string } = {}): Promise<NatsKv> {
  const js = jetstream(nc, { timeout: API_TIMEOUT_MS });
  const kv = await new Kvm(js).create(buckets.kv ?? STORE_BUCKET, { history: 1 });
  const objects = await new Objm(js).create(buckets.objects ?? BLOB_BUCKET);
  return new NatsKv(kv, objects);
}
