// Published adapter versions with an AdapterStore (adapter_registry.ts), without a GPU: each publish
// is durable before it resolves and numbered by the store; a new registry on the same store (a
// restarted service) resolves `name` and `name@v`; a failed write leaves the previous version;
// versions are tied to their base model; a registry taking over a lost device's versions keeps them.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import type { LoraConfig } from '../../src/model/config.ts';
import { loraSpecs, numel } from '../../src/model/params.ts';
import { preset } from '../../src/model/presets.ts';
import { AdapterRegistry } from '../../src/runtime/adapter_registry.ts';
import type { HostParams } from '../../src/runtime/clients.ts';
import { AdapterStore } from '../../src/runtime/store/adapter_store.ts';
import { StoreQuotaError } from '../../src/runtime/store/errors.ts';
import { MemoryKv } from '../../src/runtime/store/kv.ts';
import { Rng } from '../../src/util/rng.ts';
import { FailingKv } from '../shared/cases/adapter_store.ts';

const cfg = preset('tiny-gpt2');
const lora: LoraConfig = { rank: 2, alpha: 4, targets: ['q', 'v'] };
const model = { id: 'base', cfg };
/** Publish and resolve never touch the GPU; only acquire (upload) would. */
const noGpu = {} as GpuContext;

function tensors(seed: number, l: LoraConfig = lora): HostParams {
  const rng = new Rng(seed);
  return Object.fromEntries(loraSpecs(cfg, l).map((s) => [s.name, rng.normalArray(numel(s.shape))]));
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return await p.then(() => expect.fail('expected a rejection'), (e: unknown) => e);
}

