/**
 * A KvStore on NATS JetStream, so AdapterStore, CheckpointStore and the job checkpointer work
 * unchanged on every host of a fleet: each key is an entry of a KV bucket, and a binary value's
 * bytes are an object of an Object Store (chunked by NATS, 128 KiB a chunk, with a SHA-256 digest
 * the client verifies on read) that the KV entry points to. Plain values live in the entry itself.
 *
 * Keys: a store key 'checkpoints/job-1/v3/t0' becomes the KV key 'checkpoints.job-1.v3.t0' — one
 * subject token per segment, every character outside [A-Za-z0-9_-] escaped (=XX, =uXXXX; so '.' in a
 * name cannot split a token) — which lets `keys(prefix)` ask the server for one subtree only.
 *
 * Fencing. Every entry carries the epoch of its writer (a fleet job's delivery count; 0 for a
 * plain client), and every write is a compare-and-set on the entry's KV revision that is refused
 * (FencedError) when the entry holds a newer epoch. `claim(keys)` re-stamps a job's manifests
 * with the new owner's epoch as it takes the job over, so a host that was presumed dead and comes
 * back (SIGSTOP, then SIGCONT) is refused at its next manifest write, even before the new owner
 * has saved anything. Versioned records commit by *creating* a new key (records.ts), which no
 * entry's epoch can guard, so a claim also stamps the record's fence (`<prefix>/<name>/.fence`,
 * hidden from `keys`): every write under the record checks the fence first, and a create checks
 * it again after it landed and takes its key back when a newer owner claimed in between — so a
 * stale host's version either happened before the takeover or does not exist. A stale writer
 * may leave blobs of a version it never commits: they are orphans, which VersionedRecords
 * removes at the next save. Each binary write makes a new object
 * (named by key, epoch and a nonce), so two writers never share an object; the one an entry no
 * longer points to is deleted after the entry moved on.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { StoreCorruptError, StoreError } from '../runtime/store/errors.ts';
import type { KvStore, KvValue } from '../runtime/store/kv.ts';

/** A write refused because a newer owner of the job (a higher epoch) has written the key. */
export class FencedError extends StoreError {
  readonly key: string;
  readonly epoch: number;
  readonly ownerEpoch: number;
  constructor(key: string, epoch: number, ownerEpoch: number) {
    super(`write of "${key}" refused: it belongs to delivery epoch ${ownerEpoch}, this writer holds epoch ${epoch} (the job was taken over by another host)`, undefined, 'store-fenced');
    this.key = key;
    this.epoch = epoch;
    this.ownerEpoch = ownerEpoch;
  }
}

/** What one KV entry holds: a plain value, or a pointer to an object (bytes). */
type Envelope = { e: number; v: unknown } | { e: number; obj: string; size: number; digest: string };

const SAFE = /[A-Za-z0-9_-]/;

/**
 * One key segment as a subject token: UTF-16 code units outside [A-Za-z0-9_-] escaped as =XX
 * (below 256) or =uXXXX, so any string round-trips, lone surrogates included; '' is '=', which
 * escaping never produces alone.
 */
