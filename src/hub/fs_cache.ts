/**
 * The Hugging Face cache folder (Deno and Node), in the layout Python's huggingface_hub reads and
 * writes, so either side reuses what the other downloaded:
 *
 *   <cache>/models--<org>--<name>/
 *     blobs/<etag>                      the bytes (etag: sha256 for LFS files, git sha1 otherwise)
 *     blobs/<etag>.incomplete           a download in progress; resumed from its length
 *     snapshots/<commit>/<file>         relative symlink to ../../blobs/<etag> (a copy where the
 *                                       file system refuses symlinks, as Python does on Windows)
 *     refs/<revision>                   the commit the revision (branch, tag) pointed at; no newline
 *     .no_exist/<commit>/<file>         empty: the file does not exist at that commit
 *
 * A blob is renamed into place only after its digest matched its etag, so a corrupted download
 * never looks complete (the .incomplete file is deleted: resuming it would only repeat the error).
 * Within a process one download per blob runs at a time; across processes Python's .locks/ are
 * not taken (two processes downloading the same blob at once may both append to its .incomplete
 * file — the digest check then refuses the result, and a retry succeeds).
 * Imported lazily by the loader, so browser bundles never load node:fs.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import type { ByteSource } from '../model/bytes.ts';
import { openFileSource } from '../model/bytes_fs.ts';
import { type CachedModel, etagHashKind, gitBlobHeader, type HubCache } from './cache.ts';
import { hubCacheDirFromEnv } from './env.ts';
import { HubError } from './errors.ts';
import { COMMIT_RE, type DownloadSink, fetchInto, type FetchIntoOptions, type FileMetadata, type HubRequest } from './http.ts';

/** The cache folder by Python's rules (HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME, ~/.cache). */
export function hubCacheDir(): string {
  return hubCacheDirFromEnv(homedir, join);
}

export function repoFolderName(repo: string): string {
  return `models--${repo.replaceAll('/', '--')}`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path); // follows symlinks: a dangling link is not a file
    return true;
  } catch {
    return false;
  }
}

/** Streams a file through sha256 (or git's sha1 with the blob header). */
async function fileDigest(path: string, kind: 'sha256' | 'git-sha1', size: number): Promise<string> {
  const h = createHash(kind === 'sha256' ? 'sha256' : 'sha1');
  if (kind === 'git-sha1') h.update(gitBlobHeader(size));
  for await (const chunk of createReadStream(path)) h.update(chunk as Uint8Array);
  return h.digest('hex');
}

/** Appends to blobs/<etag>.incomplete; its current length is where a resumed download starts. */
class FileSink implements DownloadSink {
  written: number;
  constructor(readonly path: string, private handle: Awaited<ReturnType<typeof open>>, written: number) {
    this.written = written;
  }
  static async open(path: string, maxSize: number): Promise<FileSink> {
    let size = 0;
    try {
      size = (await stat(path)).size;
    } catch { /* no partial file */ }
    // Longer than the blob can be: not a prefix of it, start over.
    const handle = await open(path, size > maxSize ? 'w' : 'a');
    return new FileSink(path, handle, size > maxSize ? 0 : size);
  }
  async write(chunk: Uint8Array): Promise<void> {
    let done = 0;
    while (done < chunk.byteLength) done += (await this.handle.write(chunk, done, chunk.byteLength - done)).bytesWritten;
    this.written += chunk.byteLength;
  }
  async truncate(): Promise<void> {
    await this.handle.truncate(0);
    await this.handle.close();
    this.handle = await open(this.path, 'a');
    this.written = 0;
  }
  close(): Promise<void> {
    return this.handle.close();
  }
}

/** Downloads in progress in this process, by blob path. */
const inflight = new Map<string, Promise<void>>();

export class FsHubCache implements HubCache {
  readonly location: string;
  constructor(location: string = hubCacheDir()) {
    this.location = location;
  }

  repoFolder(repo: string): string {
    return join(this.location, repoFolderName(repo));
  }

  snapshotFolder(repo: string, commit: string): string {
    return join(this.repoFolder(repo), 'snapshots', commit);
  }

