/**
 * File backend (Deno, Node): one file per key under a root folder. Keys map to relative paths
 * ('adapters/name/v3/index' → adapters/name/v3/index.json or .bin). A write goes to a temporary
 * file in the same folder, is flushed, then renamed over the target — rename is atomic on POSIX,
 * so a reader sees the old file or the new one, never half of one. `setMany` writes in order, so
 * the last key (the manifest) commits the rest.
 */
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { KvStore, KvValue } from './kv.ts';
import { StoreError } from './errors.ts';

const SAFE_SEGMENT = /^[A-Za-z0-9._-]+$/;

function isBinary(v: KvValue): v is ArrayBuffer | ArrayBufferView {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

function bytesOf(v: ArrayBuffer | ArrayBufferView): Uint8Array {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

let tmpCounter = 0;

export class FileKv implements KvStore {
  readonly kind = 'files';
  readonly root: string;

  constructor(root: string) {
    this.root = root;
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

  async #writeAtomic(target: string, data: Uint8Array | string): Promise<void> {
    await mkdir(dirname(target), { recursive: true });
    const tmp = `${target}.tmp-${Date.now()}-${tmpCounter++}`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } catch (e) {
      await fh.close();
      await rm(tmp, { force: true });
      throw e;
    }
    await fh.close();
    await rename(tmp, target);
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
    for (const key of keys) {
      const base = this.#path(key);
      await rm(`${base}.json`, { force: true });
      await rm(`${base}.bin`, { force: true });
    }
  }

  async keys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as { code?: string }).code === 'ENOENT') return;
        throw e;
      }
      for (const ent of entries) {
        if (ent.isDirectory()) {
          await walk(join(dir, ent.name));
          continue;
        }
        const m = /^(.*)\.(json|bin)$/.exec(ent.name);
        if (m && !ent.name.includes('.tmp-')) {
          const key = relative(this.root, join(dir, m[1])).split(sep).join('/');
          if (key.startsWith(prefix)) out.push(key);
        }
      }
    };
    await walk(this.root);
    return [...new Set(out)].sort();
  }
}
