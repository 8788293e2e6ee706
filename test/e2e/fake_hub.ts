/**
 * A fake Hugging Face Hub for the e2e suite: the Node twin of test/deno/fake_hub.ts (same
 * endpoints, same headers), on 127.0.0.1, answering a page of another origin — so every answer
 * carries the CORS headers a browser needs to read it, and OPTIONS preflights (paths-info's JSON
 * POST, a Range or Authorization header) are answered.
 *
 *   HEAD|GET /{repo}/resolve/{revision}/{path}
 *     regular file → 200, ETag "<git blob sha1>", X-Repo-Commit, Content-Length (GET: the body)
 *     *.safetensors (LFS) → 302 to /cdn/<sha256> (absolute), X-Linked-Etag, X-Linked-Size, X-Repo-Commit
 *     unknown repo / revision / file → 404 with X-Error-Code
 *   GET /cdn/<sha256>: the bytes, with Range (206 + Content-Range)
 *   POST /api/models/{repo}/paths-info/{revision} {"paths": [...]}: [{type, path, oid, size, lfs?}]
 *     (a browser cannot read a redirect's headers, so the loader asks this for LFS files)
 *
 * Every request is logged (method, path, Range) so a test can check what reached the Hub.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly range: string | null;
}

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const gitSha1 = (b: Uint8Array) => createHash('sha1').update(`blob ${b.byteLength}\0`).update(b).digest('hex');

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'ETag, X-Repo-Commit, X-Linked-Etag, X-Linked-Size, X-Error-Code, Content-Range, Content-Length, Accept-Ranges, Location',
};

export class FakeHub {
  readonly log: LoggedRequest[] = [];
  readonly #repos = new Map<string, { refs: Map<string, string>; commits: Map<string, Map<string, Uint8Array>> }>();
  readonly #blobs = new Map<string, Uint8Array>();
  #server: Server | null = null;
  #commits = 0;
  url = '';

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500, CORS);
        res.end(String(e));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const s = this.#server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
    this.#server = null;
  }

  /** Adds a commit with `files` to `repo`, pointing `branch` at it; returns the commit sha. */
  commit(repo: string, files: Record<string, Uint8Array>, branch = 'main'): string {
    const r = this.#repos.get(repo) ?? { refs: new Map(), commits: new Map() };
    this.#repos.set(repo, r);
    const sha = createHash('sha1').update(`e2e commit ${this.#commits++}`).digest('hex');
    r.commits.set(sha, new Map(Object.entries(files)));
    r.refs.set(branch, sha);
    for (const b of Object.values(files)) this.#blobs.set(sha256(b), b);
    return sha;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    this.log.push({ method, path: decodeURIComponent(url.pathname), range: req.headers.range ?? null });
    const send = (status: number, headers: Record<string, string>, body?: Uint8Array | string) => {
      res.writeHead(status, { ...CORS, ...headers });
      res.end(method === 'HEAD' ? undefined : body);
    };
    if (method === 'OPTIONS') {
      return send(204, {
        'access-control-allow-methods': 'GET, HEAD, POST, OPTIONS',
        'access-control-allow-headers': 'Authorization, Range, Content-Type, Accept',
        'access-control-max-age': '600',
      });
    }
    const err = (status: number, code: string) => send(status, { 'x-error-code': code });
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname);
    if (cdn) return this.#serveBlob(req, send, cdn[1]);
    const info = /^\/api\/models\/([^/]+(?:\/[^/]+)?)\/paths-info\/([^/]+)$/.exec(url.pathname);
    if (info && method === 'POST') {
      const files = this.#files(info[1], decodeURIComponent(info[2]));
      if (typeof files === 'string') return err(404, files);
      const { paths } = JSON.parse(await readBody(req)) as { paths: string[] };
      const out = paths.filter((p) => files.has(p)).map((p) => {
        const b = files.get(p)!;
        const lfs = p.endsWith('.safetensors') ? { oid: sha256(b), size: b.byteLength, pointerSize: 134 } : undefined;
        return { type: 'file', path: p, oid: gitSha1(b), size: b.byteLength, ...(lfs ? { lfs } : {}) };
      });
      return send(200, { 'content-type': 'application/json' }, JSON.stringify(out));
    }
    const m = /^\/([^/]+(?:\/[^/]+)?)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (!m || (method !== 'GET' && method !== 'HEAD')) return send(404, {}, 'not found');
    const rev = decodeURIComponent(m[2]);
    const path = decodeURIComponent(m[3]);
    const files = this.#files(m[1], rev);
    if (typeof files === 'string') return err(404, files);
    const commit = this.#commitOf(m[1], rev)!;
    const body = files.get(path);
    if (!body) return err(404, 'EntryNotFound');
    if (path.endsWith('.safetensors')) {
      const sha = sha256(body);
      const pointer = new TextEncoder().encode(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha}\n`);
      return send(302, {
        location: `${this.url}/cdn/${sha}`, 'x-linked-etag': `"${sha}"`, 'x-linked-size': String(body.byteLength),
        'x-repo-commit': commit, etag: `"${gitSha1(pointer)}"`,
      });
    }
    return send(200, { etag: `"${gitSha1(body)}"`, 'x-repo-commit': commit, 'content-length': String(body.byteLength) }, body);
  }

  #commitOf(repoId: string, rev: string): string | undefined {
    const repo = this.#repos.get(repoId);
    return repo?.commits.has(rev) ? rev : repo?.refs.get(rev);
  }

  /** The files of a repo at a revision, or the X-Error-Code of why not. */
  #files(repoId: string, rev: string): Map<string, Uint8Array> | string {
    const repo = this.#repos.get(repoId);
    if (!repo) return 'RepoNotFound';
    return repo.commits.get(this.#commitOf(repoId, rev) ?? '') ?? 'RevisionNotFound';
  }

  #serveBlob(req: IncomingMessage, send: (status: number, headers: Record<string, string>, body?: Uint8Array) => void, sha: string): void {
    const bytes = this.#blobs.get(sha);
    if (!bytes) return send(404, {});
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = range ? Number(range[1]) : 0;
    if (from > bytes.byteLength) return send(416, { 'content-range': `bytes */${bytes.byteLength}` });
    const part = bytes.subarray(from);
    const headers: Record<string, string> = { 'content-length': String(part.byteLength), 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' };
    if (range) headers['content-range'] = `bytes ${from}-${bytes.byteLength - 1}/${bytes.byteLength}`;
    send(range ? 206 : 200, headers, part);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
