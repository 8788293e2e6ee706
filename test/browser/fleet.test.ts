// Browser suite: the fleet from a page, over WebSocket to the suite's nats-server (started by
// scripts/vitest-setup.ts) — the NATS KvStore passes the store contract cases in Chromium, a
// fleet adapter downloads into IndexedDB, and a job's events replay and fold as a watcher sees them.
import { assert } from 'chai';
import { afterAll, describe, inject, it } from 'vitest';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectFleetWs, downloadAdapter, openStore } from '../../src/fleet/browser.ts';
import { type FleetEvent, foldEvents, publishEvent, replayEvents } from '../../src/fleet/events.ts';
import { ensureFleet } from '../../src/fleet/streams.ts';
import { AdapterStore } from '../../src/runtime/store/adapter_store.ts';
import { IdbKv } from '../../src/runtime/store/idb_kv.ts';
import { adapterStoreCases, checkpointStoreCases } from '../shared/cases/adapter_store.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Given by scripts/vitest-setup.ts: ws://127.0.0.1:PORT of the suite's nats-server, or ''. */
    natsWsUrl: string;
    /** Why there is no nats-server ('' when there is one). */
    natsError: string;
  }
}

let nc: NatsConnection | null = null;
async function connection(): Promise<NatsConnection> {
  const url = inject('natsWsUrl');
  if (!url) throw new Error(`no nats-server for the fleet's browser tests: ${inject('natsError')}`);
  nc ??= await connectFleetWs(url);
  return nc;
}

let n = 0;
const fresh = async () => openStore(await connection(), { kv: `page${n}`, objects: `pageo${n++}` });

describe('the fleet store from a page (WebSocket)', () => {
  afterAll(async () => {
    await nc?.close();
  });
  for (const c of [...adapterStoreCases(fresh), ...checkpointStoreCases(fresh)]) it(`nats over websocket: ${c.name}`, c.fn);

  it('a fleet adapter downloads into IndexedDB, metadata and bytes intact', async () => {
    const fleet = await fresh();
    const tensors = [{ name: 'layers.0.q.lora_A', shape: [2, 3], dtype: 'f32' as const, data: new Float32Array([1, -2, 3.5, 0, 1e-8, 7]) }];
    await new AdapterStore(fleet).save('job-7', tensors, { baseModel: 'tiny-gpt2', rank: 2, alpha: 4, targetModules: ['q'], step: 9, metrics: { successAfter: 0.5 } });
    const local = new IdbKv(`wt-fleet-${Date.now()}`);
    const meta = await downloadAdapter(fleet, 'job-7', local);
    assert.include(meta, { name: 'job-7', version: 1, baseModel: 'tiny-gpt2', rank: 2, step: 9 });
    assert.deepEqual(meta.metrics, { successAfter: 0.5 });
    const back = await new AdapterStore(local).load('job-7');
    assert.deepEqual([...back.tensors[0].data], [...tensors[0].data]);
  });

  it('a job\'s events replay from its start and fold into one run, a resumed one cut back to its checkpoint', async () => {
    const c = await connection();
    const js = jetstream(c);
    const jsm = await jetstreamManager(c);
    await ensureFleet(jsm);
    const line = (step: number) => JSON.stringify({ phase: 'sft', step, loss: step / 10 });
    await publishEvent(js, 'page-job', { type: 'started', host: 'A', epoch: 1, from: null });
    for (const s of [0, 1, 2]) await publishEvent(js, 'page-job', { type: 'step', host: 'A', epoch: 1, line: line(s) });
    await publishEvent(js, 'page-job', { type: 'started', host: 'B', epoch: 2, from: { phase: 'sft', step: 2 } });
    await publishEvent(js, 'page-job', { type: 'step', host: 'A', epoch: 1, line: line(3) }); // the old host, fenced out
    for (const s of [2, 3]) await publishEvent(js, 'page-job', { type: 'step', host: 'B', epoch: 2, line: line(s) });
    const seen: FleetEvent[] = [];
    await replayEvents(js, jsm, 'page-job', (e) => seen.push(e));
    assert.strictEqual(seen.length, 8);
    const f = foldEvents(seen);
    assert.include(f, { state: 'running', host: 'B', epoch: 2, starts: 2 });
    assert.deepEqual(f.metrics.trim().split('\n').map((l) => JSON.parse(l).step), [0, 1, 2, 3]);
    // A watcher following the job sees it end.
    const followed = replayEvents(js, jsm, 'page-job', (e) => seen.push(e), { follow: true });
    await publishEvent(js, 'page-job', { type: 'cancelled', host: 'B', epoch: 2 });
    await followed;
    assert.strictEqual(seen.at(-1)?.type, 'cancelled');
  });
});
