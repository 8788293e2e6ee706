// Chromium suite: loadPretrained with the browser cache (Cache Storage, real Chromium) and the
// browser's view of the Hub. A page cannot start a server, so the Hub is a scripted fetch answering
// as the Hub does to a page: JSON files with ETag and X-Repo-Commit, LFS files as an opaque
// redirect (what `redirect: 'manual'` gives a page), their sha256 and size from the paths-info API,
// their bytes from the resolve URL. Checks: weights equal to the golden file's, the chat template
// and eos ids, the cache listed (and read again by a new BrowserHubCache, as after a reload),
// offline reload, a corrupted download refused and not stored, deletion.
import { expect, it } from 'vitest';
import { BrowserHubCache } from '../../src/hub/browser_cache.ts';
import { HubError } from '../../src/hub/errors.ts';
import { deleteCachedModel, listCachedModels } from '../../src/hub/list.ts';
import { loadPretrained } from '../../src/hub/pretrained.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { importHfWeights } from '../../src/model/weight_names.ts';
import { CHATML, qwen3Twin } from '../shared/hub_twin.ts';

const REPO = 'tiny-org/qwen3-twin';
const COMMIT = '0123456789abcdef0123456789abcdef01234567';
const HUB = 'https://hub.test';

async function hexDigest(alg: 'SHA-256' | 'SHA-1', b: Uint8Array): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest(alg, b as Uint8Array<ArrayBuffer>)), (x) => x.toString(16).padStart(2, '0')).join('');
}

async function gitSha1(b: Uint8Array): Promise<string> {
  const head = new TextEncoder().encode(`blob ${b.byteLength}\0`);
  const all = new Uint8Array(head.byteLength + b.byteLength);
  all.set(head);
  all.set(b, head.byteLength);
  return hexDigest('SHA-1', all);
}

/** The Hub as a page sees it, for one repo at one commit on 'main'. `corrupt`: files served with a flipped byte. */
function scriptedHub(files: Record<string, Uint8Array>, corrupt: Set<string>, log: string[]): typeof fetch {
  const opaque = () => {
    const r = new Response(null, { status: 200 });
    Object.defineProperty(r, 'type', { value: 'opaqueredirect' });
    Object.defineProperty(r, 'status', { value: 0 });
    Object.defineProperty(r, 'ok', { value: false });
    return r;
  };
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    log.push(`${method} ${url.pathname}`);
    if (method === 'POST' && url.pathname === `/api/models/${REPO}/paths-info/${COMMIT}`) {
      const { paths } = JSON.parse(String(init?.body)) as { paths: string[] };
      return Response.json(await Promise.all(paths.filter((p) => files[p]).map(async (p) => ({
        type: 'file', path: p, oid: await gitSha1(files[p]), size: files[p].byteLength,
        ...(p.endsWith('.safetensors') ? { lfs: { oid: await hexDigest('SHA-256', files[p]), size: files[p].byteLength } } : {}),
      }))));
    }
    const m = new RegExp(`^/${REPO}/resolve/(main|${COMMIT})/(.+)$`).exec(url.pathname);
    if (!m) return new Response(null, { status: 404, headers: { 'x-error-code': 'RepoNotFound' } });
    const body = files[decodeURIComponent(m[2])];
    if (!body) return new Response(null, { status: 404, headers: { 'x-error-code': 'EntryNotFound' } });
    const lfs = m[2].endsWith('.safetensors');
    if (lfs && init?.redirect === 'manual') return opaque();
    let bytes = body;
    if (corrupt.has(m[2])) {
      bytes = body.slice();
      bytes[0] ^= 1;
    }
    const headers: Record<string, string> = { 'content-length': String(bytes.byteLength) };
    if (!lfs) Object.assign(headers, { etag: `"${await gitSha1(body)}"`, 'x-repo-commit': COMMIT });
    return new Response(method === 'HEAD' ? null : bytes.slice(), { status: 200, headers });
  }) as typeof fetch;
}

it('hub: a page loads a repo into Cache Storage, reads it again offline and after a "reload", refuses corruption', async () => {
  const files = await qwen3Twin();
  const name = `wt-hub-${Date.now()}`;
  const log: string[] = [];
  const corrupt = new Set<string>();
  const fetchHub = scriptedHub(files, corrupt, log);
  try {
    const cache = new BrowserHubCache(name);
    const p = await loadPretrained(REPO, { endpoint: HUB, cache, fetch: fetchHub });
    expect(p.commit).toBe(COMMIT);
    expect(p.folder).toBeUndefined();
    expect(p.chatTemplate).toBe(CHATML);
    expect(p.generation.eosTokenIds).toEqual([388]);
    const want = await importHfWeights(p.config, await openSafetensors(files['model.safetensors']));
    const got = await importHfWeights(p.config, p.weights);
    for (const k of Object.keys(want)) expect(got[k], k).toEqual(want[k]);
    await p.close();
    expect(log).toContain(`POST /api/models/${REPO}/paths-info/${COMMIT}`);

    // A new BrowserHubCache over the same storage, as a reloaded page has, offline.
    const again = new BrowserHubCache(name);
    const before = log.length;
    const q = await loadPretrained(REPO, { cache: again, offline: true, fetch: fetchHub });
    expect(log.length).toBe(before);
    expect(Object.keys(await importHfWeights(q.config, q.weights)).sort()).toEqual(Object.keys(want).sort());
    await q.close();
    const list = await listCachedModels({ cache: again });
    expect(list.map((m) => [m.repo, m.snapshots[0].commit, m.snapshots[0].refs])).toEqual([[REPO, COMMIT, ['main']]]);
    expect(list[0].sizeBytes).toBe(Object.values(files).reduce((s, b) => s + b.byteLength, 0));

    // Deleted, then a corrupted download: refused, and nothing stored for the next offline load.
    expect(await deleteCachedModel(REPO, { cache: again })).toBe(true);
    corrupt.add('model.safetensors');
    const e = await loadPretrained(REPO, { endpoint: HUB, cache: again, fetch: fetchHub }).catch((x) => x);
    expect(e).toBeInstanceOf(HubError);
    expect([e.kind, e.file]).toEqual(['integrity', 'model.safetensors']);
    const off = await loadPretrained(REPO, { cache: again, offline: true }).catch((x) => x);
    expect([off.kind, off.file]).toEqual(['offline-not-cached', 'model.safetensors']);
  } finally {
    await caches.delete(name);
  }
});
