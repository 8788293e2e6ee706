/**
 * The Hub cache in a browser: Cache Storage (it survives reloads, is per origin, and hands back a
 * Blob the engine reads by slices, so a checkpoint is not held in JS memory once stored). Keys
 * mirror the folder layout of fs_cache.ts under a made-up origin (the entries are never fetched):
 *
 *   https://webtinker-hub.invalid/models--<org>--<name>/blobs/<etag>             the bytes
 *   https://webtinker-hub.invalid/models--<org>--<name>/snapshots/<commit>/<file> empty; x-blob: <etag>
 *   https://webtinker-hub.invalid/models--<org>--<name>/refs/<revision>          the commit, as text
 *   https://webtinker-hub.invalid/models--<org>--<name>/no_exist/<commit>/<file>  empty
 *
 * A download is held in memory until it is complete and its digest (WebCrypto) matches the etag;
 * only then is it stored, so a corrupted or partial file never enters the cache. A dropped
 * connection is resumed with a Range request from the bytes held; a reload mid-download starts
 * that file over (a partial file is not persisted). Cache Storage exists in Deno too, which is
 * where the tests exercise this class.
 */
import { BlobSource, type ByteSource } from '../model/bytes.ts';
import { type CachedModel, digestFor, type HubCache } from './cache.ts';
import { HubError } from './errors.ts';
import { COMMIT_RE, type DownloadSink, fetchInto, type FetchIntoOptions, type FileMetadata, type HubRequest } from './http.ts';

const ORIGIN = 'https://webtinker-hub.invalid';
export const DEFAULT_CACHE_NAME = 'webtinker-hub';

class MemorySink implements DownloadSink {
  chunks: Uint8Array[] = [];
  written = 0;
  write(chunk: Uint8Array): Promise<void> {
    this.chunks.push(chunk.slice());
    this.written += chunk.byteLength;
    return Promise.resolve();
  }
  truncate(): Promise<void> {
    this.chunks = [];
    this.written = 0;
    return Promise.resolve();
  }
  bytes(): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(this.written);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  }
}

function folder(repo: string): string {
  return `models--${repo.replaceAll('/', '--')}`;
}

function key(repo: string, ...parts: string[]): string {
  return `${ORIGIN}/${folder(repo)}/${parts.map((p) => p.split('/').map(encodeURIComponent).join('/')).join('/')}`;
}

/** The Hub cache of a browser page or Worker, in Cache Storage (`cacheName`); loadPretrained's default there. */
export class BrowserHubCache implements HubCache {
  readonly location: string;
  constructor(readonly cacheName = DEFAULT_CACHE_NAME, private readonly storage: CacheStorage = globalThis.caches) {
    this.location = `Cache Storage "${cacheName}"`;
    if (!storage) throw new HubError('cache', '<browser>', 'Cache Storage is not available here (needs a secure context: https or localhost)');
  }

  #cache(): Promise<Cache> {
    return this.storage.open(this.cacheName);
  }

  snapshotFolder(): undefined {
    return undefined;
  }

  async commitOf(repo: string, revision: string): Promise<string | undefined> {
    const res = await (await this.#cache()).match(key(repo, 'refs', revision));
    const commit = res ? (await res.text()).trim() : undefined;
    if (commit && COMMIT_RE.test(commit)) return commit;
    return COMMIT_RE.test(revision) ? revision : undefined;
  }

  async setRef(repo: string, revision: string, commit: string): Promise<void> {
    if (revision === commit) return;
    await (await this.#cache()).put(key(repo, 'refs', revision), new Response(commit));
  }

  async open(repo: string, commit: string, file: string): Promise<ByteSource | undefined> {
    const cache = await this.#cache();
    const pointer = await cache.match(key(repo, 'snapshots', commit, file));
    const etag = pointer?.headers.get('x-blob');
    if (!etag) return undefined;
    const blob = await cache.match(key(repo, 'blobs', etag));
    if (!blob) return undefined;
    return new BlobSource(await blob.blob(), `${repo}/${file}`);
  }

  async markMissing(repo: string, commit: string, file: string): Promise<void> {
    await (await this.#cache()).put(key(repo, 'no_exist', commit, file), new Response(''));
  }

  async isMissing(repo: string, commit: string, file: string): Promise<boolean> {
    return (await (await this.#cache()).match(key(repo, 'no_exist', commit, file))) !== undefined;
  }

  async fetchFile(req: HubRequest, file: string, meta: FileMetadata, opts: FetchIntoOptions = {}): Promise<void> {
    const cache = await this.#cache();
    const pointerKey = key(req.repo, 'snapshots', meta.commit, file);
    const blobKey = key(req.repo, 'blobs', meta.etag);
    if (!(await cache.match(blobKey))) {
      const sink = new MemorySink();
      await fetchInto(req, file, meta, sink, opts);
      const bytes = sink.bytes();
      const digest = await digestFor(meta.etag, bytes);
      if (bytes.byteLength !== meta.size || (digest !== undefined && digest !== meta.etag)) {
        const what = bytes.byteLength !== meta.size ? `${bytes.byteLength} bytes, the Hub advertised ${meta.size}` : `digest ${digest}, the Hub advertised ${meta.etag}`;
        throw new HubError('integrity', req.repo, `downloaded file does not match: ${what}; nothing was stored, try again`, { file, cacheDir: this.location });
      }
      await cache.put(blobKey, new Response(bytes, { headers: { 'content-length': String(bytes.byteLength) } }));
    }
    await cache.put(pointerKey, new Response('', { headers: { 'x-blob': meta.etag } }));
  }

  async list(): Promise<CachedModel[]> {
    const cache = await this.#cache();
    const byRepo = new Map<string, { refs: Map<string, string[]>; snaps: Map<string, string[]>; blobs: string[] }>();
    for (const req of await cache.keys()) {
      const path = new URL(req.url).pathname.split('/').slice(1).map(decodeURIComponent);
      const [top, kind, ...rest] = path;
      if (!top?.startsWith('models--')) continue;
      const repo = top.slice('models--'.length).replaceAll('--', '/');
      const r = byRepo.get(repo) ?? { refs: new Map<string, string[]>(), snaps: new Map<string, string[]>(), blobs: [] as string[] };
      byRepo.set(repo, r);
      if (kind === 'blobs') r.blobs.push(req.url);
      else if (kind === 'snapshots') r.snaps.set(rest[0], [...(r.snaps.get(rest[0]) ?? []), rest.slice(1).join('/')]);
      else if (kind === 'refs') {
        const commit = (await (await cache.match(req))?.text())?.trim() ?? '';
        r.refs.set(commit, [...(r.refs.get(commit) ?? []), rest.join('/')]);
      }
    }
    const out: CachedModel[] = [];
    for (const [repo, r] of [...byRepo].sort(([a], [b]) => (a < b ? -1 : 1))) {
      let sizeBytes = 0;
      for (const b of r.blobs) sizeBytes += Number((await cache.match(b))?.headers.get('content-length') ?? 0);
      const snapshots = [...r.snaps].sort().map(([commit, files]) => ({ commit, refs: r.refs.get(commit) ?? [], files: files.sort() }));
      out.push({ repo, snapshots, sizeBytes, location: `${this.location} ${ORIGIN}/${folder(repo)}/` });
    }
    return out;
  }

  async delete(repo: string): Promise<boolean> {
    const cache = await this.#cache();
    const prefix = `${ORIGIN}/${folder(repo)}/`;
    let any = false;
    for (const req of await cache.keys()) {
      if (req.url.startsWith(prefix)) any = (await cache.delete(req)) || any;
    }
    return any;
  }
}
