/**
 * The Hub's HTTP side, as Python's `huggingface_hub` uses it: a HEAD on
 * `{endpoint}/{repo}/resolve/{revision}/{file}` without following absolute redirects gives the
 * commit the revision points at (X-Repo-Commit), the blob's id (X-Linked-Etag for LFS files —
 * their sha256 — else the ETag, the git blob sha1), its size (X-Linked-Size, else Content-Length)
 * and where the bytes are (Location); then a GET of that location, resumed with `Range: bytes=N-`
 * when the connection drops. Plain fetch, so it runs in browsers, Deno and Node.
 *
 * Why not @huggingface/hub (2.17.5, checked under Deno 2.9 through node_modules: it imports and
 * runs): its `downloadFileToCacheDir` writes no refs/<revision>, names the snapshot folder after
 * the commit that last touched each file (Python names it after the revision's commit, so the two
 * caches would not share snapshots), restarts an interrupted download from zero, does not check the
 * sha256, and its `fileDownloadInfo` follows redirects, so for LFS files it reads the CDN's ETag
 * rather than the Hub's X-Linked-Etag. What we need from it is these two requests, written here.
 *
 * The token goes only to the Hub's own origin, never to the CDN a redirect points at.
 */
import { HubError } from './errors.ts';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';
export const COMMIT_RE = /^[0-9a-f]{40}$/;
const REPO_RE = /^[\w.-]+(\/[\w.-]+)?$/;

/** Where and how to ask the Hub. */
export interface HubRequest {
  readonly repo: string;
  readonly revision: string;
  /** Hub origin (default HF_ENDPOINT, else https://huggingface.co). */
  readonly endpoint: string;
  readonly token?: string;
  readonly fetch?: typeof fetch;
  readonly signal?: AbortSignal;
}

/** What the Hub says about one file at one revision. */
export interface FileMetadata {
  /** The commit the revision resolved to. */
  readonly commit: string;
  /** Blob id: the sha256 of an LFS file, else the git blob sha1 (quotes and W/ removed). */
  readonly etag: string;
  readonly size: number;
  /** Where to GET the bytes (the redirect target for LFS files). */
  readonly url: string;
}

/** Checks a repo id the way the Hub does (`org/name` or `name`, letters, digits, `-_.`, no `--` or `..`). */
export function checkRepoId(repo: string): void {
  if (typeof repo !== 'string' || !REPO_RE.test(repo) || repo.includes('--') || repo.includes('..') || repo.length > 96) {
    throw new HubError('bad-repo-id', String(repo), 'is not a Hub repo id (org/name: letters, digits, "-", "_", "."; no "--" or ".."), nor an existing folder');
  }
}

/** A revision: a branch, tag or commit name, possibly with '/' (refs/pr/1), never '..' or empty segments. */
export function checkRevision(repo: string, revision: string): void {
  const parts = typeof revision === 'string' ? revision.split('/') : [''];
  if (parts.some((p) => p === '' || p === '.' || p === '..') || /[\\\0]/.test(revision) || revision.length > 255) {
    throw new HubError('bad-revision', repo, `revision ${JSON.stringify(revision)} is not a branch, tag or commit name`);
  }
}

/** A file path inside a repo: relative, '/'-separated, no '..' or empty segments. */
export function checkRepoFile(repo: string, file: string): void {
  const parts = file.split('/');
  if (file === '' || file.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..') || file.includes('\\')) {
    throw new HubError('bad-file', repo, `file name ${JSON.stringify(file)} is not a relative path inside the repo`, { file });
  }
}

export function resolveUrl(req: HubRequest, file: string): string {
  const path = file.split('/').map(encodeURIComponent).join('/');
  return `${req.endpoint.replace(/\/+$/, '')}/${req.repo}/resolve/${encodeURIComponent(req.revision)}/${path}`;
}

