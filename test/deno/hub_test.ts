// Deno suite: loadPretrained against a fake Hub on 127.0.0.1 (fake_hub.ts) serving Qwen3 twins
// built from the committed golden (test/shared/hub_twin.ts): download into the Hugging Face cache
// layout, reload offline with no server (and with the Hub unreachable), resume after a cut
// connection, from a partial .incomplete file and after an abort, one download for two loads at
// once, a corrupted blob caught and not kept, 401 for a gated repo, 404s naming the file.
// Nothing here reaches beyond 127.0.0.1. Sharded checkpoints, revisions, folders and the other
// caches: hub_sources_test.ts.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkTarget } from '../../src/hub/fs_cache.ts';
import { CHATML, qwen3Twin } from '../shared/hub_twin.ts';
import { gitSha1, sha256 } from './fake_hub.ts';
import { load, noNetwork, REPO, rejectsHub, sameWeights, withHub } from './hub_helpers.ts';

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
