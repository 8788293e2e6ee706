/** Stores: the key-value backends and the versioned adapter store. */
export { AdapterStore } from './adapter_store.ts';
export type { AdapterInfo, AdapterMeta, AdapterTensor } from './adapter_store.ts';
export { CheckpointStore } from './checkpoint_store.ts';
export type { CheckpointInfo, CheckpointMeta } from './checkpoint_store.ts';
export { fnv1a, VersionedRecords } from './records.ts';
export type { StoredDType, StoredTensor, VersionMeta } from './records.ts';
export { StoreCorruptError, StoreError, StoreNotFoundError, StoreQuotaError } from './errors.ts';
export { MemoryKv } from './kv.ts';
export type { KvStore, KvValue } from './kv.ts';
export { IdbKv } from './idb_kv.ts';

/**
 * The default key-value store of this host: IndexedDB in browsers and browser Workers, files
 * under `dir` (default `.webtinker/` in the working directory) under Deno and Node.
 * The file backend is imported lazily so browser bundles never load node:fs.
 */
export async function defaultKv(dir = '.webtinker'): Promise<import('./kv.ts').KvStore> {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } }; indexedDB?: unknown };
  if (g.Deno || g.process?.versions?.node) {
    const { FileKv } = await import('./fs_kv.ts');
    return new FileKv(dir);
  }
  if (g.indexedDB) {
    const { IdbKv } = await import('./idb_kv.ts');
    return new IdbKv('webtinker');
  }
  const { MemoryKv } = await import('./kv.ts');
  return new MemoryKv();
}