export function normalizeEtag(etag: string | null): string | undefined {
  if (etag === null) return undefined;
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

function authFor(req: HubRequest, url: string): Record<string, string> {
  if (!req.token) return {};
  return new URL(url).origin === new URL(req.endpoint).origin ? { Authorization: `Bearer ${req.token}` } : {};
}

/** A fetch failure as a HubError: the caller's abort, or a network error. */
export function networkError(req: HubRequest, file: string, e: unknown): HubError {
  if (req.signal?.aborted) return new HubError('aborted', req.repo, 'aborted', { file, cause: e });
  return new HubError('network', req.repo, `cannot reach ${req.endpoint}: ${(e as Error)?.message ?? String(e)}`, { file, cause: e });
}

/** An HTTP error status as a HubError naming what was not found or how to pass a token. */
export function statusError(req: HubRequest, file: string, res: Response): HubError {
  const code = res.headers.get('x-error-code') ?? '';
  const status = res.status;
  if (status === 401 || status === 403) {
    const how = req.token
      ? 'the token sent was refused: check that it can read this repo and that you accepted its terms on the Hub'
      : 'it is gated or private: accept its terms on its Hub page, then pass a token (HF_TOKEN=hf_... in the environment, or { token })';
    return new HubError('gated', req.repo, `HTTP ${status}: ${how}`, { file, status });
  }
  if (status === 404) {
    if (code === 'RepoNotFound') return new HubError('not-found', req.repo, 'no such repo on the Hub (or it is private: pass a token)', { file, status });
    if (code === 'RevisionNotFound') return new HubError('not-found', req.repo, `no revision "${req.revision}"`, { file, status });
    return new HubError('not-found', req.repo, `no file "${file}" at revision "${req.revision}"`, { file, status });
  }
  return new HubError('http', req.repo, `HTTP ${status} ${res.statusText}`.trim() + ` from ${resolveUrl(req, file)}`, { file, status });
}

/**
 * HEAD on the resolve URL. Relative redirects (a renamed repo) are followed; an absolute one (the
 * CDN) is read, not followed, as Python does. A browser cannot read a redirect's headers (an
 * opaque redirect, which is what LFS files give): there the Hub's paths-info API tells the blob's
 * sha256 and size (pathsInfoMetadata).
 */
export async function fileMetadata(req: HubRequest, file: string): Promise<FileMetadata> {
  checkRepoFile(req.repo, file);
  const f = req.fetch ?? globalThis.fetch;
  let url = resolveUrl(req, file);
  let res: Response | undefined;
  for (let hop = 0; hop < 8; hop++) {
    try {
      res = await f(url, { method: 'HEAD', redirect: 'manual', signal: req.signal, headers: { ...authFor(req, url), 'Accept-Encoding': 'identity' } });
    } catch (e) {
      throw networkError(req, file, e);
    }
    if (res.type === 'opaqueredirect') return pathsInfoMetadata(req, file);
    const loc = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && loc && !/^[a-z][a-z0-9+.-]*:/i.test(loc) && !loc.startsWith('//')) {
      url = new URL(loc, url).href; // relative: the Hub moved the repo
      continue;
    }
    break;
  }
  if (!res) throw new HubError('http', req.repo, 'too many redirects', { file });
  const redirect = res.status >= 300 && res.status < 400;
  if (!res.ok && !redirect) throw statusError(req, file, res);
  const commit = res.headers.get('x-repo-commit') ?? (COMMIT_RE.test(req.revision) ? req.revision : undefined);
  // The commit names a cache folder: anything but 40 hex digits is refused, never used as a path.
  if (commit !== undefined && !COMMIT_RE.test(commit)) throw new HubError('http', req.repo, `X-Repo-Commit ${JSON.stringify(commit)} is not a commit sha`, { file });
  const etag = normalizeEtag(res.headers.get('x-linked-etag') ?? res.headers.get('etag'));
  const sizeHeader = res.headers.get('x-linked-size') ?? (redirect ? null : res.headers.get('content-length'));
  const size = sizeHeader !== null && /^\d+$/.test(sizeHeader) ? Number(sizeHeader) : undefined;
  if (!commit || !etag || size === undefined) {
    const missing = [!commit && 'X-Repo-Commit', !etag && 'ETag', size === undefined && 'size'].filter(Boolean).join(', ');
    throw new HubError('http', req.repo, `the Hub's answer for this file lacks ${missing} (a proxy in between?)`, { file, status: res.status });
  }
  const location = redirect ? res.headers.get('location') : null;
  return { commit, etag, size, url: location ? new URL(location, url).href : url };
}

/**
 * A browser's view of an LFS file: `POST {endpoint}/api/models/{repo}/paths-info/{revision}`
 * (what @huggingface/hub's pathsInfo asks) gives its sha256 (lfs.oid) and size; the bytes are then
 * fetched from the resolve URL, the browser following the redirect (and dropping the token at the
 * other origin). The commit is the revision itself: the loader asks every file after config.json
 * at the commit config.json resolved to.
 */
