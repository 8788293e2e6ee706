/**
 * Versioned, durable records of named tensors plus metadata over a KvStore (IndexedDB in
 * browsers, files under Deno) — the mechanism under the adapter store and the checkpoint store.
 *
 * Layout of one record `name` under a prefix (e.g. "adapters"):
 *   <prefix>/<name>/versions/<k>          { meta, blobs: <save id>, tensors: [{ name, shape, dtype, bytes, checksum }] }
 *   <prefix>/<name>/blobs/<save id>/t<i>  the bytes of tensor i (binary)
 * Several writers may save one name at once — store objects in one page, tabs, processes over
 * one folder — so nothing is read, modified and written back. A save writes its tensors under a
 * save id of its own (time, random, owner), then takes the next version number by *creating* the
 * version's record (`KvStore.create`: atomic against every other writer); a writer that loses
 * the race tries the next number. The record is the commit point: a version is visible only once
 * its tensors are complete, and a failed or interrupted save leaves the others loadable. A failed
 * save deletes its own tensors; what a killed save left (no record names its save id) is removed
 * by a later save once its owner has certainly ended — or, where that cannot be known, after an
 * hour — never while it may still be writing. Loads verify sizes and FNV-1a checksums, so a
 * corrupt blob is reported, never returned.
 *
 * The layout before version records (one manifest listing every version, blobs under v<k>/) is
 * still read, and its versions can be deleted; new versions are numbered after them.
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

/** Host f32 tensors by name as stored tensors (flat, shape [length]), names optionally prefixed. */
export function storedF32(p: Readonly<Record<string, Float32Array>>, prefix = ''): StoredTensor[] {
  return Object.entries(p).map(([name, data]) => ({ name: `${prefix}${name}`, shape: [data.length], dtype: 'f32' as const, data }));
}

/** What every version carries besides the caller's own metadata. */
export interface VersionMeta {
  name: string;
  version: number;
  /** ISO time of the save. */
  createdAt: string;
  bytes: number;
}

/** The layout before version records: one manifest listing every version, blobs under v<k>/. */
interface LegacyManifest<M> {
  name: string;
  versions: (M & VersionMeta)[];
}

interface VersionRecord<M> {
  meta: M & VersionMeta;
  /** Save id: the tensors are <prefix>/<name>/blobs/<blobs>/t<i>. */
  blobs: string;
  tensors: IndexEntry[];
}

/** A version found: its metadata, where its tensors are, and what they should be. */
interface Located<M> {
  meta: M & VersionMeta;
  record: boolean;
  blobKey: (i: number) => string;
  index: () => Promise<IndexEntry[] | undefined>;
}

interface IndexEntry {
  name: string;
  shape: number[];
  dtype: StoredDType;
  bytes: number;
  checksum: number;
}

const NAME = /^[A-Za-z0-9._-]{1,128}$/;
const SAVE_ID = /^([0-9a-z]+)-[0-9a-z]+-([0-9a-z.]+)$/;
/** A leftover whose owner cannot be checked is removed after an hour; one whose owner seems
 * alive (perhaps a reused pid) after a day — no save takes that long. */
const STALE_UNKNOWN_MS = 3600_000;
const STALE_ALIVE_MS = 24 * 3600_000;

function randomBase36(): string {
  const r = crypto.getRandomValues(new Uint32Array(2));
  return r[0].toString(36) + r[1].toString(36);
}

