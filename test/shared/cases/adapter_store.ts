/**
 * Adapter store cases, run against every backend: memory and files (Node suite), IndexedDB
 * (Chromium suite), files (Deno suite). Plain async functions with chai assertions.
 */
import { assert } from 'chai';
import { AdapterStore, type AdapterTensor, fnv1a } from '../../../src/runtime/store/adapter_store.ts';
import { StoreCorruptError, StoreError, StoreNotFoundError, StoreQuotaError } from '../../../src/runtime/store/errors.ts';
import type { KvStore, KvValue } from '../../../src/runtime/store/kv.ts';
import { Rng } from '../../../src/util/rng.ts';

export interface PlainCase {
  name: string;
  fn: () => Promise<void>;
}

/**
 * Wraps a store so that `setMany` writes only the first `k` entries and then throws `error`, and
 * `create` (the commit) throws it too; `beforeCreate` runs before each commit (to interleave).
 */
export class FailingKv implements KvStore {
  readonly kind: string;
  readonly ownerTag?: string;
  failAfter: number | null = null;
  error: unknown = new Error('disk on fire');
  beforeCreate: (() => Promise<void>) | null = null;
  constructor(readonly inner: KvStore) {
    this.kind = `failing(${inner.kind})`;
    this.ownerTag = inner.ownerTag;
  }
  async create(key: string, value: KvValue): Promise<boolean> {
    await this.beforeCreate?.();
    if (this.failAfter !== null) throw this.error;
    return this.inner.create(key, value);
  }
  ownerGone(tag: string): Promise<boolean | undefined> {
    return this.inner.ownerGone ? this.inner.ownerGone(tag) : Promise.resolve(undefined);
  }
  sweep(prefix: string): Promise<void> {
    return this.inner.sweep ? this.inner.sweep(prefix) : Promise.resolve();
  }
  get<T>(key: string): Promise<T | undefined> {
    return this.inner.get<T>(key);
  }
  async setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    if (this.failAfter === null) return this.inner.setMany(entries);
    await this.inner.setMany(entries.slice(0, this.failAfter));
    throw this.error;
  }
  delMany(keys: readonly string[]): Promise<void> {
    return this.inner.delMany(keys);
  }
  keys(prefix?: string): Promise<string[]> {
    return this.inner.keys(prefix);
  }
}

function lora(seed: number, rank = 4, dim = 33): AdapterTensor[] {
  const r = new Rng(seed);
  return [
    { name: 'layers.0.q.lora_A', shape: [rank, dim], dtype: 'f32', data: r.normalArray(rank * dim) },
    { name: 'layers.0.q.lora_B', shape: [dim, rank], dtype: 'f32', data: r.normalArray(dim * rank) },
    { name: 'layers.0.v.lora_A', shape: [rank, dim], dtype: 'f16', data: Uint16Array.from({ length: rank * dim }, () => r.nextInt(0x7c00)) },
  ];
}

const info = (step: number) => ({ baseModel: 'tiny-gpt2', rank: 4, alpha: 8, targetModules: ['q', 'v'], step, metrics: { reward: step / 10 } });

function assertSameTensors(got: AdapterTensor[], want: AdapterTensor[]): void {
  assert.strictEqual(got.length, want.length);
  got.forEach((t, i) => {
    assert.strictEqual(t.name, want[i].name);
    assert.deepEqual(t.shape, want[i].shape);
    assert.strictEqual(t.dtype, want[i].dtype);
    assert.strictEqual(t.data.constructor, want[i].data.constructor);
    assert.deepEqual([...t.data], [...want[i].data]);
  });
}

// deno-lint-ignore no-explicit-any
async function rejects(p: Promise<unknown>, type: new (...a: any[]) => Error, re?: RegExp): Promise<Error> {
  try {
    await p;
  } catch (e) {
    assert.instanceOf(e, type);
    if (re) assert.match((e as Error).message, re);
    return e as Error;
  }
  throw new Error(`expected a ${type.name}`);
}

/**
 * `makeKv` gives a fresh, empty store for each case; `reopen` a second handle on the same data
 * (another connection, another FileKv object), as a second writer would hold.
 */
