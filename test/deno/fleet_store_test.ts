// Deno suite: the NATS KvStore (KV bucket + Object Store) passes the same adapter and checkpoint
// store cases as the memory, file and IndexedDB backends, and fences out writers of older epochs.
import { assert } from 'chai';
import { adapterStoreCases, checkpointStoreCases } from '../shared/cases/adapter_store.ts';
import { connectFleet, openStore } from '../../src/fleet/connect.ts';
import { decodeKey, encodeKey, FencedError, NatsKv } from '../../src/fleet/nats_kv.ts';
import { AdapterStore } from '../../src/runtime/store/adapter_store.ts';
import { startNatsServer } from '../shared/nats_server.ts';

Deno.test('fleet store: the NATS KvStore against the store contract, and its fencing', async (t) => {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  try {
    let n = 0;
    // A fresh, empty store per case: its own KV bucket and Object Store.
    const fresh = () => openStore(nc, { kv: `c${n}`, objects: `o${n++}` });
    for (const c of [...adapterStoreCases(fresh), ...checkpointStoreCases(fresh)]) await t.step(`nats: ${c.name}`, c.fn);

    await t.step('keys map to subject tokens and back, dots and odd bytes included', () => {
      for (const k of ['adapters/b.v2/manifest', 'a//b', 'x/=/é ü', 'checkpoints/r.base/v3/t12', '']) assert.strictEqual(decodeKey(encodeKey(k)), k);
      assert.strictEqual(encodeKey('adapters/b.v2/manifest'), 'adapters.b=2Ev2.manifest');
    });

    await t.step('a binary value is an object; its entry and bytes are checked on read', async () => {
      const kv = await fresh();
      const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 255); // 3 chunks of 128 KiB
      await kv.setMany([['blob/a', bytes], ['plain/b', { x: [1, 2] }]]);
      const back = new Uint8Array((await kv.get<ArrayBuffer>('blob/a'))!);
      assert.deepEqual(back, bytes);
      assert.deepEqual(await kv.get('plain/b'), { x: [1, 2] });
      const objects: string[] = [];
      for (const o of await kv.objects.list()) objects.push(o.name);
      assert.strictEqual(objects.length, 1);
      await kv.setMany([['blob/a', new Uint8Array([1, 2, 3])]]);
      const after: string[] = [];
      for (const o of await kv.objects.list()) after.push(o.name);
      assert.strictEqual(after.length, 1, 'the replaced object is deleted');
      assert.notStrictEqual(after[0], objects[0]);
      await kv.objects.delete(after[0]);
      try {
        await kv.get('blob/a');
        assert.fail('expected a StoreCorruptError');
      } catch (e) {
        assert.match((e as Error).message, /blob\/a.*missing from the object store/);
      }
    });

    await t.step('a writer of an older epoch is refused once a newer one has claimed or written a key', async () => {
      const base: NatsKv = await fresh();
      const old = base.withEpoch(1);
      const owner = base.withEpoch(2);
      const store1 = new AdapterStore(old);
      await store1.save('job', [{ name: 'w', shape: [2], dtype: 'f32', data: new Float32Array([1, 2]) }], { baseModel: 'm', rank: 1, alpha: 2, targetModules: ['q'], step: 1 });
      await owner.claim(['adapters/job/manifest', 'adapters/nothing/manifest']);
      let err: unknown;
      try {
        await store1.save('job', [{ name: 'w', shape: [2], dtype: 'f32', data: new Float32Array([3, 4]) }], { baseModel: 'm', rank: 1, alpha: 2, targetModules: ['q'], step: 2 });
      } catch (e) {
        err = e;
      }
      assert.instanceOf(err, FencedError);
      assert.match((err as Error).message, /adapters\/job\/.*epoch 2.*epoch 1/);
      assert.isUndefined(await base.get('adapters/nothing/manifest'), 'claiming an absent key writes nothing');
      // A version record is committed by create: the claim's fence refuses a stale writer's create too.
      let created: unknown;
      try {
        await old.create('adapters/nothing/versions/1', { meta: {} });
      } catch (e) {
        created = e;
      }
      assert.instanceOf(created, FencedError);
      assert.isUndefined(await base.get('adapters/nothing/versions/1'), 'a fenced create leaves no record');
      assert.isTrue(await owner.create('adapters/nothing/versions/1', { meta: {} }), 'the owner creates it');
      assert.notInclude(await base.keys('adapters/nothing/'), 'adapters/nothing/.fence', 'fences are not listed');
      // The owner goes on; its version is the one loaded.
      const store2 = new AdapterStore(owner);
      const m = await store2.save('job', [{ name: 'w', shape: [2], dtype: 'f32', data: new Float32Array([5, 6]) }], { baseModel: 'm', rank: 1, alpha: 2, targetModules: ['q'], step: 3 });
      assert.strictEqual(m.version, 2);
      assert.deepEqual([...(await new AdapterStore(base).load('job')).tensors[0].data], [5, 6]);
      // A plain client (epoch 0) cannot overwrite the owner's keys either, but reads them.
      try {
        await base.delMany(['adapters/job/manifest']);
        assert.fail('expected a FencedError');
      } catch (e) {
        assert.instanceOf(e, FencedError);
      }
    });

    await t.step('concurrent writers of one key all land (compare-and-set retried); an older epoch is refused', async () => {
      const base = await fresh();
      const a = base.withEpoch(3);
      const b = new NatsKv(base.kv, base.objects, { epoch: 3 });
      const writes = Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).setMany([['k/x', { i }], ['k/bytes', new Uint8Array([i])]]));
      await Promise.all(writes);
      assert.include([...Array(12).keys()], (await base.get<{ i: number }>('k/x'))!.i);
      const objects: string[] = [];
      for (const o of await base.objects.list()) objects.push(o.name);
      assert.strictEqual(objects.length, 1, 'every replaced object is deleted');
      try {
        await base.withEpoch(2).setMany([['k/x', { i: -1 }]]);
        assert.fail('expected a FencedError');
      } catch (e) {
        assert.instanceOf(e, FencedError);
      }
    });
  } finally {
    await nc.close();
    await server.stop();
  }
});
