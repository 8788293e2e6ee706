/**
 * The key-value layer under the adapter and checkpoint stores, with three backends behind one
 * interface: IndexedDB (browsers, through idb-keyval), files (Deno, Node), and memory (tests, and
 * pages where IndexedDB is unavailable).
 *
 * Values are plain JSON data or binary (ArrayBuffer / typed arrays). `setMany` is the commit
 * primitive: IndexedDB writes it in one transaction; the file backend writes each value to a
 * temporary file and renames it into place, in order, so a later key (the manifest) becomes
 * visible only after the earlier ones (the tensors) are complete.
 *
 * `create` is the one primitive that is atomic against other writers — other store objects over
 * the same data, other tabs, other processes: it writes a key only if nobody has, so two writers
 * racing for one key get one true and one false (IndexedDB: a get and a put in one readwrite
 * transaction; files: a hard link of a complete temporary file, which fails when the target
 * exists; memory: a check in one synchronous step). The versioned records commit through it.
 */
export type KvValue = unknown;

/**
 * The key-value backend the stores write through: IndexedDB (IdbKv), files (under Deno and Node),
 * memory (MemoryKv), or the fleet's NATS bucket. Values are plain JSON data or binary.
 */
export interface KvStore {
  /** 'indexeddb' | 'files' | 'memory', or a wrapper's name. */
  readonly kind: string;
  get<T = unknown>(key: string): Promise<T | undefined>;
  /** Write the entries in order; each visible only when complete. */
  setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void>;
  delMany(keys: readonly string[]): Promise<void>;
  /** Keys starting with `prefix`, sorted. */
  keys(prefix?: string): Promise<string[]>;
  /**
   * Write `value` under `key` only if the key holds nothing, atomically against every other
   * writer; the value is visible complete or not at all. Resolves false, writing nothing, when
   * the key exists.
   */
  create(key: string, value: KvValue): Promise<boolean>;
  /**
   * A tag naming this writer (process), put into the names of data being written so that a
   * later sweep can ask whether its writer still runs (letters, digits and '.'); absent when a
   * backend cannot tell (then age decides).
   */
  readonly ownerTag?: string;
  /** Whether the writer `tag` names has certainly ended (true), surely runs (false), or unknown. */
  ownerGone?(tag: string): Promise<boolean | undefined>;
  /** Remove what killed writers left under `prefix` (the file backend's temporary files). */
  sweep?(prefix: string): Promise<void>;
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

  create(key: string, value: KvValue): Promise<boolean> {
    // Check and set in one synchronous step: no other call can run in between.
    if (this.#map.has(key)) return Promise.resolve(false);
    this.#map.set(key, snapshot(value));
    return Promise.resolve(true);
  }
}
