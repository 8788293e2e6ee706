// Node suite: the adapter store on the memory and file backends.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { adapterStoreCases, checkpointStoreCases } from '../shared/cases/adapter_store.ts';
import { MemoryKv } from '../../src/runtime/store/kv.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';

const memory = async () => new MemoryKv();
const files = async () => new FileKv(await mkdtemp(join(tmpdir(), 'wt-store-')));

describe('memory backend', () => {
  for (const c of [...adapterStoreCases(memory), ...checkpointStoreCases(memory)]) it(c.name, c.fn);
});

describe('file backend', () => {
  for (const c of [...adapterStoreCases(files, (kv) => new FileKv((kv as FileKv).root)), ...checkpointStoreCases(files)]) it(c.name, c.fn);
});
