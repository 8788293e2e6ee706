/**
 * The key-value layer under the adapter and checkpoint stores, with three backends behind one
 * interface: IndexedDB (browsers, through idb-keyval), files (Deno, Node), and memory (tests, and
 * pages where IndexedDB is unavailable).
 *
 * Values are plain JSON data or binary (ArrayBuffer / typed arrays). `setMany` is the commit
 * primitive: IndexedDB writes it in one transaction; the file backend writes each value to a
 * temporary file and renames it into place, in order, so a later key (the manifest) becomes
 * visible only after the earlier ones (the tensors) are complete.
 */
export type KvValue = unknown;

export interface KvStore {
  /** 'indexeddb' | 'files' | 'memory', or a wrapper's name. */
  readonly kind: string;
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Write the entries in order; each visible only when complete. */
  setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void>;
  delMany(keys: readonly string[]): Promise<void>;
  /** Keys starting with `prefix`, sorted. */
  keys(prefix?: string): Promise<string[]>;
}

/** Copy binary values so a caller mutating its array afterwards cannot change what was stored. */
export function snapshot(v: KvValue): KvValue {
  if (v instanceof ArrayBuffer) return v.slice(0);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice().buffer;
  return structuredClone(v);
}

/** In-memory store (values are structured-cloned in and out, as IndexedDB would). */
export class MemoryKv implements KvStore {
  readonly kind = 'memory';
  #map = new Map<string, KvValue>();

  get<T>(key: string): Promise<T | undefined> {
    const v = this.#map.get(key);
    return Promise.resolve(v === undefined ? undefined : (structuredClone(v) as T));
  }

  setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    for (const [k, v] of entries) this.#map.set(k, snapshot(v));
    return Promise.resolve();
  }

  delMany(keys: readonly string[]): Promise<void> {
    for (const k of keys) this.#map.delete(k);
    return Promise.resolve();
  }

  keys(prefix = ''): Promise<string[]> {
    return Promise.resolve([...this.#map.keys()].filter((k) => k.startsWith(prefix)).sort());
  }
}
