// Deno suite: loadPretrained against a fake Hub on 127.0.0.1 (fake_hub.ts) serving Qwen3 twins
// built from the committed golden (hub_twin.ts): download into the Hugging Face cache layout,
// reload offline with no server, resume after a cut connection and from a partial .incomplete
// file, a corrupted blob caught and not kept, 401 for a gated repo, 404 naming the file, a sharded
// checkpoint, a branch against a commit sha, folders, a hand-written Python-layout cache, and the
// Cache Storage cache. Nothing here reaches beyond 127.0.0.1.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importHfWeights } from '../../src/model/weight_names.ts';
import { acquireGpu } from '../../src/gpu/device.ts';
import { BaseModel } from '../../src/model/base_model.ts';
import { generate } from '../../src/model/generate.ts';
import { loadGolden } from '../shared/goldens.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { BrowserHubCache } from '../../src/hub/browser_cache.ts';
import { HubError } from '../../src/hub/errors.ts';
import { linkTarget } from '../../src/hub/fs_cache.ts';
import { deleteCachedModel, listCachedModels } from '../../src/hub/list.ts';
import { loadPretrained, type LoadPretrainedOptions, type Pretrained } from '../../src/hub/pretrained.ts';
import { FakeHub, gitSha1, sha256 } from './fake_hub.ts';
import { CHATML, qwen3ShardedTwin, qwen3Twin } from '../shared/hub_twin.ts';

const REPO = 'tiny-org/qwen3-twin';
const noNetwork: typeof fetch = () => Promise.reject(new Error('this test must not reach the network'));

async function withHub(f: (hub: FakeHub, cacheDir: string) => Promise<void>): Promise<void> {
  const hub = new FakeHub();
  await hub.start();
  const cacheDir = await mkdtemp(join(tmpdir(), 'hub-cache-'));
  try {
    await f(hub, cacheDir);
  } finally {
    await hub.stop();
    await rm(cacheDir, { recursive: true, force: true });
  }
}

async function load(repo: string, opts: LoadPretrainedOptions): Promise<Pretrained> {
  return loadPretrained(repo, opts);
}

async function rejectsHub(p: Promise<unknown>, kind: string, ...inMessage: string[]): Promise<HubError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof HubError, `expected a HubError, got ${e}`);
    assert.equal(e.kind, kind, e.message);
    for (const s of inMessage) assert.ok(e.message.includes(s), `"${e.message}" should mention "${s}"`);
    return e;
  }
  throw new assert.AssertionError({ message: `expected a HubError ${kind}` });
}

/** The golden's weights imported directly: what every load must give. */
async function expectedWeights(p: Pretrained): Promise<Record<string, Float32Array>> {
  const twin = await qwen3Twin();
  return importHfWeights(p.config, await openSafetensors(twin['model.safetensors']));
}

async function sameWeights(p: Pretrained): Promise<void> {
  const got = await importHfWeights(p.config, p.weights);
  const want = await expectedWeights(p);
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const k of Object.keys(want)) assert.deepEqual(got[k], want[k], k);
}

