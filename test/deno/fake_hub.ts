/**
 * A fake Hugging Face Hub on 127.0.0.1 for the loader's tests: it answers the resolve endpoint as
 * the Hub does (what huggingface_hub's get_hf_file_metadata and our http.ts read), with repos,
 * branches and commits the test builds.
 *
 *   HEAD|GET /{repo}/resolve/{revision}/{path}
 *     regular file → 200, ETag "<git blob sha1>", X-Repo-Commit, Content-Length (GET: the body)
 *     LFS file (*.safetensors) → 302 to http://127.0.0.1:<port>/cdn/<sha256> (absolute, so it is
 *       not followed by the HEAD), X-Linked-Etag "<sha256>", X-Linked-Size, X-Repo-Commit
 *     gated repo without the right Bearer token → 401, X-Error-Code: GatedRepo
 *     unknown repo / revision / file → 404, X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound
 *   GET /cdn/<sha256>: the bytes, with Range (206 + Content-Range)
 *   POST /api/models/{repo}/paths-info/{revision} {"paths": [...]}: [{type, path, oid, size, lfs?}]
 *
 * Faults for tests: `dropOnce` (a sha256 whose next full-body GET sends half the body, then the
 * connection is cut), `holdOnce` (half the body, then nothing until stop()), `corrupt` (a sha256 served with other bytes of the same length). Every
 * request is logged (method, path, Range) so tests can check what was asked.
 */
import { createHash } from 'node:crypto';

export interface FakeRepo {
  /** Branch (or tag) → commit sha. */
  readonly refs: Map<string, string>;
  /** Commit sha → files. */
  readonly commits: Map<string, Map<string, Uint8Array>>;
  /** When set, requests need `Authorization: Bearer <token>`. */
  gatedToken?: string;
}

export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly range: string | null;
  readonly auth: string | null;
}

let commitCounter = 0;
/** A new 40-hex commit id (deterministic per process). */
export function newCommit(): string {
  return createHash('sha1').update(`commit ${commitCounter++}`).digest('hex');
}

export function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

export function gitSha1(b: Uint8Array): string {
  return createHash('sha1').update(`blob ${b.byteLength}\0`).update(b).digest('hex');
}

export class FakeHub {
  readonly repos = new Map<string, FakeRepo>();
  readonly log: LoggedRequest[] = [];
  readonly dropOnce = new Set<string>();
  readonly corrupt = new Set<string>();
  /** A sha256 whose next full-body GET sends half the body, then stalls until stop(). */
  readonly holdOnce = new Set<string>();
  readonly #released = Promise.withResolvers<void>();
  readonly #blobs = new Map<string, Uint8Array>();
  #servers: Deno.HttpServer[] = [];
  #ac = new AbortController();
  /** The Hub's origin. */
  url = '';
  /** The CDN's origin: another port, so another origin, as huggingface.co and its CDN are. */
  cdnUrl = '';

  /**
   * `cdnHost`: the host name redirects to the CDN use. huggingface_hub ≥ 1.x follows a redirect to
   * the same host name (any port), so its interop check names the CDN 'localhost' (→ 127.0.0.1).
   */
  constructor(readonly cdnHost = '127.0.0.1') {}

