/**
 * The fleet's shared store over any NATS connection — a Deno or Node TCP one (connect.ts) or a
 * browser's WebSocket one (browser.ts): the KV bucket of manifests and results and the Object
 * Store of tensors, created on first use by whichever client comes first. Buckets keep one value
 * per key (history 1) on file storage. Browser-safe: no Node built-ins.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import { NatsKv } from './nats_kv.ts';

/** KV bucket of manifests and job results; Object Store of tensors. */
export const STORE_BUCKET = 'wt_store';
export const BLOB_BUCKET = 'wt_blobs';

/** JetStream API timeout: generous, as a loaded host (or server) can stall for seconds. */
export const API_TIMEOUT_MS = 20_000;

/** The shared store, as a plain (epoch 0) client; `withEpoch` gives a job owner's fenced view. */
export async function openStore(nc: NatsConnection, buckets: { kv?: string; objects?: string } = {}): Promise<NatsKv> {
  const js = jetstream(nc, { timeout: API_TIMEOUT_MS });
  const kv = await new Kvm(js).create(buckets.kv ?? STORE_BUCKET, { history: 1 });
  const objects = await new Objm(js).create(buckets.objects ?? BLOB_BUCKET);
  return new NatsKv(kv, objects);
}
