/**
 * Shared by the Deno Hub tests (hub_test.ts, hub_sources_test.ts): a fake Hub and a fresh cache
 * folder per test, a fetch that fails the test if called, a check that a promise rejects with a
 * HubError of a kind (its message naming what it must), and the weights every load must give
 * (the golden's model.safetensors imported directly).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubError } from '../../src/hub/errors.ts';
import { loadPretrained, type LoadPretrainedOptions, type Pretrained } from '../../src/hub/pretrained.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { importHfWeights } from '../../src/model/weight_names.ts';
import { qwen3Twin } from '../shared/hub_twin.ts';
import { FakeHub } from './fake_hub.ts';

export const REPO = 'tiny-org/qwen3-twin';
export const noNetwork: typeof fetch = () => Promise.reject(new Error('this test must not reach the network'));

export async function withHub(f: (hub: FakeHub, cacheDir: string) => Promise<void>): Promise<void> {
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

export async function load(repo: string, opts: LoadPretrainedOptions): Promise<Pretrained> {
  return loadPretrained(repo, opts);
}

export async function rejectsHub(p: Promise<unknown>, kind: string, ...inMessage: string[]): Promise<HubError> {
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

export async function sameWeights(p: Pretrained): Promise<void> {
  const got = await importHfWeights(p.config, p.weights);
  const want = await expectedWeights(p);
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const k of Object.keys(want)) assert.deepEqual(got[k], want[k], k);
}