Deno.test('hub: download into the HF cache layout, then reload offline with no server', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    const commit = hub.commit(REPO, files);
    const progress = new Map<string, number>();
    const p = await load(REPO, { endpoint: hub.url, cacheDir, onProgress: (e) => progress.set(e.file, e.loaded) });
    assert.equal(p.commit, commit);
    assert.equal(p.revision, 'main');
    assert.equal(p.config.family, 'qwen3');
    assert.equal(p.config.name, REPO);
    assert.deepEqual(p.generation.eosTokenIds, [388]);
    assert.equal(p.generation.bosTokenId, 386);
    assert.equal(p.chatTemplate, CHATML);
    assert.equal(p.tokenizer.eosId, 388);
    assert.deepEqual(p.tokenizer.encode('hello'), [258, 111]); // hell, o
    assert.equal(p.tokenizer.applyChatTemplate([{ role: 'user', content: 'hi' }]), '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    assert.equal(progress.get('model.safetensors'), files['model.safetensors'].byteLength);
    await sameWeights(p);
    await p.close();

    // The layout on disk, as Python's huggingface_hub writes it.
    const root = join(cacheDir, 'models--tiny-org--qwen3-twin');
    assert.equal(p.folder, join(root, 'snapshots', commit));
    assert.equal(await readFile(join(root, 'refs', 'main'), 'utf8'), commit);
    const blobs = (await readdir(join(root, 'blobs'))).sort();
    const expected = Object.entries(files).map(([f, b]) => (f.endsWith('.safetensors') ? sha256(b) : gitSha1(b))).sort();
    assert.deepEqual(blobs, expected);
    for (const [f, b] of Object.entries(files)) {
      const etag = f.endsWith('.safetensors') ? sha256(b) : gitSha1(b);
      assert.equal(await linkTarget(join(root, 'snapshots', commit, f)), `../../blobs/${etag}`, f);
    }
    // chat_template.jinja is absent at this commit: remembered as Python does.
    assert.ok((await stat(join(root, '.no_exist', commit, 'chat_template.jinja'))).isFile());

    // Offline, with a fetch that fails the test if called: everything comes from the cache.
    const q = await load(REPO, { cacheDir, offline: true, fetch: noNetwork, endpoint: hub.url });
    assert.equal(q.commit, commit);
    await sameWeights(q);
    await q.close();
    // Online but the Hub unreachable: the cached snapshot of the ref's commit is used, as Python does.
    await hub.stop();
    const s = await load(REPO, { cacheDir, endpoint: hub.url });
    assert.equal(s.commit, commit);
    await s.close();
    // HF_HUB_OFFLINE=1 reads the cache without asking.
    Deno.env.set('HF_HUB_OFFLINE', '1');
    try {
      const r = await load(REPO, { cacheDir, endpoint: hub.url });
      assert.equal(r.commit, commit);
      await r.close();
    } finally {
      Deno.env.delete('HF_HUB_OFFLINE');
    }
  });
});

Deno.test('hub: offline and not cached names the repo and the cache folder', async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'hub-empty-'));
  try {
    const e = await rejectsHub(load('someone/absent', { cacheDir, offline: true, fetch: noNetwork }), 'offline-not-cached', 'someone/absent', cacheDir);
    assert.equal(e.cacheDir, cacheDir);
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
});

Deno.test('hub: a connection cut mid-body is resumed with a Range request', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    hub.commit(REPO, files);
    const sha = sha256(files['model.safetensors']);
    hub.dropOnce.add(sha);
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    await sameWeights(p);
    await p.close();
    const gets = hub.log.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`);
    assert.equal(gets.length, 2, JSON.stringify(gets));
    assert.equal(gets[0].range, null);
    const from = Number(/^bytes=(\d+)-$/.exec(gets[1].range ?? '')?.[1]);
    assert.ok(from > 0 && from < files['model.safetensors'].byteLength, `resumed from ${gets[1].range}`);
  });
});

Deno.test('hub: a partial .incomplete file left by an earlier run is resumed, not restarted', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    hub.commit(REPO, files);
    const body = files['model.safetensors'];
    const sha = sha256(body);
    const blobs = join(cacheDir, 'models--tiny-org--qwen3-twin', 'blobs');
    await mkdir(blobs, { recursive: true });
    await writeFile(join(blobs, `${sha}.incomplete`), body.subarray(0, 1000));
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    await sameWeights(p);
    await p.close();
    const gets = hub.log.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`);
    assert.deepEqual(gets.map((g) => g.range), ['bytes=1000-']);
    assert.ok(!(await readdir(blobs)).some((b) => b.endsWith('.incomplete')));
  });
});

Deno.test('hub: an aborted download is a typed error; the next load resumes from the partial file', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    hub.commit(REPO, files);
    const sha = sha256(files['model.safetensors']);
    hub.holdOnce.add(sha);
    const ac = new AbortController();
    const onProgress = (e: { file: string; loaded: number }) => {
      if (e.file === 'model.safetensors' && e.loaded > 0) ac.abort();
    };
    await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir, signal: ac.signal, onProgress }), 'aborted');
    const partial = join(cacheDir, 'models--tiny-org--qwen3-twin', 'blobs', `${sha}.incomplete`);
    const kept = (await stat(partial)).size;
    assert.ok(kept > 0 && kept < files['model.safetensors'].byteLength, `kept ${kept}`);
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    await sameWeights(p);
    await p.close();
    assert.equal(hub.log.filter((r) => r.path === `/cdn/${sha}`).at(-1)?.range, `bytes=${kept}-`);
  });
});

