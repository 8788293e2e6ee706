// Chromium suite: published adapter versions persist in IndexedDB across a restarted LocalService and a new GPU worker.
import { it } from 'vitest';
import { publishedAdapterCases } from '../shared/cases/published_adapters.ts';
import { IdbKv } from '../../src/runtime/store/idb_kv.ts';

let n = 0;
const location = () => {
  const db = `wt-published-${Date.now()}-${n++}`;
  return Promise.resolve({ kv: () => new IdbKv(db), spec: { kind: 'indexeddb' as const, db } });
};
for (const c of publishedAdapterCases(location)) it(c.name, c.fn);
