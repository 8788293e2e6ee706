// Browser suite: the fleet from a page — the NATS KvStore over WebSocket (the suite's
// nats-server, started by scripts/vitest-setup.ts) passes the store contract cases in Chromium,
// and a fleet adapter downloads into IndexedDB.
import { assert } from 'chai';
import { afterAll, describe, inject, it } from 'vitest';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectFleetWs, downloadAdapter, openStore } from '../../src/fleet/browser.ts';
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
});