  #pointer(repo: string, commit: string, file: string): string {
    return join(this.snapshotFolder(repo, commit), ...file.split('/'));
  }

  async commitOf(repo: string, revision: string): Promise<string | undefined> {
    try {
      // Python reads the ref without stripping; we tolerate a trailing newline another tool wrote.
      const commit = (await readFile(join(this.repoFolder(repo), 'refs', ...revision.split('/')), 'utf8')).trim();
      if (COMMIT_RE.test(commit)) return commit;
    } catch { /* no such ref */ }
    if (COMMIT_RE.test(revision)) return revision;
    return undefined;
  }

  async setRef(repo: string, revision: string, commit: string): Promise<void> {
    if (revision === commit) return;
    const path = join(this.repoFolder(repo), 'refs', ...revision.split('/'));
    await this.#io(repo, 'write a ref', async () => {
      await mkdir(dirname(path), { recursive: true });
      const old = await readFile(path, 'utf8').catch(() => undefined);
      if (old !== commit) await writeFile(path, commit);
    });
  }

  async open(repo: string, commit: string, file: string): Promise<ByteSource | undefined> {
    const path = this.#pointer(repo, commit, file);
    if (!(await exists(path))) return undefined;
    return openFileSource(path, `${repo}/${file}`);
  }

  async markMissing(repo: string, commit: string, file: string): Promise<void> {
    const path = join(this.repoFolder(repo), '.no_exist', commit, ...file.split('/'));
    await this.#io(repo, 'write .no_exist', async () => {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, '');
    });
  }

  async isMissing(repo: string, commit: string, file: string): Promise<boolean> {
    return exists(join(this.repoFolder(repo), '.no_exist', commit, ...file.split('/')));
  }

  async fetchFile(req: HubRequest, file: string, meta: FileMetadata, opts: FetchIntoOptions = {}): Promise<void> {
    // One download per blob in this process: a second load of the same file waits for the first
    // rather than appending to the same .incomplete file.
    const blobKey = join(this.repoFolder(req.repo), 'blobs', meta.etag);
    for (let busy = inflight.get(blobKey); busy; busy = inflight.get(blobKey)) await busy.catch(() => {});
    const work = this.#fetchFile(req, file, meta, opts);
    inflight.set(blobKey, work);
    try {
      await work;
    } finally {
      if (inflight.get(blobKey) === work) inflight.delete(blobKey);
    }
  }

  async #fetchFile(req: HubRequest, file: string, meta: FileMetadata, opts: FetchIntoOptions): Promise<void> {
    const pointer = this.#pointer(req.repo, meta.commit, file);
    if (await exists(pointer)) return;
    const blob = join(this.repoFolder(req.repo), 'blobs', meta.etag);
    if (!/^[\w.-]+$/.test(meta.etag)) throw new HubError('http', req.repo, `etag ${JSON.stringify(meta.etag)} cannot name a blob file`, { file });
    await this.#io(req.repo, 'create folders', async () => {
      await mkdir(dirname(blob), { recursive: true });
      await mkdir(dirname(pointer), { recursive: true });
    });
    if (!(await exists(blob))) {
      const incomplete = `${blob}.incomplete`;
      const sink = await this.#io(req.repo, 'open a download file', () => FileSink.open(incomplete, meta.size));
      try {
        await fetchInto(req, file, meta, sink, opts);
      } finally {
        await sink.close();
      }
      await this.#verify(req.repo, file, meta, incomplete);
      await rename(incomplete, blob);
    }
    await this.#link(req.repo, blob, pointer);
  }

  async #verify(repo: string, file: string, meta: FileMetadata, path: string): Promise<void> {
    const size = (await stat(path)).size;
    const kind = etagHashKind(meta.etag);
    const got = size !== meta.size ? undefined : kind ? await fileDigest(path, kind, size) : meta.etag;
    if (got === meta.etag) return;
    await unlink(path).catch(() => {});
    const what = got === undefined ? `${size} bytes, the Hub advertised ${meta.size}` : `${kind} ${got}, the Hub advertised ${meta.etag}`;
    throw new HubError('integrity', repo, `downloaded file does not match: ${what}; the partial file was deleted, try again`, { file, cacheDir: this.location });
  }

  /** snapshots/<commit>/<file> → ../../blobs/<etag> (one more ../ per folder in the file's path). */
  async #link(repo: string, blob: string, pointer: string): Promise<void> {
    await rm(pointer, { force: true }); // a dangling link left by a deleted blob
    try {
      await symlink(relative(dirname(pointer), blob).split(sep).join('/'), pointer);
    } catch {
      await this.#io(repo, 'copy a blob into its snapshot', () => copyFile(blob, pointer));
    }
  }

  async #io<T>(repo: string, what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw new HubError('cache', repo, `cannot ${what} in ${this.location}: ${(e as Error)?.message ?? e}`, { cacheDir: this.location, cause: e });
    }
  }

  async list(): Promise<CachedModel[]> {
    let names: string[];
    try {
      names = await readdir(this.location);
    } catch {
      return []; // no cache folder yet
    }
    const out: CachedModel[] = [];
    for (const name of names.sort()) {
      if (!name.startsWith('models--')) continue;
      const repo = name.slice('models--'.length).replaceAll('--', '/');
      const folder = join(this.location, name);
      const refs = new Map<string, string[]>();
      for (const ref of await walk(join(folder, 'refs'))) {
        const commit = (await readFile(join(folder, 'refs', ref), 'utf8').catch(() => '')).trim();
        refs.set(commit, [...(refs.get(commit) ?? []), ref]);
      }
      const snapshots = [];
      for (const commit of (await readdir(join(folder, 'snapshots')).catch(() => [] as string[])).sort()) {
        snapshots.push({ commit, refs: refs.get(commit) ?? [], files: await walk(join(folder, 'snapshots', commit)) });
      }
      let sizeBytes = 0;
      for (const b of await readdir(join(folder, 'blobs')).catch(() => [] as string[])) sizeBytes += (await lstat(join(folder, 'blobs', b))).size;
      out.push({ repo, snapshots, sizeBytes, location: folder });
    }
    return out;
  }

  async delete(repo: string): Promise<boolean> {
    const folder = this.repoFolder(repo);
    if (!(await exists(folder))) return false;
    await this.#io(repo, 'delete the repo folder', () => rm(folder, { recursive: true, force: true }));
    return true;
  }
}

/** Relative '/'-separated paths of the files (and links) under `dir`, sorted. */
async function walk(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.isDirectory()) out.push(...(await walk(join(dir, e.name), `${prefix}${e.name}/`)));
    else out.push(prefix + e.name);
  }
  return out.sort();
}

/** Is `path` an existing folder? */
export async function isFolder(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isDirectory(), () => false);
}

/** A file of a local folder in the Hub layout, or undefined when absent. */
export async function openFolderFile(dir: string, file: string): Promise<ByteSource | undefined> {
  const path = join(dir, ...file.split('/'));
  if (!(await stat(path).then((s) => s.isFile(), () => false))) return undefined;
  return openFileSource(path, `${dir}/${file}`);
}

/** Where a snapshot link points, for tests (undefined for a copied file). */
export async function linkTarget(path: string): Promise<string | undefined> {
  return (await lstat(path)).isSymbolicLink() ? readlink(path) : undefined;
}
