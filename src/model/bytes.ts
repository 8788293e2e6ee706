/**
 * Random-access byte sources for weight and config files: in-memory bytes, a Blob or File (read
 * by slicing, so a 1 GB file is never held whole), a URL (downloaded once, with progress), or a
 * path under Deno/Node (read at offsets through node:fs, imported lazily so browser bundles never
 * load it).
 *
 * A source reads exactly the bytes asked for or throws; callers wrap failures in their own typed
 * errors, which name the file.
 */

export interface ByteSource {
  /** File name or URL, for error messages. */
  readonly name: string;
  /** Total bytes. */
  readonly size: number;
  /** True when every read returns a new zero-offset buffer the caller owns; false when reads may be views. */
  readonly fresh: boolean;
  /** Exactly `length` bytes from `offset` (see `fresh`; never write to a view). */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Release a file handle, if any. Idempotent. */
  close(): Promise<void>;
}

/** What a weights or config file can be opened from. A string is a URL when it has a scheme (http:, https:, blob:, data:), else a path. */
export type ByteInput = ArrayBuffer | ArrayBufferView | Blob | URL | string;

export interface OpenOptions {
  /** Name used in errors (default: the path, URL, File name, or '<memory>'). */
  readonly name?: string;
  /** Download progress for URLs: bytes so far, and the total when the server sent Content-Length. */
  readonly onProgress?: (loaded: number, total: number | undefined) => void;
  /** fetch to use for URLs (default globalThis.fetch). */
  readonly fetch?: typeof fetch;
  readonly signal?: AbortSignal;
}

function checkRange(src: { size: number; name: string }, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > src.size) {
    throw new RangeError(`${src.name}: read of ${length} bytes at ${offset} is outside the ${src.size}-byte file`);
  }
}

/** Bytes already in memory: reads are views (no copy). */
export class MemorySource implements ByteSource {
  readonly fresh = false;
  readonly size: number;
  readonly #bytes: Uint8Array;
  constructor(bytes: ArrayBuffer | ArrayBufferView, readonly name = '<memory>') {
    this.#bytes = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.size = this.#bytes.byteLength;
  }
  read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    return Promise.resolve(this.#bytes.subarray(offset, offset + length));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A Blob or File: each read slices it, so only the bytes asked for are materialized. */
export class BlobSource implements ByteSource {
  readonly fresh = true;
  readonly size: number;
  constructor(readonly blob: Blob, readonly name = (blob as { name?: string }).name || '<blob>') {
    this.size = blob.size;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const buf = await this.blob.slice(offset, offset + length).arrayBuffer();
    if (buf.byteLength !== length) throw new RangeError(`${this.name}: short read (${buf.byteLength} of ${length} bytes at ${offset})`);
    return new Uint8Array(buf);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function isUrlString(s: string): boolean {
  return /^(https?|blob|data):/i.test(s);
}

/**
 * Downloads a URL into memory, reporting progress per chunk. With Content-Length the buffer is
 * allocated once; without it chunks are gathered and joined at the end.
 */
export async function fetchBytes(url: string, opts: OpenOptions = {}): Promise<Uint8Array> {
  const f = opts.fetch ?? globalThis.fetch;
  const res = await f(url, { signal: opts.signal });
  if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`.trim());
  // With a content-encoding, Content-Length counts the compressed bytes, not what the body yields.
  const encoded = (res.headers.get('content-encoding') ?? 'identity').toLowerCase() !== 'identity';
  const header = encoded ? null : res.headers.get('content-length');
  const declared = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  const total = declared !== undefined && Number.isSafeInteger(declared) ? declared : undefined;
  opts.onProgress?.(0, total);
  if (!res.body) {
    const all = new Uint8Array(await res.arrayBuffer());
    opts.onProgress?.(all.byteLength, total ?? all.byteLength);
    return all;
  }
  const reader = res.body.getReader();
  const buf = new Uint8Array(total ?? 0);
  let inBuf = 0; // bytes placed in the preallocated buffer
  const chunks: Uint8Array[] = []; // bytes beyond it (no or a wrong Content-Length)
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (chunks.length === 0 && inBuf + value.byteLength <= buf.byteLength) {
      buf.set(value, inBuf);
      inBuf += value.byteLength;
    } else chunks.push(value);
    loaded += value.byteLength;
    opts.onProgress?.(loaded, total);
  }
  if (chunks.length === 0) {
    if (total !== undefined && loaded !== total) throw new Error(`download ended after ${loaded} of ${total} bytes`);
    return buf.subarray(0, inBuf);
  }
  const joined = new Uint8Array(loaded);
  joined.set(buf.subarray(0, inBuf), 0);
  let at = inBuf;
  for (const c of chunks) {
    joined.set(c, at);
    at += c.byteLength;
  }
  return joined;
}

/** Opens any ByteInput as a random-access source. */
export async function openByteSource(input: ByteInput, opts: OpenOptions = {}): Promise<ByteSource> {
  if (input instanceof ArrayBuffer || ArrayBuffer.isView(input)) return new MemorySource(input, opts.name);
  if (typeof Blob !== 'undefined' && input instanceof Blob) return new BlobSource(input, opts.name);
  const url = input instanceof URL ? input : typeof input === 'string' && isUrlString(input) ? new URL(input) : undefined;
  if (url && url.protocol !== 'file:') return new MemorySource(await fetchBytes(url.href, opts), opts.name ?? url.href);
  const { openFileSource } = await import('./bytes_fs.ts');
  return openFileSource(url ?? (input as string), opts.name);
}

/** A whole file as text (UTF-8, invalid sequences rejected). */
export async function readText(input: ByteInput, opts: OpenOptions = {}): Promise<{ text: string; name: string }> {
  const src = await openByteSource(input, opts);
  try {
    const bytes = await src.read(0, src.size);
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), name: src.name };
  } finally {
    await src.close();
  }
}