Deno.test('hub: two loads of one repo at once download each blob once', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    hub.commit(REPO, files);
    const [a, b] = await Promise.all([load(REPO, { endpoint: hub.url, cacheDir }), load(REPO, { endpoint: hub.url, cacheDir })]);
    await sameWeights(a);
    await sameWeights(b);
    await Promise.all([a.close(), b.close()]);
    const sha = sha256(files['model.safetensors']);
    assert.equal(hub.log.filter((r) => r.method === 'GET' && r.path === `/cdn/${sha}`).length, 1);
  });
});

Deno.test('hub: corrupted bytes are caught and nothing is left in the cache as complete', async () => {
  await withHub(async (hub, cacheDir) => {
    const files = await qwen3Twin();
    const commit = hub.commit(REPO, files);
    const sha = sha256(files['model.safetensors']);
    hub.corrupt.add(sha);
    const e = await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir }), 'integrity', 'model.safetensors', sha);
    assert.equal(e.file, 'model.safetensors');
    const root = join(cacheDir, 'models--tiny-org--qwen3-twin');
    const blobs = await readdir(join(root, 'blobs'));
    assert.ok(!blobs.includes(sha) && !blobs.includes(`${sha}.incomplete`), blobs.join(', '));
    assert.ok(!(await readdir(join(root, 'snapshots', commit))).includes('model.safetensors'));
    // Offline, the file is not there; once the server is fixed, a new load completes.
    await rejectsHub(load(REPO, { cacheDir, offline: true }), 'offline-not-cached', 'model.safetensors');
    hub.corrupt.delete(sha);
    const p = await load(REPO, { endpoint: hub.url, cacheDir });
    await sameWeights(p);
    await p.close();
  });
});

Deno.test('hub: a gated repo answers 401, says how to pass a token, and loads with HF_TOKEN', async () => {
  await withHub(async (hub, cacheDir) => {
    hub.commit(REPO, await qwen3Twin());
    hub.repos.get(REPO)!.gatedToken = 'hf_test_token';
    const e = await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir }), 'gated', 'HF_TOKEN', 'token');
    assert.equal(e.status, 401);
    await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir, token: 'hf_wrong' }), 'gated', 'refused');
    Deno.env.set('HF_TOKEN', 'hf_test_token');
    try {
      const p = await load(REPO, { endpoint: hub.url, cacheDir });
      await sameWeights(p);
      await p.close();
    } finally {
      Deno.env.delete('HF_TOKEN');
    }
    // The token goes to the Hub, never to the CDN a redirect points at.
    assert.ok(hub.log.filter((r) => r.path.startsWith('/cdn/')).every((r) => r.auth === null));
    assert.ok(hub.log.some((r) => r.path.includes('/resolve/') && r.auth === 'Bearer hf_test_token'));
  });
});

Deno.test('hub: 404s name the repo, the revision or the file', async () => {
  await withHub(async (hub, cacheDir) => {
    const { 'tokenizer.json': _, ...noTokenizer } = await qwen3Twin();
    hub.commit(REPO, noTokenizer);
    const e = await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir }), 'not-found', 'tokenizer.json');
    assert.equal(e.file, 'tokenizer.json');
    assert.equal(e.status, 404);
    await rejectsHub(load('nobody/nothing', { endpoint: hub.url, cacheDir }), 'not-found', 'nobody/nothing', 'no such repo');
    await rejectsHub(load(REPO, { endpoint: hub.url, cacheDir, revision: 'v9' }), 'not-found', 'no revision "v9"');
    await rejectsHub(load('bad--name/x', { endpoint: hub.url, cacheDir }), 'bad-repo-id');
  });
});

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
