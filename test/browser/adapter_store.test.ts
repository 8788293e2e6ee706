// Chromium suite: the adapter store on real IndexedDB (idb-keyval), a fresh database per case,
// plus durability across a new connection (as after a page reload).
import { expect, it } from 'vitest';
import { adapterStoreCases, checkpointStoreCases } from '../shared/cases/adapter_store.ts';
import { IdbKv } from '../../src/runtime/store/idb_kv.ts';
import { AdapterStore } from '../../src/runtime/store/adapter_store.ts';
import { defaultKv, type KvStore } from '../../src/runtime/store/mod.ts';

let n = 0;
const fresh = async () => new IdbKv(`wt-test-${Date.now()}-${n++}`);

// The second writer holds its own connection to the same database, as another tab would.
const reopen = (kv: KvStore) => new IdbKv((kv as IdbKv).dbName);
for (const c of [...adapterStoreCases(fresh, reopen), ...checkpointStoreCases(fresh)]) it(`indexeddb: ${c.name}`, c.fn);

it('indexeddb: a saved adapter is there for a new connection to the same database', async () => {
  const db = `wt-durable-${Date.now()}`;
  const data = Float32Array.from({ length: 10 }, (_, i) => i / 3);
  await new AdapterStore(new IdbKv(db)).save('kept', [{ name: 'w', shape: [2, 5], dtype: 'f32', data }], {
    baseModel: 'm', rank: 1, alpha: 1, targetModules: ['q'], step: 3,
  });
  const again = new AdapterStore(new IdbKv(db));
  const { meta, tensors } = await again.load('kept');
  expect(meta.step).toBe(3);
  expect([...tensors[0].data]).toEqual([...data]);
});

it('the default store in a browser page is IndexedDB', async () => {
  expect((await defaultKv()).kind).toBe('indexeddb');
});