export function adapterStoreCases(makeKv: () => Promise<KvStore>, reopen: (kv: KvStore) => KvStore = (kv) => kv): PlainCase[] {
  return [
    {
      name: 'adapter store: save and load round-trip f32 and f16 tensors with metadata',
      async fn() {
        const store = new AdapterStore(await makeKv());
        const t = lora(1);
        const meta = await store.save('calc', t, info(10));
        assert.include(meta, { name: 'calc', version: 1, baseModel: 'tiny-gpt2', rank: 4, alpha: 8, step: 10 });
        assert.strictEqual(meta.bytes, 4 * 132 + 4 * 132 + 2 * 132);
        const back = await store.load('calc');
        assert.deepEqual(back.meta, meta);
        assertSameTensors(back.tensors, t);
      },
    },
    {
      name: 'adapter store: versions increase; load picks the latest or the one asked; list and delete',
      async fn() {
        const store = new AdapterStore(await makeKv());
        await store.save('a', lora(1), info(1));
        await store.save('a', lora(2), info(2));
        await store.save('b.v2', lora(3), info(7));
        assert.deepEqual((await store.versions('a')).map((v) => v.version), [1, 2]);
        assertSameTensors((await store.load('a', 1)).tensors, lora(1));
        assertSameTensors((await store.load('a')).tensors, lora(2));
        assert.deepEqual((await store.list()).map((m) => [m.name, m.version]), [['a', 2], ['b.v2', 1]]);
        await store.delete('a', 1);
        assert.deepEqual((await store.versions('a')).map((v) => v.version), [2]);
        await rejects(store.load('a', 1), StoreNotFoundError, /adapter "a" version 1 not found/);
        await store.delete('a');
        assert.deepEqual((await store.list()).map((m) => m.name), ['b.v2']);
        assert.deepEqual(await store.kv.keys('adapters/a/'), []);
        await rejects(store.delete('a'), StoreNotFoundError);
      },
    },
    {
      name: 'adapter store: a save that fails midway leaves the previous version loadable and invisible orphans cleaned',
      async fn() {
        const kv = new FailingKv(await makeKv());
        const store = new AdapterStore(kv);
        await store.save('run', lora(1), info(1));
        for (const k of [0, 1, 2, 3]) {
          kv.failAfter = k; // some tensors written, the version's record not
          await rejects(store.save('run', lora(2), info(2)), StoreError, /saving adapter "run": disk on fire/);
          kv.failAfter = null;
          assert.deepEqual((await store.versions('run')).map((v) => v.version), [1]);
          assertSameTensors((await store.load('run')).tensors, lora(1));
        }
        const m = await store.save('run', lora(3), info(3));
        assert.strictEqual(m.version, 2);
        assertSameTensors((await store.load('run')).tensors, lora(3));
        // Each failed save removed its own tensors: only the two versions' records and tensors remain.
        const keys = await kv.keys('adapters/run/');
        assert.deepEqual(keys.filter((k) => k.includes('/versions/')), ['adapters/run/versions/1', 'adapters/run/versions/2']);
        assert.strictEqual(keys.filter((k) => k.includes('/blobs/')).length, 6);
      },
    },
    {
      name: 'adapter store: a quota error comes back typed, the previous version intact',
      async fn() {
        const kv = new FailingKv(await makeKv());
        const store = new AdapterStore(kv);
        await store.save('q', lora(1), info(1));
        kv.failAfter = 1;
        kv.error = Object.assign(new Error('The quota has been exceeded.'), { name: 'QuotaExceededError' });
        await rejects(store.save('q', lora(2), info(2)), StoreQuotaError, /saving adapter "q": storage quota exceeded/);
        kv.failAfter = null;
        assertSameTensors((await store.load('q')).tensors, lora(1));
      },
    },
    {
      name: 'adapter store: corrupt or missing bytes are reported naming the tensor, never returned',
      async fn() {
        const kv = await makeKv();
        const store = new AdapterStore(kv);
        await store.save('c', lora(1), info(1));
        const [t0, t1] = await kv.keys('adapters/c/blobs/');
        const bad = new Uint8Array(4 * 132);
        await kv.setMany([[t1, bad]]);
        await rejects(store.load('c'), StoreCorruptError, /tensor "layers\.0\.q\.lora_B" \(adapters\/c\/blobs\/[^/]+\/t1\).*checksum/);
        await kv.delMany([t0]);
        await rejects(store.load('c'), StoreCorruptError, /"layers\.0\.q\.lora_A".*data missing/);
      },
    },
    {
      name: 'adapter store: bad names and tensors are refused before anything is written',
      async fn() {
        const kv = await makeKv();
        const store = new AdapterStore(kv);
        assert.throws(() => store.save('../etc', lora(1), info(1)), StoreError, /adapter name "..\/etc" is invalid/);
        const t = lora(1);
        assert.throws(() => store.save('x', [{ ...t[0], shape: [5, 5] }], info(1)), StoreError, /tensor "layers.0.q.lora_A": 132 values do not fill shape \[5, 5\]/);
        assert.throws(() => store.save('x', [t[0], t[0]], info(1)), StoreError, /unique/);
        assert.throws(() => store.save('x', [{ ...t[0], dtype: 'f16' }], info(1)), StoreError, /dtype f16 needs a Uint16Array/);
        assert.deepEqual(await kv.keys(), []);
      },
    },
    {
      name: 'adapter store: concurrent saves of one name get distinct versions; the caller cannot mutate what was stored',
      async fn() {
        const store = new AdapterStore(await makeKv());
        const t = lora(5);
        const [m1, m2] = await Promise.all([store.save('p', t, info(1)), store.save('p', lora(6), info(2))]);
        assert.deepEqual([m1.version, m2.version], [1, 2]);
        (t[0].data as Float32Array)[0] = 12345;
        assert.notStrictEqual((await store.load('p', 1)).tensors[0].data[0], 12345);
      },
    },
    {
      name: 'adapter store: two store objects, six parallel saves of one name: six versions, each loads its own tensors',
      async fn() {
        const kv = await makeKv();
        const stores = [new AdapterStore(kv), new AdapterStore(reopen(kv))];
        const metas = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => stores[i % 2].save('shared', lora(100 + i), info(i))));
        assert.deepEqual(metas.map((m) => m.version).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6]);
        for (const m of metas) {
          const back = await stores[(m.version + 1) % 2].load('shared', m.version);
          assert.strictEqual(back.meta.step, m.step);
          assertSameTensors(back.tensors, lora(100 + m.step));
        }
        assert.deepEqual((await stores[1].versions('shared')).map((v) => v.step).sort(), [0, 1, 2, 3, 4, 5]);
      },
    },
    {
      name: "adapter store: a save never removes another writer's tensors while that save is in flight",
      async fn() {
        const kv = await makeKv();
        const paused = new FailingKv(kv);
        const [first, second] = [new AdapterStore(paused), new AdapterStore(reopen(kv))];
        let release = () => {};
        const gate = new Promise<void>((r) => (release = r));
        let atCommit = () => {};
        const reached = new Promise<void>((r) => (atCommit = r));
        paused.beforeCreate = () => (atCommit(), gate);
        const pending = first.save('x', lora(1), info(1));
        await reached; // the first save's tensors are written, its record not yet
        const m2 = await second.save('x', lora(2), info(2)); // sweeps leftovers before writing
        release();
        const m1 = await pending;
        assert.notStrictEqual(m1.version, m2.version);
        assertSameTensors((await second.load('x', m1.version)).tensors, lora(1));
        assertSameTensors((await second.load('x', m2.version)).tensors, lora(2));
      },
    },
    {
      name: "adapter store: an uncommitted save's tensors are removed once stale, a young one of another writer kept",
      async fn() {
        const kv = await makeKv();
        const store = new AdapterStore(kv);
        // Save ids are <time>-<random>-<owner>; this owner cannot be checked, so age decides.
        const old = `adapters/l/blobs/${(Date.now() - 2 * 3600_000).toString(36)}-abc-p.elsewhere/t0`;
        const young = `adapters/l/blobs/${Date.now().toString(36)}-abd-p.elsewhere/t0`;
        await kv.setMany([[old, new Uint8Array(8)], [young, new Uint8Array(8)]]);
        await store.save('l', lora(1), info(1));
        const keys = await kv.keys('adapters/l/blobs/');
        assert.notInclude(keys, old);
        assert.include(keys, young);
        assertSameTensors((await store.load('l')).tensors, lora(1));
      },
    },
    {
      name: 'adapter store: the layout before version records still loads and deletes; new versions come after it',
      async fn() {
        const kv = await makeKv();
        const t = lora(1);
        const index = t.map((x) => {
          const b = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength);
          return { name: x.name, shape: x.shape, dtype: x.dtype, bytes: b.byteLength, checksum: fnv1a(b) };
        });
        const meta1 = { ...info(1), name: 'old', version: 1, createdAt: '2026-01-01T00:00:00.000Z', bytes: 1320 };
        await kv.setMany([
          ...t.map((x, i) => [`adapters/old/v1/t${i}`, x.data] as const),
          ['adapters/old/v1/index', { tensors: index }],
          ['adapters/old/manifest', { name: 'old', versions: [meta1] }],
        ]);
        const store = new AdapterStore(kv);
        assert.deepEqual((await store.load('old')).meta, meta1);
        assertSameTensors((await store.load('old')).tensors, t);
        assert.strictEqual((await store.save('old', lora(2), info(2))).version, 2);
        assert.deepEqual((await store.versions('old')).map((v) => v.version), [1, 2]);
        assert.deepEqual((await store.list()).map((m) => [m.name, m.version]), [['old', 2]]);
        await store.delete('old', 1);
        assert.deepEqual((await store.versions('old')).map((v) => v.version), [2]);
        assert.deepEqual((await kv.keys('adapters/old/')).filter((k) => !k.includes('/blobs/')), ['adapters/old/versions/2']);
        assertSameTensors((await store.load('old')).tensors, lora(2));
      },
    },
  ];
}