function encodeSegment(s: string): string {
  if (s === '') return '=';
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (SAFE.test(s[i])) out += s[i];
    else out += c < 256 ? `=${c.toString(16).toUpperCase().padStart(2, '0')}` : `=u${c.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return out;
}

function decodeSegment(t: string): string {
  if (t === '=') return '';
  let out = '';
  for (let i = 0; i < t.length; i++) {
    if (t[i] !== '=') out += t[i];
    else if (t[i + 1] === 'u') {
      out += String.fromCharCode(parseInt(t.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      out += String.fromCharCode(parseInt(t.slice(i + 1, i + 3), 16));
      i += 2;
    }
  }
  return out;
}

/** Store key → KV key. */
export function encodeKey(key: string): string {
  return key.split('/').map(encodeSegment).join('.');
}

/** KV key → store key. */
export function decodeKey(k: string): string {
  return k.split('.').map(decodeSegment).join('/');
}

function bytesOf(v: ArrayBuffer | ArrayBufferView): Uint8Array {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** JetStream's "wrong last sequence" (a CAS lost to another writer) — code 10071, or the create of a key that exists. */
function isCasConflict(e: unknown): boolean {
  const msg = String((e as Error)?.message ?? e);
  return /wrong last sequence|10071|key exists/i.test(msg);
}

let nonce = 0;
/** Last segment of a record's fence key. */
const FENCE = '.fence';
/** Object uploads in flight per setMany. */
const UPLOADS = 8;

export interface NatsKvOptions {
  /** The writer's epoch (a job's delivery count); 0 for a plain client. */
  epoch?: number;
}

export class NatsKv implements KvStore {
  readonly kind = 'nats';
  readonly kv: KV;
  readonly objects: ObjectStore;
  readonly epoch: number;

  constructor(kv: KV, objects: ObjectStore, opts: NatsKvOptions = {}) {
    this.kv = kv;
    this.objects = objects;
    this.epoch = opts.epoch ?? 0;
    if (!Number.isInteger(this.epoch) || this.epoch < 0) throw new StoreError(`NatsKv: epoch must be a non-negative integer, got ${this.epoch}`);
  }

  /** The same bucket and object store, writing with another epoch. */
  withEpoch(epoch: number): NatsKv {
    return new NatsKv(this.kv, this.objects, { epoch });
  }

  /** The fence of the record a key belongs to: `<first>/<second>/.fence`, or null for a shorter key. */
  static fenceOf(key: string): string | null {
    const parts = key.split('/');
    if (parts.length < 2 || parts.at(-1) === FENCE) return null;
    return `${parts[0]}/${parts[1]}/${FENCE}`;
  }

  /** Refused (FencedError) when the record's fence holds a newer epoch than this writer's. */
  async #checkFence(key: string): Promise<void> {
    const f = NatsKv.fenceOf(key);
    if (!f) return;
    const cur = await this.#entry(f);
    const owner = cur?.env?.e ?? 0;
    if (owner > this.epoch) throw new FencedError(key, this.epoch, owner);
  }

  async #entry(key: string): Promise<{ rev: number; env: Envelope } | null> {
    const e: KvEntry | null = await this.kv.get(encodeKey(key));
    if (!e || e.operation !== 'PUT') return e ? { rev: e.revision, env: null as unknown as Envelope } : null;
    return { rev: e.revision, env: e.json<Envelope>() };
  }

  async get<T>(key: string): Promise<T | undefined> {
    const cur = await this.#entry(key);
    if (!cur?.env) return undefined;
    const env = cur.env;
    if ('v' in env) return env.v as T;
    const info = await this.objects.info(env.obj);
    if (!info || info.deleted) throw new StoreCorruptError(`"${key}": object ${env.obj} missing from the object store`);
    if (info.digest !== env.digest || info.size !== env.size) throw new StoreCorruptError(`"${key}": object ${env.obj} does not match its entry (size or digest)`);
    // getBlob verifies the bytes against the object's SHA-256 digest.
    const b = await this.objects.getBlob(env.obj);
    if (!b || b.byteLength !== env.size) throw new StoreCorruptError(`"${key}": object ${env.obj} came back ${b ? `with ${b.byteLength} of ${env.size} bytes` : 'empty'}`);
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as T;
  }

  /**
   * Compare-and-set of one key to an envelope, to null (delete), or to a function of the current
   * envelope (nothing when the key is absent). Refused when the
   * entry holds a newer epoch; retried when another writer of an older or equal epoch got there
   * first (the entry is read again). Returns the envelope it replaced.
   */
  async #cas(key: string, make: Envelope | null | ((cur: Envelope) => Envelope)): Promise<Envelope | null> {
    const k = encodeKey(key);
    await this.#checkFence(key);
    for (let attempt = 0; attempt < 50; attempt++) {
      const cur = await this.#entry(key);
      const owner = cur?.env?.e ?? 0;
      if (owner > this.epoch) throw new FencedError(key, this.epoch, owner);
      if (typeof make === 'function' && !cur?.env) return null;
      const next = typeof make === 'function' ? make(cur!.env) : make;
      try {
        if (next === null) {
          if (cur?.env) await this.kv.delete(k, { previousSeq: cur.rev });
        } else if (cur) await this.kv.update(k, JSON.stringify(next), cur.rev);
        else await this.kv.create(k, JSON.stringify(next));
        return cur?.env ?? null;
      } catch (e) {
        if (!isCasConflict(e)) throw e;
      }
    }
    throw new StoreError(`"${key}": 50 compare-and-set attempts lost to other writers`);
  }

  async #dropObject(old: Envelope | null): Promise<void> {
    if (old && 'obj' in old) await this.objects.delete(old.obj).catch(() => {});
  }

  /** A new object with these bytes; its entry envelope. */
  async #upload(key: string, v: ArrayBuffer | ArrayBufferView): Promise<Envelope> {
    const name = `${key}#${this.epoch}#${Date.now().toString(36)}-${(nonce++).toString(36)}`;
    // A copy: the client may hold the array while it sends chunks, and the caller may mutate it.
    const info = await this.objects.putBlob({ name }, bytesOf(v).slice());
    return { e: this.epoch, obj: name, size: info.size, digest: info.digest };
  }

  /**
   * Uploads every binary value first, UPLOADS at a time (an object is invisible until an entry
   * points to it), then writes the entries in order, so each key becomes visible in order and only
   * complete. Objects of entries not written (a failure, a fenced write) are deleted.
   */
  async setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    for (const [key] of entries) encodeKey(key);
    const envs: (Envelope | undefined)[] = new Array(entries.length);
    let failure: unknown = null;
    let next = 0;
    const uploader = async () => {
      while (failure === null && next < entries.length) {
        const i = next++;
        const v = entries[i][1];
        if (!(v instanceof ArrayBuffer || ArrayBuffer.isView(v))) continue;
        try {
          envs[i] = await this.#upload(entries[i][0], v);
        } catch (e) {
          failure ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: UPLOADS }, uploader));
    let done = 0;
    try {
      if (failure !== null) throw failure;
      for (; done < entries.length; done++) {
        const [key, v] = entries[done];
        // JSON, as the file backend stores it (job checkpoints tag non-finite numbers themselves).
        const env = envs[done] ?? { e: this.epoch, v: v === undefined ? null : JSON.parse(JSON.stringify(v)) };
        await this.#dropObject(await this.#cas(key, env));
      }
    } catch (e) {
      for (const env of envs.slice(done)) await this.#dropObject(env ?? null);
      throw e;
    }
  }

  /**
   * The KV bucket's own create: the server refuses it when the key holds a value, so exactly one
   * of several racing writers (any host) wins. Binary values go to the object store first and
   * are dropped again when the create loses. A deleted key (a tombstone) may be created anew.
   */
  async create(key: string, v: KvValue): Promise<boolean> {
    const k = encodeKey(key);
    await this.#checkFence(key);
    let env: Envelope;
    let obj: string | null = null;
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
      obj = `${key}#${this.epoch}#${Date.now().toString(36)}-${(nonce++).toString(36)}`;
      const info = await this.objects.putBlob({ name: obj }, bytesOf(v).slice());
      env = { e: this.epoch, obj, size: info.size, digest: info.digest };
    } else {
      env = { e: this.epoch, v: v === undefined ? null : JSON.parse(JSON.stringify(v)) };
    }
    try {
      await this.kv.create(k, JSON.stringify(env));
    } catch (e) {
      if (obj) await this.objects.delete(obj).catch(() => {});
      if (isCasConflict(e)) return false;
      throw e;
    }
    try {
      await this.#checkFence(key);
    } catch (e) {
      // A newer owner claimed the record while this create was in flight: take the key back.
      await this.kv.delete(k).catch(() => {});
      if (obj) await this.objects.delete(obj).catch(() => {});
      throw e;
    }
    return true;
  }

  async delMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) await this.#dropObject(await this.#cas(key, null));
  }

  async keys(prefix = ''): Promise<string[]> {
    const parts = prefix.split('/');
    const whole = parts.slice(0, -1);
    const filter = whole.length > 0 ? `${whole.map(encodeSegment).join('.')}.>` : '>';
    const out: string[] = [];
    for await (const k of await this.kv.keys(filter)) {
      const key = decodeKey(k);
      if (key.startsWith(prefix) && key.split('/').at(-1) !== FENCE) out.push(key);
    }
    return [...new Set(out)].sort();
  }

  /**
   * Stamp each existing key with this writer's epoch (its value unchanged), so that writers of
   * older epochs are refused from now on; a FencedError when a newer epoch holds one already.
   */
  async claim(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const fence = NatsKv.fenceOf(key);
      if (fence) await this.#cas(fence, { e: this.epoch, v: null });
      await this.#cas(key, (cur) => ({ ...cur, e: this.epoch }));
    }
  }
}
