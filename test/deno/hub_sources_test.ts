// Deno suite: where loadPretrained reads from — a sharded checkpoint, a branch against a commit
// sha, a local folder, a cache laid out by hand as huggingface_hub documents it, Cache Storage
// (the browser cache, which Deno also has), a page's view of the Hub (opaque redirects, paths-info)
// — and a model loaded through the fake Hub decoding transformers' greedy tokens on the GPU.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireGpu } from '../../src/gpu/device.ts';
import { BrowserHubCache } from '../../src/hub/browser_cache.ts';
import { deleteCachedModel, listCachedModels } from '../../src/hub/list.ts';
import { loadPretrained } from '../../src/hub/pretrained.ts';
import { BaseModel } from '../../src/model/base_model.ts';
import { generate } from '../../src/model/generate.ts';
import { importHfWeights } from '../../src/model/weight_names.ts';
import { loadGolden } from '../shared/goldens.ts';
import { qwen3ShardedTwin, qwen3Twin } from '../shared/hub_twin.ts';
import { gitSha1, sha256 } from './fake_hub.ts';
import { load, noNetwork, REPO, rejectsHub, sameWeights, withHub } from './hub_helpers.ts';

Deno.test('hub: a sharded checkpoint (model.safetensors.index.json) loads as one source', async () => {
  await withHub(async (hub, cacheDir) => {
    hub.commit(REPO, await qwen3ShardedTwin());
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    assert.deepEqual(p.files.filter((f) => f.includes('safetensors')), [
      'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors',
    ]);
    await sameWeights(p);
    await p.close();
    const q = await load(REPO, { cacheDir, offline: true, fetch: noNetwork });
    await sameWeights(q);
    await q.close();
  });
});

Deno.test('hub: a branch resolves to its current commit, a commit sha to itself', async () => {
  await withHub(async (hub, cacheDir) => {
    const twin = await qwen3Twin();
    const first = hub.commit(REPO, twin);
    const gen2 = new TextEncoder().encode(JSON.stringify({ eos_token_id: [388, 386], temperature: 0.7 }));
    const second = hub.commit(REPO, { ...twin, 'generation_config.json': gen2 });
    const dev = hub.commit(REPO, twin, 'dev');
    const main = await load(REPO, { endpoint: hub.url, cacheDir });
    assert.equal(main.commit, second);
    assert.deepEqual(main.generation.eosTokenIds, [388, 386]);
    assert.equal(main.generation.temperature, 0.7);
    const old = await load(REPO, { endpoint: hub.url, cacheDir, revision: first });
    assert.equal(old.commit, first);
    assert.deepEqual(old.generation.eosTokenIds, [388]);
    const d = await load(REPO, { endpoint: hub.url, cacheDir, revision: 'dev' });
    assert.equal(d.commit, dev);
    for (const p of [main, old, d]) await p.close();
    const root = join(cacheDir, 'models--tiny-org--qwen3-twin');
    assert.deepEqual((await readdir(join(root, 'refs'))).sort(), ['dev', 'main']); // no ref for a sha
    assert.equal(await readFile(join(root, 'refs', 'dev'), 'utf8'), dev);
    // Every file after config.json was asked for at the resolved commit, never at the branch.
    const asked = hub.log.filter((r) => r.path.includes('/resolve/') && !r.path.endsWith('/config.json'));
    assert.ok(asked.every((r) => /\/resolve\/[0-9a-f]{40}\//.test(r.path)), JSON.stringify(asked.map((r) => r.path)));
    // The same blob is stored once for the three commits that share it.
    const list = await listCachedModels({ cacheDir });
    assert.equal(list.length, 1);
    assert.deepEqual(list[0].snapshots.map((s) => s.commit).sort(), [first, second, dev].sort());
    assert.deepEqual(list[0].snapshots.find((s) => s.commit === dev)?.refs, ['dev']);
    const blobBytes = Object.values(twin).reduce((s, b) => s + b.byteLength, 0) + gen2.byteLength;
    assert.equal(list[0].sizeBytes, blobBytes);
    assert.equal(await deleteCachedModel(REPO, { cacheDir }), true);
    assert.deepEqual(await listCachedModels({ cacheDir }), []);
    assert.equal(await deleteCachedModel(REPO, { cacheDir }), false);
  });
});

Deno.test('hub: a local folder in the Hub layout loads without a cache; a missing file is named', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'hub-folder-'));
  try {
    for (const [f, b] of Object.entries(await qwen3ShardedTwin())) await writeFile(join(dir, f), b);
    const p = await loadPretrained(dir, { fetch: noNetwork });
    assert.equal(p.folder, dir);
    assert.equal(p.commit, undefined);
    await sameWeights(p);
    await p.close();
    await rm(join(dir, 'config.json'));
    await rejectsHub(loadPretrained(dir), 'not-found', 'config.json');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

Deno.test('hub: reads a cache laid out by hand as huggingface_hub documents it', async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'hub-python-'));
  try {
    const files = await qwen3Twin();
    const commit = 'a'.repeat(40);
    const root = join(cacheDir, 'models--tiny-org--qwen3-twin');
    await mkdir(join(root, 'blobs'), { recursive: true });
    await mkdir(join(root, 'snapshots', commit), { recursive: true });
    await mkdir(join(root, 'refs'), { recursive: true });
    await writeFile(join(root, 'refs', 'main'), commit);
    for (const [f, b] of Object.entries(files)) {
      const etag = f.endsWith('.safetensors') ? sha256(b) : gitSha1(b);
      await writeFile(join(root, 'blobs', etag), b);
      await symlink(`../../blobs/${etag}`, join(root, 'snapshots', commit, f));
    }
    Deno.env.set('HF_HUB_CACHE', cacheDir);
    try {
      const p = await loadPretrained('tiny-org/qwen3-twin', { offline: true, fetch: noNetwork });
      assert.equal(p.commit, commit);
      await sameWeights(p);
      await p.close();
    } finally {
      Deno.env.delete('HF_HUB_CACHE');
    }
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
});