/** Checkpoint store cases (same backends as the adapter store). */
export function checkpointStoreCases(makeKv: () => Promise<KvStore>): PlainCase[] {
  interface RunState {
    rng: { seed: number; stream: number; position: number }[];
    envCursor: number;
    rewardCurve: number[];
  }
  const state = (step: number): RunState => ({
    rng: [{ seed: 7, stream: 0, position: 4 * step }, { seed: 7, stream: 1, position: step }],
    envCursor: 3 * step,
    rewardCurve: Array.from({ length: step }, (_, i) => i / 10),
  });
  return [
    {
      name: 'checkpoint store: tensors and plain run state round-trip exactly; latest() follows saves',
      async fn() {
        const { CheckpointStore } = await import('../../../src/runtime/store/checkpoint_store.ts');
        const store = new CheckpointStore<RunState>(await makeKv(), { keepLast: 5 });
        assert.isUndefined(await store.latest('run-1'));
        const t = lora(9);
        await store.save('run-1', t, { step: 4, state: state(4) });
        await store.save('run-1', lora(10), { step: 8, state: state(8) });
        const latest = await store.latest('run-1');
        assert.strictEqual(latest?.step, 8);
        const { meta, tensors } = await store.load('run-1', 1);
        assert.deepEqual(meta.state, state(4));
        assertSameTensors(tensors, t);
      },
    },
    {
      name: 'checkpoint store: keeps the last N after each save; a failed save keeps the previous one',
      async fn() {
        const { CheckpointStore } = await import('../../../src/runtime/store/checkpoint_store.ts');
        const kv = new FailingKv(await makeKv());
        const store = new CheckpointStore<RunState>(kv, { keepLast: 2 });
        for (const step of [1, 2, 3, 4]) await store.save('r', lora(step), { step, state: state(step) });
        assert.deepEqual((await store.versions('r')).map((v) => v.step), [3, 4]);
        kv.failAfter = 2;
        await rejects(store.save('r', lora(5), { step: 5, state: state(5) }), StoreError, /saving checkpoint "r"/);
        kv.failAfter = null;
        assert.deepEqual((await store.versions('r')).map((v) => v.step), [3, 4]);
        const { meta, tensors } = await store.load('r');
        assert.deepEqual(meta.state, state(4));
        assertSameTensors(tensors, lora(4));
        assert.throws(() => new CheckpointStore(kv, { keepLast: 0 }), RangeError);
      },
    },
  ];
}
