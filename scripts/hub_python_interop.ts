/**
 * Checks that our Hugging Face cache and Python's huggingface_hub share one layout, both ways,
 * against the tests' fake Hub on 127.0.0.1 (test/deno/fake_hub.ts) serving the Qwen3 twin:
 *   1. Python's hf_hub_download (HF_ENDPOINT = the fake Hub) fills cache A; our loader reads cache A
 *      offline, with a fetch that refuses every request.
 *   2. Our loader fills cache B; Python reads cache B with HF_HUB_OFFLINE=1 and compares bytes.
 * Needs python3 with huggingface_hub; not part of `npm test` (CI runs no Python). Run:
 *   npx deno run --allow-read --allow-write --allow-env --allow-net=127.0.0.1,localhost --allow-run=python3 scripts/hub_python_interop.ts
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPretrained } from '../src/hub/pretrained.ts';
import { FakeHub } from '../test/deno/fake_hub.ts';
import { qwen3Twin } from '../test/shared/hub_twin.ts';

const REPO = 'tiny-org/qwen3-twin';
const PY = `
import hashlib, json, os, sys
from huggingface_hub import hf_hub_download, __version__
out = {"version": __version__, "files": {}}
for f in sys.argv[1:]:
    p = hf_hub_download("${REPO}", f)
    out["files"][f] = {"path": p, "sha256": hashlib.sha256(open(p, "rb").read()).hexdigest(), "link": os.readlink(p) if os.path.islink(p) else None}
print(json.dumps(out))
`;

async function python(env: Record<string, string>, files: string[]): Promise<{ version: string; files: Record<string, { path: string; sha256: string; link: string | null }> }> {
  const out = await new Deno.Command('python3', { args: ['-c', PY, ...files], env, stdout: 'piped', stderr: 'piped' }).output();
  if (!out.success) throw new Error(`python3 failed:\n${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

async function sha256(b: Uint8Array): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', b as Uint8Array<ArrayBuffer>)), (x) => x.toString(16).padStart(2, '0')).join('');
}

const hub = new FakeHub('localhost'); // another host name than the Hub's, as the real CDN is
await hub.start();
const a = await mkdtemp(join(tmpdir(), 'hub-py-a-'));
const b = await mkdtemp(join(tmpdir(), 'hub-py-b-'));
try {
  const files = await qwen3Twin();
  const commit = hub.commit(REPO, files);
  const names = Object.keys(files);
  const refuse: typeof fetch = () => Promise.reject(new Error('offline load asked the network'));

  // 1. Python writes, we read offline.
  const py = await python({ HF_ENDPOINT: hub.url, HF_HUB_CACHE: a, HF_HUB_DISABLE_TELEMETRY: '1', HF_HUB_DISABLE_XET: '1' }, names);
  const ours = await loadPretrained(REPO, { cacheDir: a, offline: true, fetch: refuse });
  assert.equal(ours.commit, commit);
  await ours.close();
  console.log(`1. huggingface_hub ${py.version} wrote ${names.length} files (e.g. ${py.files['model.safetensors'].link}); our offline load read commit ${ours.commit} from that cache`);

  // 2. We write, Python reads offline.
  const p = await loadPretrained(REPO, { cacheDir: b, endpoint: hub.url });
  await p.close();
  const back = await python({ HF_HUB_CACHE: b, HF_HUB_OFFLINE: '1', HF_ENDPOINT: 'http://127.0.0.1:9' }, names);
  for (const f of names) {
    assert.equal(back.files[f].sha256, await sha256(files[f]), f);
    assert.ok(back.files[f].path.startsWith(join(b, 'models--tiny-org--qwen3-twin', 'snapshots', commit)), back.files[f].path);
  }
  // The same blob names (sha256 for LFS files, git sha1 for the rest) and the same ref.
  const blobs = (dir: string) => readdir(join(dir, 'models--tiny-org--qwen3-twin', 'blobs')).then((x) => x.sort());
  assert.deepEqual(await blobs(b), await blobs(a));
  const ref = (dir: string) => readFile(join(dir, 'models--tiny-org--qwen3-twin', 'refs', 'main'), 'utf8');
  assert.equal(await ref(b), await ref(a));
  console.log(`2. our cache read by huggingface_hub offline: ${names.length} files, bytes equal, snapshot ${commit}; blob names and refs/main identical to Python's cache`);
  console.log('hub_python_interop: ok');
} finally {
  await hub.stop();
  await rm(a, { recursive: true, force: true });
  await rm(b, { recursive: true, force: true });
}
