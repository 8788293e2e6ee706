/**
 * IndexedDB backend through idb-keyval: one database per store name, one object store "kv".
 * `setMany` is a single readwrite transaction, so a commit is all-or-nothing even if the tab
 * closes mid-write. `create` is idb-keyval's `update`: the get and the put run in one readwrite
 * transaction, and IndexedDB runs readwrite transactions over one object store one at a time —
 * across every connection, tab and worker — so two creators of one key cannot both see it empty.
 */
import { createStore, delMany, get, keys, setMany, update, type UseStore } from 'idb-keyval';
import type { KvStore, KvValue } from './kv.ts';
import { snapshot } from './kv.ts';

export class IdbKv implements KvStore {
  readonly kind = 'indexeddb';
  readonly dbName: string;
  #store: UseStore;

  constructor(dbName = 'webtinker') {
    if (typeof indexedDB === 'undefined') throw new Error('IndexedDB is not available here');
    this.dbName = dbName;
    this.#store = createStore(dbName, 'kv');
  }

  get<T>(key: string): Promise<T | undefined> {
    return get<T>(key, this.#store);
  }

  setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    return setMany(entries.map(([k, v]) => [k, snapshot(v)]), this.#store);
  }

  delMany(ks: readonly string[]): Promise<void> {
    return delMany([...ks], this.#store);
  }

  async keys(prefix = ''): Promise<string[]> {
    const all = await keys<string>(this.#store);
    return all.filter((k) => typeof k === 'string' && k.startsWith(prefix)).sort();
  }

  async create(key: string, value: KvValue): Promise<boolean> {
    const v = snapshot(value);
    let created = false;
    // An existing value is put back unchanged (update always puts); only an empty key takes ours.
    await update(key, (old) => {
      if (old !== undefined) return old;
      created = true;
      return v;
    }, this.#store);
    return created;
  }
}
