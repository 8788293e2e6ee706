/**
 * Versioned, durable records of named tensors plus metadata over a KvStore (IndexedDB in
 * browsers, files under Deno) — the mechanism under the adapter store and the checkpoint store.
 *
 * Layout of one record `name` under a prefix (e.g. "adapters"):
 *   <prefix>/<name>/manifest          { name, versions: Meta[] }   ← the commit point
 *   <prefix>/<name>/v<k>/index        { tensors: [{ name, shape, dtype, bytes, checksum }] }
 *   <prefix>/<name>/v<k>/t<i>         the bytes of tensor i (binary)
 * A save writes the tensors and the index first and the manifest last, in one `setMany` (one
 * IndexedDB transaction; ordered atomic renames on files), so a version is visible only when
 * completely written, and a failed or interrupted save leaves the previous versions loadable.
 * Blobs of a failed save are orphans, removed by the next save of that name. Loads verify
 * sizes and FNV-1a checksums, so a corrupt blob is reported, never returned.
 */
import { StoreCorruptError, StoreError, storeError, StoreNotFoundError } from './errors.ts';
import type { KvStore } from './kv.ts';

export type StoredDType = 'f32' | 'f16';

/** One stored tensor, as plain data (f16 as raw bits). */
export interface StoredTensor {
  name: string;
  shape: number[];
  dtype: StoredDType;
  data: Float32Array | Uint16Array;
}

/** What every version carries besides the caller's own metadata. */
export interface VersionMeta {
  name: string;
  version: number;
  /** ISO time of the save. */
  createdAt: string;
  bytes: number;
}

interface Manifest<M> {
  name: string;
  versions: (M & VersionMeta)[];
}

interface IndexEntry {
  name: string;
  shape: number[];
  dtype: StoredDType;
  bytes: number;
  checksum: number;
}

const NAME = /^[A-Za-z0-9._-]{1,128}$/;

/** FNV-1a over bytes (32 bit). */
export function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function bytesOf(a: Float32Array | Uint16Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function validateTensors(what0: string, tensors: readonly StoredTensor[]): void {
  const seen = new Set<string>();
  for (const t of tensors) {
    const what = `${what0} tensor "${t.name}"`;
    if (!t.name || seen.has(t.name)) throw new StoreError(`${what}: tensor names must be non-empty and unique`);
    seen.add(t.name);
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0)) throw new StoreError(`${what}: invalid shape [${t.shape.join(', ')}]`);
    const n = t.shape.reduce((a, b) => a * b, 1);
    const arrayOk = t.dtype === 'f32' ? t.data instanceof Float32Array : t.dtype === 'f16' ? t.data instanceof Uint16Array : false;
    if (!arrayOk) throw new StoreError(`${what}: dtype ${t.dtype} needs a ${t.dtype === 'f16' ? 'Uint16Array' : 'Float32Array'}`);
    if (t.data.length !== n) throw new StoreError(`${what}: ${t.data.length} values do not fill shape [${t.shape.join(', ')}]`);
  }
}

export class VersionedRecords<M extends object> {
  readonly kv: KvStore;
  /** Key prefix ("adapters", "checkpoints"). */
  readonly prefix: string;
  /** What one record is called in messages ("adapter", "checkpoint"). */
  readonly noun: string;
  #locks = new Map<string, Promise<unknown>>();

  constructor(kv: KvStore, prefix: string, noun: string) {
    this.kv = kv;
    this.prefix = prefix;
    this.noun = noun;
  }

