// The Hub loader's pieces that need no server: the cache folder from the environment, repo ids,
// etags, status codes → typed errors, generation_config.json, and the resumable download loop
// (fetchInto) driven by a scripted fetch: a cut body resumed by Range, a server that ignores the
// Range, too many failures, a body longer than advertised.
import { afterEach, describe, expect, it } from 'vitest';
import { digestFor, etagHashKind } from '../../src/hub/cache.ts';
import { hubCacheDirFromEnv, hubOffline } from '../../src/hub/env.ts';
import { HubError } from '../../src/hub/errors.ts';
import { parseGenerationConfig } from '../../src/hub/generation_config.ts';
import { checkRepoFile, checkRepoId, checkRevision, fileMetadata, type DownloadSink, fetchInto, type FileMetadata, type HubRequest, normalizeEtag, statusError } from '../../src/hub/http.ts';
import type { HfTokenizer } from '../../src/model/tokenizer/hf.ts';

const saved = { ...process.env };
afterEach(() => {
  for (const k of ['HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_HOME', 'XDG_CACHE_HOME', 'HOME', 'HF_HUB_OFFLINE']) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

const join = (...p: string[]) => p.join('/');

describe('cache folder from the environment (Python rules)', () => {
  it('HF_HUB_CACHE, then HF_HOME/hub, then XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub', () => {
    for (const k of ['HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_HOME', 'XDG_CACHE_HOME']) delete process.env[k];
    process.env.HOME = '/home/u';
    const never = () => {
      throw new Error('home asked although HOME is set');
    };
    expect(hubCacheDirFromEnv(never, join)).toBe('/home/u/.cache/huggingface/hub');
    process.env.XDG_CACHE_HOME = '/xdg';
    expect(hubCacheDirFromEnv(never, join)).toBe('/xdg/huggingface/hub');
    process.env.HF_HOME = '/hf';
    expect(hubCacheDirFromEnv(never, join)).toBe('/hf/hub');
    process.env.HF_HUB_CACHE = '/cache';
    expect(hubCacheDirFromEnv(never, join)).toBe('/cache');
  });

  it('HF_HUB_OFFLINE accepts 1, on, yes, true in any case', () => {
    for (const [v, want] of [['1', true], ['ON', true], ['Yes', true], ['true', true], ['0', false], ['', false], ['no', false]] as const) {
      process.env.HF_HUB_OFFLINE = v;
      expect(hubOffline(), v).toBe(want);
    }
  });
});

describe('names', () => {
  it('repo ids as the Hub checks them', () => {
    for (const ok of ['gpt2', 'Qwen/Qwen2.5-0.5B-Instruct', 'HuggingFaceTB/SmolLM2-135M', 'a_b/c.d']) expect(() => checkRepoId(ok)).not.toThrow();
    for (const bad of ['', 'a/b/c', 'a--b/c', 'a/..', '../x', 'a b/c', '/abs']) {
      expect(() => checkRepoId(bad), bad).toThrow(HubError);
    }
  });

  it('file paths stay inside the repo', () => {
    expect(() => checkRepoFile('r', 'sub/model.safetensors')).not.toThrow();
    for (const bad of ['', '/etc/passwd', '../x', 'a/../../b', 'a//b', 'a\\b']) expect(() => checkRepoFile('r', bad), bad).toThrow(/not a relative path/);
  });

  it('revisions: branches, tags, refs/pr/N and shas; no traversal', () => {
    for (const ok of ['main', 'v1.0', 'refs/pr/1', 'a'.repeat(40)]) expect(() => checkRevision('r', ok)).not.toThrow();
    for (const bad of ['', '../x', 'a/../b', '/main', 'main/', 'a\\b']) {
      expect(() => checkRevision('r', bad), bad).toThrow(expect.objectContaining({ kind: 'bad-revision' }));
    }
  });

  it('etags: quotes and W/ removed; the hash they name', async () => {
    expect(normalizeEtag('W/"abc"')).toBe('abc');
    expect(normalizeEtag('"abc"')).toBe('abc');
    expect(etagHashKind('a'.repeat(64))).toBe('sha256');
    expect(etagHashKind('a'.repeat(40))).toBe('git-sha1');
    expect(etagHashKind('xyz')).toBeUndefined();
    // git hash-object of "hello\n" and sha256sum of the same bytes (both well-known values).
    const hello = new TextEncoder().encode('hello\n');
    expect(await digestFor('0'.repeat(40), hello)).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
    expect(await digestFor('0'.repeat(64), hello)).toBe('5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03');
  });
});

const req: HubRequest = { repo: 'org/model', revision: 'main', endpoint: 'https://hub.test' };

describe('fileMetadata', () => {
  const head = (headers: Record<string, string>, status = 200) => (async () => new Response(null, { status, headers })) as unknown as typeof fetch;
  it('reads a regular file and an LFS redirect as the Hub sends them', async () => {
    const c = 'c'.repeat(40);
    const plain = await fileMetadata({ ...req, fetch: head({ etag: '"' + 'a'.repeat(40) + '"', 'x-repo-commit': c, 'content-length': '12' }) }, 'config.json');
    expect(plain).toEqual({ commit: c, etag: 'a'.repeat(40), size: 12, url: 'https://hub.test/org/model/resolve/main/config.json' });
    const lfs = await fileMetadata({ ...req, fetch: head({ location: 'https://cdn.test/x', 'x-linked-etag': '"' + 'b'.repeat(64) + '"', 'x-linked-size': '99', 'x-repo-commit': c, etag: '"zz"' }, 302) }, 'model.safetensors');
    expect(lfs).toEqual({ commit: c, etag: 'b'.repeat(64), size: 99, url: 'https://cdn.test/x' });
  });
  it('refuses a commit header that is not a sha (it would name a folder)', async () => {
    const e = await fileMetadata({ ...req, fetch: head({ etag: '"x"', 'x-repo-commit': '../../evil', 'content-length': '1' }) }, 'config.json').catch((x) => x);
    expect([e.kind, e.message]).toEqual(['http', expect.stringContaining('not a commit sha')]);
  });
  it('names what a non-Hub answer lacks', async () => {
    const e = await fileMetadata({ ...req, fetch: head({ 'content-length': '1' }) }, 'config.json').catch((x) => x);
    expect(e.message).toMatch(/X-Repo-Commit, ETag/);
  });
});

describe('status codes → HubError', () => {
  const res = (status: number, code?: string) => new Response(null, { status, headers: code ? { 'x-error-code': code } : {} });
  it('401/403 say gated and how to pass a token', () => {
    const e = statusError(req, 'config.json', res(401, 'GatedRepo'));
    expect(e.kind).toBe('gated');
    expect(e.message).toMatch(/HF_TOKEN/);
    expect(statusError({ ...req, token: 'hf_x' }, 'config.json', res(403)).message).toMatch(/refused/);
  });
  it('404 names the repo, the revision or the file', () => {
    expect(statusError(req, 'x.json', res(404, 'RepoNotFound')).message).toMatch(/no such repo/);
    expect(statusError(req, 'x.json', res(404, 'RevisionNotFound')).message).toMatch(/no revision "main"/);
    const e = statusError(req, 'tokenizer.json', res(404, 'EntryNotFound'));
    expect([e.kind, e.file, e.status]).toEqual(['not-found', 'tokenizer.json', 404]);
    expect(e.message).toContain('tokenizer.json');
  });
  it('other statuses are http errors with the URL', () => {
    const e = statusError(req, 'config.json', res(500));
    expect(e.kind).toBe('http');
    expect(e.message).toContain('https://hub.test/org/model/resolve/main/config.json');
  });
});

describe('generation_config.json', () => {
  const tok = { eosId: 7 } as HfTokenizer;
  it('eos ids from the file, else config.json, else the tokenizer', () => {
    expect(parseGenerationConfig({ eos_token_id: [1, 2, 2], temperature: 0.6, top_k: 20 }, { eos_token_id: 3 }, tok, 'r')).toMatchObject({
      eosTokenIds: [1, 2], temperature: 0.6, topK: 20,
    });
    expect(parseGenerationConfig({}, { eos_token_id: 3, bos_token_id: 4 }, tok, 'r')).toMatchObject({ eosTokenIds: [3], bosTokenId: 4 });
    expect(parseGenerationConfig(undefined, {}, tok, 'r').eosTokenIds).toEqual([7]);
  });
  it('refuses bad values naming the field', () => {
    expect(() => parseGenerationConfig({ eos_token_id: ['x'] }, {}, tok, 'r')).toThrow(/eos_token_id/);
    expect(() => parseGenerationConfig({ eos_token_id: [] }, {}, tok, 'r')).toThrow(/empty/);
    expect(() => parseGenerationConfig({ top_k: 1.5 }, {}, tok, 'r')).toThrow(/top_k/);
    expect(() => parseGenerationConfig({ do_sample: 'yes' }, {}, tok, 'r')).toThrow(/do_sample/);
  });
});

describe('fetchInto: resumable downloads', () => {
  const data = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);
  const meta: FileMetadata = { commit: 'c'.repeat(40), etag: 'e'.repeat(64), size: data.length, url: 'https://cdn.test/blob' };
  class Sink implements DownloadSink {
    bytes: number[] = [];
    get written() {
      return this.bytes.length;
    }
    write(c: Uint8Array) {
      this.bytes.push(...c);
      return Promise.resolve();
    }
    truncate() {
      this.bytes = [];
      return Promise.resolve();
    }
  }
  /** A body that sends `upto` bytes of `part`, then fails (or ends, when `fail` is false). */
  const body = (part: Uint8Array, upto: number, fail = true) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(part.slice(0, upto));
        if (upto >= part.length || !fail) c.close();
      },
      // Fails on the read after the chunk (erroring in start would drop the queued chunk).
      pull(c) {
        if (c.desiredSize !== null && c.desiredSize > 0) c.error(new Error('cut'));
      },
    });

  it('resumes from the bytes held after a cut, with Range', async () => {
    const ranges: (string | null)[] = [];
    const f = (async (_u: string, init: RequestInit) => {
      const range = new Headers(init.headers).get('range');
      ranges.push(range);
      const from = range ? Number(/bytes=(\d+)-/.exec(range)![1]) : 0;
      const part = data.slice(from);
      const headers = range ? { 'content-range': `bytes ${from}-999/1000` } : undefined;
      return new Response(body(part, ranges.length < 3 ? 300 : part.length), { status: range ? 206 : 200, headers });
    }) as typeof fetch;
    const sink = new Sink();
    await fetchInto({ ...req, fetch: f }, 'model.safetensors', meta, sink);
    expect(ranges).toEqual([null, 'bytes=300-', 'bytes=600-']);
    expect(Uint8Array.from(sink.bytes)).toEqual(data);
  });

  it('starts over when the server ignores the Range (200 instead of 206)', async () => {
    let calls = 0;
    const f = (async () => new Response(body(data, ++calls === 1 ? 400 : data.length), { status: 200 })) as typeof fetch;
    const sink = new Sink();
    await fetchInto({ ...req, fetch: f }, 'f', meta, sink);
    expect(calls).toBe(2);
    expect(Uint8Array.from(sink.bytes)).toEqual(data);
  });

  it('gives up after the retries with a network error, keeping what it has', async () => {
    const f = (async (_u: string, init: RequestInit) => {
      const from = Number(/bytes=(\d+)-/.exec(new Headers(init.headers).get('range') ?? 'bytes=0-')![1]);
      return new Response(body(data.slice(from), 10), { status: from ? 206 : 200, headers: { 'content-range': `bytes ${from}-999/1000` } });
    }) as typeof fetch;
    const sink = new Sink();
    const e = await fetchInto({ ...req, fetch: f }, 'f', meta, sink, { retries: 2 }).catch((x) => x);
    expect(e).toBeInstanceOf(HubError);
    expect(e.kind).toBe('network');
    expect(sink.written).toBe(30);
  });

  it('refuses a body longer than advertised', async () => {
    const f = (async () => new Response(new Uint8Array(1200), { status: 200 })) as typeof fetch;
    const e = await fetchInto({ ...req, fetch: f }, 'f', meta, new Sink()).catch((x) => x);
    expect(e.kind).toBe('integrity');
  });

  it('an abort is reported as aborted, not retried', async () => {
    const ac = new AbortController();
    let calls = 0;
    const f = (async () => {
      calls++;
      ac.abort();
      throw new DOMException('aborted', 'AbortError');
    }) as typeof fetch;
    const e = await fetchInto({ ...req, fetch: f, signal: ac.signal }, 'f', meta, new Sink()).catch((x) => x);
    expect([e.kind, calls]).toEqual(['aborted', 1]);
  });
});
