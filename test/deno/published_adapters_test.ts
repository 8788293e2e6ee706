// Deno suite: published adapter versions persist in a file store across a restarted LocalService and a new GPU worker.
import { publishedAdapterCases } from '../shared/cases/published_adapters.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';

const location = async () => {
  const dir = await Deno.makeTempDir({ prefix: 'wt-published-' });
  return { kv: () => new FileKv(dir), spec: { kind: 'files' as const, dir } };
};
for (const c of publishedAdapterCases(location)) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
