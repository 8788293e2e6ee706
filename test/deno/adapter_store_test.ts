// Deno suite: the adapter store on the file backend, and the default store of this host.
import { assert } from 'chai';
import { adapterStoreCases, checkpointStoreCases } from '../shared/cases/adapter_store.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';
import { defaultKv } from '../../src/runtime/store/mod.ts';

const files = async () => new FileKv(await Deno.makeTempDir({ prefix: 'wt-store-' }));
for (const c of [...adapterStoreCases(files, (kv) => new FileKv((kv as FileKv).root)), ...checkpointStoreCases(files)]) {
  Deno.test({ name: `files: ${c.name}`, fn: c.fn });
}

Deno.test('the default store under Deno is files', async () => {
  assert.strictEqual((await defaultKv(await Deno.makeTempDir())).kind, 'files');
});