Deno.test('hub: the Cache Storage cache (browsers) downloads, verifies, lists and deletes', async () => {
  await withHub(async (hub) => {
    const files = await qwen3Twin();
    const commit = hub.commit(REPO, files);
    const name = `webtinker-hub-test-${crypto.randomUUID()}`;
    const cache = new BrowserHubCache(name);
    try {
      hub.dropOnce.add(sha256(files['model.safetensors']));
      const p = await load(REPO, { endpoint: hub.url, cache });
      assert.equal(p.folder, undefined);
      await sameWeights(p);
      await p.close();
      const q = await load(REPO, { cache, offline: true, fetch: noNetwork });
      await sameWeights(q);
      await q.close();
      const list = await listCachedModels({ cache });
      assert.equal(list.length, 1);
      assert.deepEqual(list[0].snapshots[0].refs, ['main']);
      assert.equal(list[0].snapshots[0].commit, commit);
      assert.equal(list[0].sizeBytes, Object.values(files).reduce((s, b) => s + b.byteLength, 0));
      hub.corrupt.add(sha256(files['model.safetensors']));
      await deleteCachedModel(REPO, { cache });
      await rejectsHub(load(REPO, { endpoint: hub.url, cache }), 'integrity', 'model.safetensors');
      await rejectsHub(load(REPO, { cache, offline: true }), 'offline-not-cached', 'model.safetensors');
    } finally {
      await caches.delete(name);
    }
  });
});

Deno.test('hub: a model loaded through the fake Hub decodes the greedy tokens transformers wrote', async () => {
  await withHub(async (hub, cacheDir) => {
    hub.commit(REPO, await qwen3Twin());
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    const ctx = await acquireGpu({ label: 'hub_test' });
    const g = await loadGolden('qwen3');
    try {
      const model = BaseModel.upload(ctx, p.config, await importHfWeights(p.config, p.weights), { source: p.repo });
      try {
        const G = g.greedy.length / g.B;
        const prompts = Array.from({ length: g.B }, (_, b) => Array.from(g.inputIds.subarray(b * g.T, b * g.T + 5)));
        const r = await generate(ctx, model, null, prompts, { maxTokens: G, temperature: 0, seed: 0 });
        for (let b = 0; b < g.B; b++) assert.deepEqual(r.tokens[b], Array.from(g.greedy.subarray(b * G, (b + 1) * G)), `row ${b}`);
      } finally {
        model.release();
      }
    } finally {
      await g.close();
      await p.close();
      ctx.destroy();
    }
  });
});

/** fetch as a page sees it: a redirect asked for with redirect 'manual' is opaque (no status, no headers). */
const browserFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  if (init?.redirect !== 'manual' || res.status < 300 || res.status >= 400) return res;
  await res.body?.cancel();
  const opaque = new Response(null, { status: 200 });
  Object.defineProperty(opaque, 'type', { value: 'opaqueredirect' });
  Object.defineProperty(opaque, 'status', { value: 0 });
  Object.defineProperty(opaque, 'ok', { value: false });
  return opaque;
};

Deno.test('hub: where redirects are opaque (browsers), LFS files are described by the paths-info API', async () => {
  await withHub(async (hub) => {
    const files = await qwen3ShardedTwin();
    const commit = hub.commit(REPO, files);
    hub.repos.get(REPO)!.gatedToken = 'hf_browser';
    const name = `webtinker-hub-test-${crypto.randomUUID()}`;
    const cache = new BrowserHubCache(name);
    try {
      const p = await load(REPO, { endpoint: hub.url, cache, fetch: browserFetch, token: 'hf_browser' });
      assert.equal(p.commit, commit);
      await sameWeights(p);
      await p.close();
      const infos = hub.log.filter((r) => r.path.startsWith(`/api/models/${REPO}/paths-info/${commit}`));
      assert.equal(infos.length, 2); // one per shard; the JSON files answer the HEAD directly
      assert.ok(infos.every((r) => r.method === 'POST' && r.auth === 'Bearer hf_browser'));
      // A corrupted shard is caught by the sha256 paths-info reported.
      const shard = 'model-00002-of-00002.safetensors';
      hub.corrupt.add(sha256(files[shard]));
      await deleteCachedModel(REPO, { cache });
      await rejectsHub(load(REPO, { endpoint: hub.url, cache, fetch: browserFetch, token: 'hf_browser' }), 'integrity', shard);
    } finally {
      await caches.delete(name);
    }
  });
});