/** Owner tag of this page or process when the backend has none (memory, IndexedDB). */
const PAGE_TAG = `p.${randomBase36()}`;
/** Blob groups of this module's saves in progress (`<prefix>/<name>/blobs/<save id>`). */
const inFlight = new Set<string>();

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
  /** Save ids known to be committed, per name (a record never changes, so this only grows). */
  #committed = new Map<string, Set<string>>();

  constructor(kv: KvStore, prefix: string, noun: string) {
    this.kv = kv;
    this.prefix = prefix;
    this.noun = noun;
  }

  #checkName(name: string): void {
    if (!NAME.test(name)) throw new StoreError(`${this.noun} name "${name}" is invalid: use 1–128 of A–Z a–z 0–9 . _ -`);
  }

  /**
   * Runs `f` after every earlier save/delete of `name` through this object has finished, so one
   * writer's saves are numbered in call order (other writers are handled by `create`).
   */
  #serial<T>(name: string, f: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(name) ?? Promise.resolve();
    const next = prev.then(f, f);
    this.#locks.set(name, next.catch(() => {}));
    return next;
  }

  async #legacy(name: string): Promise<LegacyManifest<M> | undefined> {
    return await this.kv.get<LegacyManifest<M>>(`${this.prefix}/${name}/manifest`);
  }

  /** Version numbers that have records, ascending (from the keys alone). */
  async #recordVersions(name: string): Promise<number[]> {
    const p = `${this.prefix}/${name}/versions/`;
    const ks = await this.kv.keys(p);
    return ks.map((k) => k.slice(p.length)).filter((k) => /^[1-9][0-9]*$/.test(k)).map(Number).sort((a, b) => a - b);
  }

  #record(name: string, version: number): Promise<VersionRecord<M> | undefined> {
    return this.kv.get<VersionRecord<M>>(`${this.prefix}/${name}/versions/${version}`);
  }

  #fromRecord(name: string, r: VersionRecord<M>): Located<M> {
    return { meta: r.meta, record: true, blobKey: (i) => `${this.prefix}/${name}/blobs/${r.blobs}/t${i}`, index: () => Promise.resolve(r.tensors) };
  }

  #fromLegacy(name: string, meta: M & VersionMeta): Located<M> {
    const p = `${this.prefix}/${name}/v${meta.version}`;
    return { meta, record: false, blobKey: (i) => `${p}/t${i}`, index: async () => (await this.kv.get<{ tensors: IndexEntry[] }>(`${p}/index`))?.tensors };
  }

  /** A version (default: the latest), or undefined. */
  async #find(name: string, version?: number): Promise<Located<M> | undefined> {
    const legacy = (await this.#legacy(name))?.versions ?? [];
    if (version !== undefined) {
      const r = await this.#record(name, version);
      if (r) return this.#fromRecord(name, r);
      const m = legacy.find((v) => v.version === version);
      return m && this.#fromLegacy(name, m);
    }
    const recs = await this.#recordVersions(name);
    const legacyLatest = legacy.reduce<(M & VersionMeta) | undefined>((a, v) => (a && a.version > v.version ? a : v), undefined);
    // Newest first; a record deleted since the listing is skipped.
    for (const k of recs.reverse()) {
      if (legacyLatest && legacyLatest.version > k) break;
      const r = await this.#record(name, k);
      if (r) return this.#fromRecord(name, r);
    }
    return legacyLatest && this.#fromLegacy(name, legacyLatest);
  }

  /** Every version, oldest first. */
  async #all(name: string): Promise<Located<M>[]> {
    const legacy = (await this.#legacy(name))?.versions ?? [];
    const recs = await Promise.all((await this.#recordVersions(name)).map((k) => this.#record(name, k)));
    const out = [...legacy.map((m) => this.#fromLegacy(name, m)), ...recs.filter((r) => r !== undefined).map((r) => this.#fromRecord(name, r))];
    return out.sort((a, b) => a.meta.version - b.meta.version);
  }

  /** Save a new version (latest + 1). Resolves with its metadata once it is durable and visible. */
  save(name: string, tensors: readonly StoredTensor[], info: M): Promise<M & VersionMeta> {
    this.#checkName(name);
    validateTensors(`${this.noun} "${name}"`, tensors);
    return this.#serial(name, () => this.#save(name, tensors, info));
  }

  async #save(name: string, tensors: readonly StoredTensor[], info: M): Promise<M & VersionMeta> {
    const what = `saving ${this.noun} "${name}"`;
    const saveId = `${Date.now().toString(36)}-${randomBase36()}-${this.kv.ownerTag ?? PAGE_TAG}`;
    const group = `${this.prefix}/${name}/blobs/${saveId}`;
    const index: IndexEntry[] = [];
    const entries: [string, unknown][] = [];
    let bytes = 0;
    tensors.forEach((t, i) => {
      const b = bytesOf(t.data);
      index.push({ name: t.name, shape: [...t.shape], dtype: t.dtype, bytes: b.byteLength, checksum: fnv1a(b) });
      entries.push([`${group}/t${i}`, b]);
      bytes += b.byteLength;
    });
    const base = { ...structuredClone(info), name, createdAt: new Date().toISOString(), bytes };
    inFlight.add(group);
    let version = 0;
    try {
      await this.#sweep(name);
      await this.kv.setMany(entries);
      for (let attempt = 0; ; attempt++) {
        const legacy = (await this.#legacy(name))?.versions ?? [];
        version = Math.max(version, ...legacy.map((v) => v.version), ...(await this.#recordVersions(name))) + 1;
        const meta = { ...base, version } as M & VersionMeta;
        if (await this.kv.create(`${this.prefix}/${name}/versions/${version}`, { meta, blobs: saveId, tensors: index } satisfies VersionRecord<M>)) {
          this.#committed.get(name)?.add(saveId);
          return meta;
        }
        if (attempt >= 1000) throw new StoreError(`${what}: every version number tried was taken by another writer (${attempt + 1} tries)`);
      }
    } catch (e) {
      // Only this save's own tensors: what other saves wrote, committed or in flight, stays.
      await this.kv.delMany(entries.map(([k]) => k)).catch(() => {});
      throw storeError(version > 0 ? `${what} (as version ${version})` : what, e);
    } finally {
      inFlight.delete(group);
    }
  }

  /** Load a version (default: the latest). */
  async load(name: string, version?: number): Promise<{ meta: M & VersionMeta; tensors: StoredTensor[] }> {
    this.#checkName(name);
    for (let attempt = 0; ; attempt++) {
      let found: Located<M> | undefined;
      try {
        found = await this.#find(name, version);
      } catch (e) {
        throw storeError(`reading the versions of ${this.noun} "${name}"`, e);
      }
      if (!found) throw new StoreNotFoundError(`${this.noun} "${name}"${version === undefined ? '' : ` version ${version}`}`);
      try {
        return { meta: found.meta, tensors: await this.#read(name, found) };
      } catch (e) {
        // Deleted by another writer while we read it: the latest is looked up again; a version
        // asked for by number is reported not found.
        const gone = e instanceof StoreCorruptError && found.record && !(await this.#record(name, found.meta.version).catch(() => found));
        if (gone && version === undefined && attempt < 5) continue;
        if (gone) throw new StoreNotFoundError(`${this.noun} "${name}" version ${found.meta.version} (deleted while loading)`);
        throw storeError(`loading ${this.noun} "${name}" version ${found.meta.version}`, e);
      }
    }
  }

  async #read(name: string, found: Located<M>): Promise<StoredTensor[]> {
    const v = found.meta.version;
    const index = await found.index();
    if (!index) throw new StoreCorruptError(`${this.noun} "${name}" version ${v}: index missing`);
    const tensors: StoredTensor[] = [];
    for (const [i, e] of index.entries()) {
      const what = `${this.noun} "${name}" version ${v} tensor "${e.name}" (${found.blobKey(i)})`;
      const raw = await this.kv.get<ArrayBuffer | Uint8Array>(found.blobKey(i));
      if (!raw) throw new StoreCorruptError(`${what}: data missing`);
      const b = raw instanceof ArrayBuffer ? new Uint8Array(raw) : new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
      if (b.byteLength !== e.bytes || fnv1a(b) !== e.checksum) throw new StoreCorruptError(`${what}: size or checksum mismatch`);
      const copy = b.slice().buffer;
      tensors.push({ name: e.name, shape: e.shape, dtype: e.dtype, data: e.dtype === 'f16' ? new Uint16Array(copy) : new Float32Array(copy) });
    }
    return tensors;
  }

  /** Every version of a record, oldest first. */
  async versions(name: string): Promise<(M & VersionMeta)[]> {
    this.#checkName(name);
    try {
      return (await this.#all(name)).map((l) => l.meta);
    } catch (e) {
      throw storeError(`reading the versions of ${this.noun} "${name}"`, e);
    }
  }

  /** The latest version of every record, by name. */
  async list(): Promise<(M & VersionMeta)[]> {
    const keys = await this.kv.keys(`${this.prefix}/`);
    const names = new Set<string>();
    for (const k of keys) {
      const m = /^([^/]+)\/(manifest|versions\/[0-9]+)$/.exec(k.slice(`${this.prefix}/`.length));
      if (m) names.add(m[1]);
    }
    const out: (M & VersionMeta)[] = [];
    for (const n of [...names].sort()) {
      const latest = await this.#find(n);
      if (latest) out.push(latest.meta);
    }
    return out;
  }

  /** Delete one version, or every version when `version` is omitted. */
  delete(name: string, version?: number): Promise<void> {
    this.#checkName(name);
    return this.#serial(name, async () => {
      const what = `deleting ${this.noun} "${name}"`;
      let targets: Located<M>[];
      try {
        targets = version === undefined ? await this.#all(name) : [await this.#find(name, version)].filter((l) => l !== undefined);
      } catch (e) {
        throw storeError(what, e);
      }
      if (targets.length === 0) throw new StoreNotFoundError(`${this.noun} "${name}"${version === undefined ? '' : ` version ${version}`}`);
      try {
        for (const t of targets) await this.#deleteOne(name, t);
      } catch (e) {
        throw storeError(what, e);
      }
    });
  }

  /** Uncommit first (the record, or the legacy manifest's entry), then remove the tensors. */
  async #deleteOne(name: string, t: Located<M>): Promise<void> {
    const v = t.meta.version;
    if (t.record) {
      const index = await t.index();
      await this.kv.delMany([`${this.prefix}/${name}/versions/${v}`]);
      await this.kv.delMany((index ?? []).map((_, i) => t.blobKey(i)));
      return;
    }
    const legacy = await this.#legacy(name);
    const keep = (legacy?.versions ?? []).filter((m) => m.version !== v);
    if (keep.length > 0) await this.kv.setMany([[`${this.prefix}/${name}/manifest`, { name, versions: keep } satisfies LegacyManifest<M>]]);
    else await this.kv.delMany([`${this.prefix}/${name}/manifest`]);
    await this.kv.delMany(await this.kv.keys(`${this.prefix}/${name}/v${v}/`));
  }

  /**
   * Removes what killed or failed saves of `name` left: tensors no record names whose owner has
   * ended (see the header), legacy v<k>/ folders the legacy manifest does not list, and the
   * backend's own leftovers (temporary files).
   */
  async #sweep(name: string): Promise<void> {
    const base = `${this.prefix}/${name}`;
    // Which groups are stale is judged before the records are read: a group whose save was in
    // flight then is kept; one that was not had committed before the records are read (the save
    // leaves the in-flight set only after its record exists), or never will.
    const groups = new Map<string, string[]>();
    for (const k of await this.kv.keys(`${base}/blobs/`)) {
      const id = k.slice(`${base}/blobs/`.length).split('/')[0];
      groups.set(id, [...(groups.get(id) ?? []), k]);
    }
    const known = this.#committed.get(name) ?? new Set<string>();
    this.#committed.set(name, known);
    const stale: [string, string[]][] = [];
    for (const [id, ks] of groups) if (!known.has(id) && (await this.#stale(`${base}/blobs/${id}`, id))) stale.push([id, ks]);
    if (stale.length > 0) {
      // Only groups not yet known committed send us to the records (each save would otherwise
      // read every record of the name).
      for (const r of await Promise.all((await this.#recordVersions(name)).map((k) => this.#record(name, k)))) if (r) known.add(r.blobs);
      for (const [id, ks] of stale) if (!known.has(id)) await this.kv.delMany(ks);
    }
    const legacyKeys = (await this.kv.keys(`${base}/v`)).filter((k) => /^v[0-9]+\//.test(k.slice(base.length + 1)));
    if (legacyKeys.length > 0) {
      const live = new Set(((await this.#legacy(name))?.versions ?? []).map((v) => `${base}/v${v.version}/`));
      const dead = legacyKeys.filter((k) => ![...live].some((p) => k.startsWith(p)));
      if (dead.length > 0) await this.kv.delMany(dead);
    }
    await this.kv.sweep?.(`${base}/`);
  }

  /** Whether an uncommitted group of tensors can go: its save is not in flight. */
  async #stale(group: string, saveId: string): Promise<boolean> {
    const m = SAVE_ID.exec(saveId);
    if (!m) return false;
    if (m[2] === (this.kv.ownerTag ?? PAGE_TAG)) return !inFlight.has(group);
    const gone = this.kv.ownerGone ? await this.kv.ownerGone(m[2]) : undefined;
    if (gone === true) return true;
    return Date.now() - parseInt(m[1], 36) > (gone === false ? STALE_ALIVE_MS : STALE_UNKNOWN_MS);
  }
}