async function pathsInfoMetadata(req: HubRequest, file: string): Promise<FileMetadata> {
  const f = req.fetch ?? globalThis.fetch;
  if (!COMMIT_RE.test(req.revision)) {
    throw new HubError('http', req.repo, `is stored behind a redirect whose headers a browser cannot read; ask for it at a commit sha, not "${req.revision}"`, { file });
  }
  const api = `${req.endpoint.replace(/\/+$/, '')}/api/models/${req.repo}/paths-info/${encodeURIComponent(req.revision)}`;
  let res: Response;
  try {
    res = await f(api, { method: 'POST', signal: req.signal, headers: { ...authFor(req, api), 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify({ paths: [file], expand: false }) });
  } catch (e) {
    throw networkError(req, file, e);
  }
  if (!res.ok) throw statusError(req, file, res);
  let entries: unknown;
  try {
    entries = await res.json();
  } catch (e) {
    throw new HubError('http', req.repo, `paths-info answered with invalid JSON: ${(e as Error)?.message ?? e}`, { file });
  }
  type Entry = { path?: unknown; type?: unknown; oid?: unknown; size?: unknown; lfs?: { oid?: unknown; size?: unknown } };
  const entry = Array.isArray(entries) ? (entries as Entry[]).find((x) => x?.path === file && x?.type === 'file') : undefined;
  if (!entry) throw new HubError('not-found', req.repo, `no file "${file}" at revision "${req.revision}"`, { file, status: 404 });
  const etag = entry.lfs?.oid ?? entry.oid;
  const size = entry.lfs?.size ?? entry.size;
  if (typeof etag !== 'string' || typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new HubError('http', req.repo, 'paths-info lacks the file\'s oid or size', { file });
  }
  return { commit: req.revision, etag, size, url: resolveUrl(req, file) };
}

/** Where downloaded bytes go: a file being appended to, or chunks in memory. */
export interface DownloadSink {
  /** Bytes already held (a resumed download starts its Range here). */
  readonly written: number;
  write(chunk: Uint8Array): Promise<void>;
  /** Drop what is held (the server ignored our Range and sends from byte 0). */
  truncate(): Promise<void>;
}

export interface FetchIntoOptions {
  /** Connection failures tolerated mid-download, each resumed from the bytes held (default 5). */
  readonly retries?: number;
  readonly onProgress?: (loaded: number, total: number) => void;
}

/**
 * GETs `meta.url` into `sink` until it holds `meta.size` bytes, resuming with a Range request
 * after each dropped connection. Integrity (the hash) is the caller's check, once all is held.
 */
export async function fetchInto(req: HubRequest, file: string, meta: FileMetadata, sink: DownloadSink, opts: FetchIntoOptions = {}): Promise<void> {
  const f = req.fetch ?? globalThis.fetch;
  const retries = opts.retries ?? 5;
  let failures = 0;
  let lastError: unknown;
  while (sink.written < meta.size || meta.size === 0) {
    if (failures > retries) {
      throw new HubError('network', req.repo, `download failed ${failures} times (last: ${(lastError as Error)?.message ?? lastError}); ${sink.written} of ${meta.size} bytes kept for the next try`, { file, cause: lastError });
    }
    const from = sink.written;
    const headers: Record<string, string> = { ...authFor(req, meta.url), 'Accept-Encoding': 'identity' };
    if (from > 0) headers.Range = `bytes=${from}-`;
    let res: Response;
    try {
      res = await f(meta.url, { headers, signal: req.signal });
    } catch (e) {
      if (req.signal?.aborted) throw networkError(req, file, e);
      failures++;
      lastError = e;
      continue;
    }
    if (from > 0 && res.status === 416) throw new HubError('integrity', req.repo, `the server refuses a range from byte ${from}: the partial file is longer than the ${meta.size} bytes advertised`, { file, status: 416 });
    if (!res.ok) throw statusError(req, file, res);
    if (from > 0 && res.status === 200) await sink.truncate(); // Range ignored: the body starts at 0
    else if (from > 0) {
      const start = /^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '');
      if (!start || Number(start[1]) !== from) throw new HubError('http', req.repo, `asked for bytes from ${from}, got Content-Range ${res.headers.get('content-range')}`, { file });
    }
    opts.onProgress?.(sink.written, meta.size);
    try {
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (sink.written + value.byteLength > meta.size) {
            throw new HubError('integrity', req.repo, `the server sent more than the ${meta.size} bytes advertised`, { file });
          }
          await sink.write(value);
          opts.onProgress?.(sink.written, meta.size);
        }
      } else await sink.write(new Uint8Array(await res.arrayBuffer()));
    } catch (e) {
      if (e instanceof HubError) throw e;
      if (req.signal?.aborted) throw networkError(req, file, e);
      failures++;
      lastError = e;
      continue;
    }
    if (meta.size === 0) break;
    if (sink.written < meta.size) {
      failures++; // the body ended early without an error: resume from what we have
      lastError = new Error(`body ended after ${sink.written} of ${meta.size} bytes`);
    }
  }
}
