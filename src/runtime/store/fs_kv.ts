/**
 * File backend (Deno, Node): one file per key under a root folder. Keys map to relative paths
 * ('adapters/name/versions/3' → adapters/name/versions/3.json, binary values → .bin). A write goes
 * to a temporary file in the same folder, is flushed, then renamed over the target — rename is
 * atomic on POSIX, so a reader sees the old file or the new one, never half of one. `setMany`
 * writes in order. `create` hard-links a complete temporary file to the target: link(2) fails
 * with EEXIST when the target exists, so exactly one of several racing processes creates a key,
 * and nobody ever sees it half written (filesystems without hard links fall back to O_EXCL).
 *
 * Temporary files are named `<target>.tmp-<owner tag>-<n>` (owner.ts): a process killed mid-write
 * leaves one behind, and `sweep` removes those whose writer has ended (or that are old, where
 * that cannot be known); this process's own writes in flight are never touched.
 */
import { link, mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { KvStore, KvValue } from './kv.ts';
import { StoreError } from './errors.ts';
import { OWNER_TAG, ownerGone } from './owner.ts';

const SAFE_SEGMENT = /^[A-Za-z0-9._-]+$/;
const TMP = /\.tmp-([0-9a-z]+\.[0-9a-z]*)-[0-9]+$/;
/** Age after which a leftover whose writer cannot be checked is removed (1 h), and one whose pid
 * looks alive (a reused pid) is removed anyway (24 h): no single write takes that long. */
export const STALE_UNKNOWN_MS = 3600_000;
export const STALE_ALIVE_MS = 24 * 3600_000;

function isBinary(v: KvValue): v is ArrayBuffer | ArrayBufferView {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

function bytesOf(v: ArrayBuffer | ArrayBufferView): Uint8Array {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

const code = (e: unknown) => (e as { code?: string } | null)?.code;

let tmpCounter = 0;
/** This process's temporary files being written now (a sweep leaves them alone). */
const inFlight = new Set<string>();

/** Whether a leftover of writer `tag`, last modified at `mtimeMs`, can be removed. */
export async function staleLeftover(tag: string, mtimeMs: number, isOwnInFlight: boolean): Promise<boolean> {
  if (tag === OWNER_TAG) return !isOwnInFlight;
  const gone = await ownerGone(tag);
  if (gone === true) return true;
  return Date.now() - mtimeMs > (gone === false ? STALE_ALIVE_MS : STALE_UNKNOWN_MS);
}

export class FileKv implements KvStore {
  readonly kind = 'files';
  readonly root: string;
  readonly ownerTag = OWNER_TAG;

  constructor(root: string) {
    this.root = root;
  }

  ownerGone(tag: string): Promise<boolean | undefined> {
    return ownerGone(tag);
  }

  #path(key: string): string {
    const parts = key.split('/');
    for (const p of parts) {
      if (!SAFE_SEGMENT.test(p) || p === '.' || p === '..') throw new StoreError(`invalid key "${key}" for the file store at ${this.root}`);
    }
    return join(this.root, ...parts);
  }

  async get<T>(key: string): Promise<T | undefined> {
    const base = this.#path(key);
    try {
      return JSON.parse(await readFile(`${base}.json`, 'utf8')) as T;
    } catch (e) {
      if ((e as { code?: string }).code !== 'ENOENT') throw e;
    }
    try {
      const b = await readFile(`${base}.bin`);
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as T;
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Writes `data` to a new, flushed temporary file beside `target`; returns its path. */
  async #writeTmp(target: string, data: Uint8Array | string): Promise<string> {
    const tmp = `${target}.tmp-${OWNER_TAG}-${tmpCounter++}`;
    inFlight.add(tmp);
    for (let attempt = 0; ; attempt++) {
      await mkdir(dirname(target), { recursive: true });
      try {
        const fh = await open(tmp, 'wx');
        try {
          await fh.writeFile(data);
          await fh.sync();
        } finally {
          await fh.close();
        }
        return tmp;
      } catch (e) {
        await rm(tmp, { force: true });
        // A delete that emptied the folder may remove it between our mkdir and open: once more.
        if (code(e) === 'ENOENT' && attempt < 3) continue;
        inFlight.delete(tmp);
        throw e;
      }
    }
  }

  async #writeAtomic(target: string, data: Uint8Array | string): Promise<void> {
    const tmp = await this.#writeTmp(target, data);
    try {
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    } finally {
      inFlight.delete(tmp);
    }
  }

  async create(key: string, v: KvValue): Promise<boolean> {
    const base = this.#path(key);
    const [ext, other] = isBinary(v) ? ['.bin', '.json'] : ['.json', '.bin'];
    if (await exists(base + other)) return false;
    const target = base + ext;
    const tmp = await this.#writeTmp(target, isBinary(v) ? bytesOf(v) : JSON.stringify(v));
    try {
      await link(tmp, target);
      return true;
    } catch (e) {
      if (code(e) === 'EEXIST') return false;
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV'].includes(code(e) ?? '')) throw e;
      // No hard links here: an exclusive create of the target, then the content. A reader may
      // see it half written for a moment; the commit stays exclusive.
      let fh;
      try {
        fh = await open(target, 'wx');
      } catch (e2) {
        if (code(e2) === 'EEXIST') return false;
        throw e2;
      }
      try {
        await fh.writeFile(await readFile(tmp));
        await fh.sync();
      } finally {
        await fh.close();
      }
      return true;
    } finally {
      // The key is created (or not) by now; failing to tidy the temporary file must not say otherwise.
      await rm(tmp, { force: true }).catch(() => {});
      inFlight.delete(tmp);
    }
  }

  async setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    for (const [key, v] of entries) {
      const base = this.#path(key);
      if (isBinary(v)) {
        await this.#writeAtomic(`${base}.bin`, bytesOf(v));
        await rm(`${base}.json`, { force: true });
      } else {
        await this.#writeAtomic(`${base}.json`, JSON.stringify(v));
        await rm(`${base}.bin`, { force: true });
      }
    }
  }

  async delMany(keys: readonly string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const key of keys) {
      const base = this.#path(key);
      await rm(`${base}.json`, { force: true });
      await rm(`${base}.bin`, { force: true });
      dirs.add(dirname(base));
    }
    // Folders left empty (a deleted version's blobs) go too, so listings do not slow down over a
    // long run; a folder a writer has just filled again stays (ENOTEMPTY).
    for (const d of dirs) {
      if (d === this.root) continue;
      await rmdir(d).catch(() => {});
    }
  }

  /** Removes temporary files under `prefix` whose writer has ended (or that are old; see above). */
  async sweep(prefix = ''): Promise<void> {
    await this.#walk(prefix, async (dir, name) => {
      const m = TMP.exec(name);
      if (!m) return;
      const path = join(dir, name);
      try {
        if (await staleLeftover(m[1], (await stat(path)).mtimeMs, inFlight.has(path))) await rm(path, { force: true });
      } catch (e) {
        if (code(e) !== 'ENOENT') throw e; // renamed or removed meanwhile: not a leftover
      }
    });
  }

  async keys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    await this.#walk(prefix, (dir, name) => {
      const m = /^(.*)\.(json|bin)$/.exec(name);
      if (m && !name.includes('.tmp-')) {
        const key = relative(this.root, join(dir, m[1])).split(sep).join('/');
        if (key.startsWith(prefix)) out.push(key);
      }
    });
    return [...new Set(out)].sort();
  }

  /** Calls `f` for every file under the deepest folder that `prefix` names in full. */
  async #walk(prefix: string, f: (dir: string, name: string) => void | Promise<void>): Promise<void> {
    const segs = prefix.split('/').slice(0, -1);
    const start = segs.every((p) => SAFE_SEGMENT.test(p) && p !== '.' && p !== '..') ? join(this.root, ...segs) : this.root;
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return;
        throw e;
      }
      for (const ent of entries) {
        if (ent.isDirectory()) await walk(join(dir, ent.name));
        else await f(dir, ent.name);
      }
    };
    await walk(start);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (e) {
    if (code(e) === 'ENOENT') return false;
    throw e;
  }
}