  async start(): Promise<void> {
    const serve = async () => {
      const ready = Promise.withResolvers<void>();
      const s = Deno.serve({ hostname: '127.0.0.1', port: 0, signal: this.#ac.signal, onListen: () => ready.resolve(), onError: () => new Response(null, { status: 500 }) }, (req) => this.#handle(req));
      await ready.promise;
      this.#servers.push(s);
      return (s.addr as Deno.NetAddr).port;
    };
    this.url = `http://127.0.0.1:${await serve()}`;
    this.cdnUrl = `http://${this.cdnHost}:${await serve()}`;
  }

  async stop(): Promise<void> {
    this.#released.resolve();
    this.#ac.abort();
    await Promise.all(this.#servers.map((s) => s.finished));
  }

  /** Adds a commit with `files` to `repo`, pointing `branch` at it; returns the commit sha. */
  commit(repo: string, files: Record<string, Uint8Array>, branch = 'main'): string {
    const r = this.repos.get(repo) ?? { refs: new Map(), commits: new Map() };
    this.repos.set(repo, r);
    const sha = newCommit();
    r.commits.set(sha, new Map(Object.entries(files)));
    r.refs.set(branch, sha);
    for (const b of Object.values(files)) this.#blobs.set(sha256(b), b);
    return sha;
  }

  #handle(req: Request): Response | Promise<Response> {
    const url = new URL(req.url);
    this.log.push({ method: req.method, path: decodeURIComponent(url.pathname), range: req.headers.get('range'), auth: req.headers.get('authorization') });
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname);
    if (cdn) return this.#serveBlob(req, cdn[1]);
    const info = /^\/api\/models\/([^/]+(?:\/[^/]+)?)\/paths-info\/([^/]+)$/.exec(url.pathname);
    if (info && req.method === 'POST') return this.#pathsInfo(req, info[1], decodeURIComponent(info[2]));
    const m = /^\/([^/]+(?:\/[^/]+)?)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (!m) return new Response('not found', { status: 404 });
    const [, repoId, rev, path] = [m[0], m[1], decodeURIComponent(m[2]), decodeURIComponent(m[3])];
    const err = (status: number, code: string) => new Response(null, { status, headers: { 'x-error-code': code } });
    const repo = this.repos.get(repoId);
    if (!repo) return err(404, 'RepoNotFound');
    if (repo.gatedToken && req.headers.get('authorization') !== `Bearer ${repo.gatedToken}`) return err(401, 'GatedRepo');
    const commit = repo.commits.has(rev) ? rev : repo.refs.get(rev);
    const files = commit ? repo.commits.get(commit) : undefined;
    if (!commit || !files) return err(404, 'RevisionNotFound');
    const body = files.get(path);
    if (!body) return err(404, 'EntryNotFound');
    if (path.endsWith('.safetensors')) {
      const sha = sha256(body);
      return new Response(null, {
        status: 302,
        headers: {
          location: `${this.cdnUrl}/cdn/${sha}`, 'x-linked-etag': `"${sha}"`, 'x-linked-size': String(body.byteLength),
          'x-repo-commit': commit, etag: `"${gitSha1(new TextEncoder().encode(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha}\n`))}"`,
        },
      });
    }
    const headers = { etag: `"${gitSha1(body)}"`, 'x-repo-commit': commit, 'content-length': String(body.byteLength) };
    return new Response(req.method === 'HEAD' ? null : body.slice(), { status: 200, headers });
  }

  /** POST /api/models/{repo}/paths-info/{revision} {paths}: what the Hub's API says of each path. */
  async #pathsInfo(req: Request, repoId: string, rev: string): Promise<Response> {
    const repo = this.repos.get(repoId);
    const err = (status: number, code: string) => new Response(null, { status, headers: { 'x-error-code': code } });
    if (!repo) return err(404, 'RepoNotFound');
    if (repo.gatedToken && req.headers.get('authorization') !== `Bearer ${repo.gatedToken}`) return err(401, 'GatedRepo');
    const files = repo.commits.get(repo.commits.has(rev) ? rev : repo.refs.get(rev) ?? '');
    if (!files) return err(404, 'RevisionNotFound');
    const { paths } = await req.json() as { paths: string[] };
    const out = paths.filter((p) => files.has(p)).map((p) => {
      const b = files.get(p)!;
      const lfs = p.endsWith('.safetensors') ? { oid: sha256(b), size: b.byteLength, pointerSize: 134 } : undefined;
      return { type: 'file', path: p, oid: gitSha1(b), size: b.byteLength, ...(lfs ? { lfs } : {}) };
    });
    return Response.json(out);
  }

  #serveBlob(req: Request, sha: string): Response {
    const stored = this.#blobs.get(sha);
    if (!stored) return new Response(null, { status: 404 });
    let bytes = stored;
    if (this.corrupt.has(sha)) {
      bytes = stored.slice();
      bytes[bytes.length >> 1] ^= 0xff; // same length, different content
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.get('range') ?? '');
    const from = range ? Number(range[1]) : 0;
    if (from > bytes.byteLength) return new Response(null, { status: 416, headers: { 'content-range': `bytes */${bytes.byteLength}` } });
    const part = bytes.slice(from);
    const headers: Record<string, string> = { 'content-length': String(part.byteLength), 'accept-ranges': 'bytes' };
    if (range) headers['content-range'] = `bytes ${from}-${bytes.byteLength - 1}/${bytes.byteLength}`;
    const status = range ? 206 : 200;
    if (req.method === 'HEAD') return new Response(null, { status, headers });
    if (!range && this.holdOnce.delete(sha)) {
      const half = part.slice(0, part.byteLength >> 1);
      const released = this.#released.promise;
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(half);
        },
        async pull(c) {
          await released;
          c.close();
        },
      });
      return new Response(stream, { status, headers });
    }
    if (!range && this.dropOnce.delete(sha)) {
      // Half the body, then the connection is cut: the client sees an error mid-stream.
      const half = part.slice(0, part.byteLength >> 1);
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(half);
        },
        async pull(c) {
          await new Promise((r) => setTimeout(r, 20));
          c.error(new Error('connection cut by the fake hub'));
        },
      });
      return new Response(stream, { status, headers });
    }
    return new Response(part, { status, headers });
  }
}