  #checkName(name: string): void {
    if (!NAME.test(name)) throw new StoreError(`${this.noun} name "${name}" is invalid: use 1–128 of A–Z a–z 0–9 . _ -`);
  }

  /** Runs `f` after every earlier save/delete of `name` in this store has finished. */
  #serial<T>(name: string, f: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(name) ?? Promise.resolve();
    const next = prev.then(f, f);
    this.#locks.set(name, next.catch(() => {}));
    return next;
  }

  async #manifest(name: string): Promise<Manifest<M> | undefined> {
    try {
      return await this.kv.get<Manifest<M>>(`${this.prefix}/${name}/manifest`);
    } catch (e) {
      throw storeError(`reading the manifest of ${this.noun} "${name}"`, e);
    }
  }

  /** Save a new version (latest + 1). Resolves with its metadata once it is durable and visible. */
  save(name: string, tensors: readonly StoredTensor[], info: M): Promise<M & VersionMeta> {
    this.#checkName(name);
    validateTensors(`${this.noun} "${name}"`, tensors);
    return this.#serial(name, async () => {
      const manifest = (await this.#manifest(name)) ?? { name, versions: [] };
      const version = Math.max(0, ...manifest.versions.map((v) => v.version)) + 1;
      const prefix = `${this.prefix}/${name}/v${version}`;
      // Orphans of an earlier failed save of this version number would be overwritten anyway;
      // remove every blob no committed version references.
      await this.#removeOrphans(name, manifest);
      const index: IndexEntry[] = [];
      const entries: [string, unknown][] = [];
      let bytes = 0;
      tensors.forEach((t, i) => {
        const b = bytesOf(t.data);
        index.push({ name: t.name, shape: [...t.shape], dtype: t.dtype, bytes: b.byteLength, checksum: fnv1a(b) });
        entries.push([`${prefix}/t${i}`, b]);
        bytes += b.byteLength;
      });
      const meta = { ...structuredClone(info), name, version, createdAt: new Date().toISOString(), bytes } as M & VersionMeta;
      entries.push([`${prefix}/index`, { tensors: index }]);
      entries.push([`${this.prefix}/${name}/manifest`, { name, versions: [...manifest.versions, meta] } satisfies Manifest<M>]);
      try {
        await this.kv.setMany(entries);
      } catch (e) {
        throw storeError(`saving ${this.noun} "${name}" version ${version}`, e);
      }
      return meta;
    });
  }

  /** Load a version (default: the latest). */
  async load(name: string, version?: number): Promise<{ meta: M & VersionMeta; tensors: StoredTensor[] }> {
    this.#checkName(name);
    const manifest = await this.#manifest(name);
    const meta = version === undefined ? manifest?.versions.at(-1) : manifest?.versions.find((v) => v.version === version);
    if (!meta) throw new StoreNotFoundError(`${this.noun} "${name}"${version === undefined ? '' : ` version ${version}`}`);
    const prefix = `${this.prefix}/${name}/v${meta.version}`;
    try {
      const index = await this.kv.get<{ tensors: IndexEntry[] }>(`${prefix}/index`);
      if (!index) throw new StoreCorruptError(`${this.noun} "${name}" version ${meta.version}: index missing`);
      const tensors: StoredTensor[] = [];
      for (const [i, e] of index.tensors.entries()) {
        const what = `${this.noun} "${name}" version ${meta.version} tensor "${e.name}" (${prefix}/t${i})`;
        const raw = await this.kv.get<ArrayBuffer | Uint8Array>(`${prefix}/t${i}`);
        if (!raw) throw new StoreCorruptError(`${what}: data missing`);
        const b = raw instanceof ArrayBuffer ? new Uint8Array(raw) : new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
        if (b.byteLength !== e.bytes || fnv1a(b) !== e.checksum) throw new StoreCorruptError(`${what}: size or checksum mismatch`);
        const copy = b.slice().buffer;
        tensors.push({ name: e.name, shape: e.shape, dtype: e.dtype, data: e.dtype === 'f16' ? new Uint16Array(copy) : new Float32Array(copy) });
      }
      return { meta, tensors };
    } catch (e) {
      throw storeError(`loading ${this.noun} "${name}" version ${meta.version}`, e);
    }
  }

  /** Every version of a record, oldest first. */
  async versions(name: string): Promise<(M & VersionMeta)[]> {
    this.#checkName(name);
    return (await this.#manifest(name))?.versions ?? [];
  }

  /** The latest version of every record, by name. */
  async list(): Promise<(M & VersionMeta)[]> {
    const keys = await this.kv.keys(`${this.prefix}/`);
    const names = keys.filter((k) => k.endsWith('/manifest')).map((k) => k.slice(`${this.prefix}/`.length, -'/manifest'.length));
    const out: (M & VersionMeta)[] = [];
    for (const n of names.sort()) {
      const latest = (await this.#manifest(n))?.versions.at(-1);
      if (latest) out.push(latest);
    }
    return out;
  }

  /** Delete one version, or every version when `version` is omitted. */
  delete(name: string, version?: number): Promise<void> {
    this.#checkName(name);
    return this.#serial(name, async () => {
      const manifest = await this.#manifest(name);
      if (!manifest || (version !== undefined && !manifest.versions.some((v) => v.version === version))) {
        throw new StoreNotFoundError(`${this.noun} "${name}"${version === undefined ? '' : ` version ${version}`}`);
      }
      const keep = version === undefined ? [] : manifest.versions.filter((v) => v.version !== version);
      try {
        // Commit first (the manifest), then remove the blobs nothing references any more.
        if (keep.length > 0) await this.kv.setMany([[`${this.prefix}/${name}/manifest`, { name, versions: keep }]]);
        else await this.kv.delMany([`${this.prefix}/${name}/manifest`]);
        await this.#removeOrphans(name, { name, versions: keep });
      } catch (e) {
        throw storeError(`deleting ${this.noun} "${name}"`, e);
      }
    });
  }

  async #removeOrphans(name: string, manifest: Manifest<M>): Promise<void> {
    const live = new Set(manifest.versions.map((v) => `${this.prefix}/${name}/v${v.version}/`));
    const keys = await this.kv.keys(`${this.prefix}/${name}/v`);
    const dead = keys.filter((k) => ![...live].some((p) => k.startsWith(p)));
    if (dead.length > 0) await this.kv.delMany(dead);
  }
}