describe('AdapterRegistry with an AdapterStore', () => {
  it('writes each published version to the store before publish resolves, with its metadata and tensors', async () => {
    const store = new AdapterStore(new MemoryKv());
    const reg = new AdapterRegistry(noGpu, { store });
    const t1 = tensors(1);
    const p1 = await reg.publish('alpha', 'base', cfg, lora, t1, 7);
    expect(p1).toMatchObject({ name: 'alpha', version: 1, modelId: 'base', lora, step: 7 });
    const [meta] = await store.versions('alpha');
    expect(meta).toMatchObject({ name: 'alpha', version: 1, baseModel: 'base', rank: 2, alpha: 4, targetModules: ['q', 'v'], step: 7, bytes: p1.bytes });
    expect(p1.publishedAt).toBe(meta.createdAt);
    const { tensors: stored } = await store.load('alpha', 1);
    const specs = loraSpecs(cfg, lora);
    expect(stored.map((t) => [t.name, t.shape, t.dtype])).toEqual(specs.map((s) => [s.name, s.shape, 'f32']));
    for (const t of stored) expect([...t.data]).toEqual([...t1[t.name]]);
    expect(p1.bytes).toBe(Object.values(t1).reduce((s, a) => s + a.byteLength, 0));
  });

  it('a new registry on the same store (a restarted service) resolves name and name@v, and numbers on', async () => {
    const kv = new MemoryKv();
    const first = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    await first.publish('alpha', 'base', cfg, lora, tensors(1), 1);
    const v2 = await first.publish('alpha', 'base', cfg, lora, tensors(2), 2);

    const again = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    expect(again.stats().published).toEqual([]);
    expect(await again.resolve('alpha', model)).toEqual(v2);
    const v1 = await again.resolve('alpha@1', model);
    expect(v1).toMatchObject({ name: 'alpha', version: 1, step: 1, modelId: 'base', lora });
    expect(again.stats().published.map((p) => p.version)).toEqual([2]); // v1 is an on-demand load, not a latest version
    const v3 = await again.publish('alpha', 'base', cfg, lora, tensors(3), 3);
    expect(v3.version).toBe(3);
    expect((await again.resolve('alpha', model)).version).toBe(3);
    const err = await rejection(again.resolve('alpha@9', model));
    expect(err).toBeInstanceOf(ConfigError);
    expect(String(err)).toMatch(/has no version "9".*not stored either/);
    expect(String(await rejection(again.resolve('nope', model)))).toMatch(/no published adapter "nope".*none stored either/);
  });

  it('host copies beyond keepVersions are found in the store again', async () => {
    const reg = new AdapterRegistry(noGpu, { store: new AdapterStore(new MemoryKv()), keepVersions: 1 });
    for (let i = 1; i <= 3; i++) await reg.publish('alpha', 'base', cfg, lora, tensors(i), i);
    expect(reg.stats().published.map((p) => p.version)).toEqual([3]);
    expect((await reg.resolve('alpha@1', model)).step).toBe(1);
    expect((await reg.resolve('alpha@2', model)).step).toBe(2);
    // Without a store, a dropped version is gone.
    const mem = new AdapterRegistry(noGpu, { keepVersions: 1 });
    await mem.publish('alpha', 'base', cfg, lora, tensors(1), 1);
    await mem.publish('alpha', 'base', cfg, lora, tensors(2), 2);
    expect(String(await rejection(mem.resolve('alpha@1', model)))).toMatch(/has no version "1" \(kept: 2\)/);
  });

  it('a failed write rejects the publish (typed), and the previous version stays the one served', async () => {
    const kv = new FailingKv(new MemoryKv());
    const reg = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    await reg.publish('alpha', 'base', cfg, lora, tensors(1), 1);
    kv.failAfter = 2;
    kv.error = Object.assign(new Error('quota'), { name: 'QuotaExceededError' });
    expect(await rejection(reg.publish('alpha', 'base', cfg, lora, tensors(2), 2))).toBeInstanceOf(StoreQuotaError);
    expect((await reg.resolve('alpha', model)).version).toBe(1);
    expect(reg.stats().published.map((p) => p.version)).toEqual([1]);
    const fresh = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    expect((await fresh.resolve('alpha', model)).version).toBe(1);
    kv.failAfter = null;
    expect((await reg.publish('alpha', 'base', cfg, lora, tensors(3), 3)).version).toBe(2);
  });

  it('stored versions belong to their base model; a stored adapter that does not fit the base is refused', async () => {
    const kv = new MemoryKv();
    const reg = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    await reg.publish('alpha', 'base', cfg, lora, tensors(1), 1);
    const fresh = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    const other = await rejection(fresh.resolve('alpha', { id: 'other', cfg }));
    expect(other).toBeInstanceOf(ConfigError);
    expect(String(other)).toMatch(/belongs to model "base", not "other"/);
    const publishOther = await rejection(new AdapterRegistry(noGpu, { store: new AdapterStore(kv) }).publish('alpha', 'other', cfg, lora, tensors(2), 1));
    expect((publishOther as ConfigError).field).toBe('name');
    // Same id, another architecture: the tensors do not fit it.
    const wider = { id: 'base', cfg: preset('tiny-llama') };
    expect(String(await rejection(new AdapterRegistry(noGpu, { store: new AdapterStore(kv) }).resolve('alpha', wider)))).toMatch(/stored adapter "alpha@1"/);
  });

  it('tensors that do not fit the config are refused before anything is written', async () => {
    const kv = new MemoryKv();
    const reg = new AdapterRegistry(noGpu, { store: new AdapterStore(kv) });
    await expect(reg.publish('alpha', 'base', cfg, lora, tensors(1, { ...lora, rank: 3 }), 1)).rejects.toThrow(/adapter "alpha"/);
    expect(await kv.keys()).toEqual([]);
    expect(((await rejection(reg.publish('bad name', 'base', cfg, lora, tensors(1), 1))) as ConfigError).field).toBe('name');
  });

  it('adopt: a registry on a new device takes over the published versions of the lost one', async () => {
    const lost = new AdapterRegistry(noGpu);
    const p1 = await lost.publish('alpha', 'base', cfg, lora, tensors(1), 1);
    const p2 = await lost.publish('beta', 'base', cfg, lora, tensors(2), 4);
    const next = new AdapterRegistry(noGpu);
    next.adopt(lost);
    expect(next.stats().published).toEqual([p1, p2]);
    expect(lost.stats().published).toEqual([]);
    expect(await next.resolve('beta', model)).toEqual(p2);
    expect((await next.publish('alpha', 'base', cfg, lora, tensors(3), 5)).version).toBe(2);
  });
});
