/**
 * A writer process for store_processes_test.ts (not a test itself): saves adapter `name` `count`
 * times into the file store at `dir`, save i carrying the tensors of seed `writer * 1000 + i`
 * (its `step` is the seed, so a reader can tell whose tensors a version holds), and prints one
 * JSON line per save: {"version", "seed"} or {"error"}. It prints "ready" first and starts when
 * the file `go` appears, so that every writer starts at once.
 *
 *   deno run --allow-read --allow-write test/deno/store_writer.ts DIR NAME WRITER COUNT SIZE GO [STALL]
 *
 * With STALL = k, save k writes its first tensor, prints "stalled" and waits an hour (the test
 * kills it there with SIGKILL).
 */
import { AdapterStore, type AdapterTensor } from '../../src/runtime/store/adapter_store.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';
import type { KvStore, KvValue } from '../../src/runtime/store/kv.ts';
import { Rng } from '../../src/util/rng.ts';

/** The tensors of one save: two f32 matrices filled from `seed`. */
export function writerTensors(seed: number, size: number): AdapterTensor[] {
  const r = new Rng(seed);
  return [
    { name: 'q.lora_A', shape: [4, size], dtype: 'f32', data: r.normalArray(4 * size) },
    { name: 'q.lora_B', shape: [size, 4], dtype: 'f32', data: r.normalArray(4 * size) },
  ];
}

/** Forwards to a FileKv; during save `stallAt` stops after the first tensor for an hour. */
class StallingKv implements KvStore {
  readonly kind = 'stalling(files)';
  readonly ownerTag: string;
  saves = 0;
  constructor(readonly inner: FileKv, readonly stallAt: number) {
    this.ownerTag = inner.ownerTag;
  }
  get<T>(key: string): Promise<T | undefined> {
    return this.inner.get<T>(key);
  }
  async setMany(entries: readonly (readonly [string, KvValue])[]): Promise<void> {
    if (++this.saves === this.stallAt) {
      await this.inner.setMany(entries.slice(0, 1));
      console.log('stalled');
      await new Promise((r) => setTimeout(r, 3600_000));
    }
    await this.inner.setMany(entries);
  }
  delMany(keys: readonly string[]): Promise<void> {
    return this.inner.delMany(keys);
  }
  keys(prefix?: string): Promise<string[]> {
    return this.inner.keys(prefix);
  }
  create(key: string, value: KvValue): Promise<boolean> {
    return this.inner.create(key, value);
  }
  ownerGone(tag: string): Promise<boolean | undefined> {
    return this.inner.ownerGone(tag);
  }
  sweep(prefix: string): Promise<void> {
    return this.inner.sweep(prefix);
  }
}

if (import.meta.main) {
  const [dir, name, writer, count, size, go, stall] = Deno.args;
  const files = new FileKv(dir);
  const store = new AdapterStore(stall ? new StallingKv(files, Number(stall)) : files);
  console.log('ready');
  while (!(await Deno.stat(go).then(() => true, () => false))) await new Promise((r) => setTimeout(r, 5));
  for (let i = 0; i < Number(count); i++) {
    const seed = Number(writer) * 1000 + i;
    try {
      const meta = await store.save(name, writerTensors(seed, Number(size)), { baseModel: 'm', rank: 4, alpha: 8, targetModules: ['q'], step: seed });
      console.log(JSON.stringify({ version: meta.version, seed }));
    } catch (e) {
      console.log(JSON.stringify({ error: `${(e as Error).name}: ${(e as Error).message}` }));
    }
  }
}
