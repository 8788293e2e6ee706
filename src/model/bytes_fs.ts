/**
 * File-system byte source for Deno and Node (node:fs/promises). Imported lazily by bytes.ts, so
 * browser bundles never load it. Reads go to the open handle at an offset: a 1 GB checkpoint is
 * never read whole.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ByteSource } from './bytes.ts';

class FileSource implements ByteSource {
  readonly fresh = true;
  #handle: FileHandle | null;
  constructor(handle: FileHandle, readonly size: number, readonly name: string) {
    this.#handle = handle;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > this.size) {
      throw new RangeError(`${this.name}: read of ${length} bytes at ${offset} is outside the ${this.size}-byte file`);
    }
    if (!this.#handle) throw new Error(`${this.name}: file is closed`);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.#handle.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new RangeError(`${this.name}: file ended after ${offset + done} bytes (changed while open?)`);
      done += bytesRead;
    }
    return out;
  }

  async close(): Promise<void> {
    const h = this.#handle;
    this.#handle = null;
    await h?.close();
  }
}

/** Opens a path (or file: URL) for random access. */
export async function openFileSource(path: string | URL, name?: string): Promise<ByteSource> {
  const p = path instanceof URL ? fileURLToPath(path) : path;
  const handle = await open(p, 'r');
  try {
    const { size } = await handle.stat();
    return new FileSource(handle, size, name ?? p);
  } catch (e) {
    await handle.close();
    throw e;
  }
}
