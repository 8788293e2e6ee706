/** Stores: the key-value backends and the versioned adapter store. */
export { AdapterStore } from './adapter_store.ts';
export type { AdapterInfo, AdapterMeta, AdapterTensor } from './adapter_store.ts';
export { CheckpointStore } from './checkpoint_store.ts';
export type { CheckpointInfo, CheckpointMeta } from './checkpoint_store.ts';
export { fnv1a, VersionedRecords } from './records.ts';
export type { StoredDType, StoredTensor, VersionMeta } from './records.ts';
export { StoreCorruptError, StoreError, StoreNotFoundError, StoreQuotaError } from './errors.ts';
import { IdbKv } from './idb_kv.ts';
import { type KvStore, MemoryKv } from './kv.ts';

export { IdbKv, MemoryKv };
export type { KvStore };
export type { KvValue } from './kv.ts';

/**
 * The default key-value store of this host: IndexedDB in browsers and browser Workers, files
 * under `dir` (default `.webtinker/` in the working directory) under Deno and Node.
 * The file backend is imported lazily so browser bundles never load node:fs.
 */
export async function defaultKv(dir = '.webtinker'): Promise<KvStore> {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } }; indexedDB?: unknown };
  if (g.Deno || g.process?.versions?.node) {
    const { FileKv } = await import('./fs_kv.ts');
    return new FileKv(dir);
  }
  return g.indexedDB ? new IdbKv('webtinker') : new MemoryKv();
}
