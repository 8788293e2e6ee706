/**
 * Published adapter versions of a service, and which of them are on the GPU (multi-LoRA inference).
 *
 * A training job publishes its LoRA adapter under a name (TrainingClient.saveWeightsForSampler):
 * each publish is the next version of that name, kept as host tensors. An inference client over
 * the base model names an adapter per request — `name` (the latest version at the time the request
 * is served) or `name@v` (that version) — so a published version is picked up by the next request,
 * with the base untouched, and every result says which version produced it.
 *
 * Residency: versions are uploaded to the GPU on demand and kept in least-recently-used order, at
 * most `maxResident` of them; loading one more evicts the least recently used that no running call
 * holds (`acquire` pins, `release` unpins: a call needing more adapters than the capacity keeps
 * them all until it ends, then the cache shrinks back). Host copies of the last `keepVersions`
 * versions of each name are kept; older ones are dropped (a request for them is a ConfigError).
 */
import { ConfigError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { LoraAdapter } from '../model/lora.ts';
import type { AdapterWeights } from '../model/weights_view.ts';
import type { SampleFn, SampleRequest, SampleResult } from '../env/types.ts';
import type { HostParams } from './clients.ts';

/** One published version (plain data). */
export interface PublishedAdapter {
  readonly name: string;
  readonly version: number;
  /** The base model it applies to. */
  readonly modelId: string;
  readonly lora: LoraConfig;
  /** The training job's applied steps when it was published. */
  readonly step: number;
  readonly bytes: number;
  /** ISO time of the publish. */
  readonly publishedAt: string;
}

export interface RegistryStats {
  /** Every kept version, by name then version. */
  readonly published: PublishedAdapter[];
  /** Resident versions (`name@v`), least recently used first. */
  readonly resident: string[];
  readonly loads: number;
  readonly evictions: number;
}

export interface AdapterRegistryOptions {
  /** Adapter versions kept on the GPU at once (default 4). */
  readonly maxResident?: number;
  /** Host copies kept per name (default 2). */
  readonly keepVersions?: number;
}

const NAME = /^[A-Za-z0-9._-]{1,128}$/;

interface Entry {
  readonly meta: PublishedAdapter;
  readonly cfg: ModelConfig;
  readonly tensors: HostParams;
}

interface Resident {
  readonly adapter: LoraAdapter;
  pins: number;
}

export const keyOf = (p: Pick<PublishedAdapter, 'name' | 'version'>) => `${p.name}@${p.version}`;

export class AdapterRegistry {
  readonly ctx: GpuContext;
  readonly maxResident: number;
  readonly keepVersions: number;
  #versions = new Map<string, Entry[]>();
  /** Insertion order = LRU order (least recent first). */
  #resident = new Map<string, Resident>();
  #loads = 0;
  #evictions = 0;

  constructor(ctx: GpuContext, opts: AdapterRegistryOptions = {}) {
    this.ctx = ctx;
    this.maxResident = opts.maxResident ?? 4;
    this.keepVersions = opts.keepVersions ?? 2;
    if (!Number.isInteger(this.maxResident) || this.maxResident < 1) throw new ConfigError('maxResidentAdapters', `must be a positive integer, got ${this.maxResident}`);
    if (!Number.isInteger(this.keepVersions) || this.keepVersions < 1) throw new ConfigError('keepVersions', `must be a positive integer, got ${this.keepVersions}`);
  }

  /** Publish host tensors as the next version of `name` (the tensors are kept, not copied: do not mutate them). */
  publish(name: string, modelId: string, cfg: ModelConfig, lora: LoraConfig, tensors: HostParams, step: number): PublishedAdapter {
    if (!NAME.test(name)) throw new ConfigError('name', `adapter name "${name}" is invalid: use 1–128 of A–Z a–z 0–9 . _ - (a version is asked for as name@v)`);
    const list = this.#versions.get(name) ?? [];
    const last = list.at(-1);
    if (last && last.meta.modelId !== modelId) throw new ConfigError('name', `adapter "${name}" belongs to model "${last.meta.modelId}", not "${modelId}"`);
    const bytes = Object.values(tensors).reduce((s, t) => s + t.byteLength, 0);
    const meta: PublishedAdapter = { name, version: (last?.meta.version ?? 0) + 1, modelId, lora: structuredClone(lora), step, bytes, publishedAt: new Date().toISOString() };
    list.push({ meta, cfg, tensors });
    for (const old of list.splice(0, Math.max(0, list.length - this.keepVersions))) this.#drop(keyOf(old.meta));
    this.#versions.set(name, list);
    return meta;
  }

  /** The version a request for `ref` (`name` or `name@v`) on model `modelId` gets now. */
  resolve(ref: string, modelId: string): PublishedAdapter {
    const at = ref.lastIndexOf('@');
    const name = at < 0 ? ref : ref.slice(0, at);
    const list = this.#versions.get(name);
    if (!list || list.length === 0) throw new ConfigError('adapterId', `no published adapter "${name}" (known: ${[...this.#versions.keys()].join(', ') || 'none'})`);
    let e = list.at(-1)!;
    if (at >= 0) {
      const v = Number(ref.slice(at + 1));
      const hit = list.find((x) => x.meta.version === v);
      if (!hit) throw new ConfigError('adapterId', `adapter "${name}" has no version "${ref.slice(at + 1)}" (kept: ${list.map((x) => x.meta.version).join(', ')})`);
      e = hit;
    }
    if (e.meta.modelId !== modelId) throw new ConfigError('adapterId', `adapter "${ref}" belongs to model "${e.meta.modelId}", not "${modelId}"`);
    return e.meta;
  }

  /** The GPU copy of a version, uploaded if it is not resident; pinned until `release`. */
  acquire(p: PublishedAdapter): LoraAdapter {
    const key = keyOf(p);
    let r = this.#resident.get(key);
    if (r) {
      this.#resident.delete(key); // move to the most recent end
    } else {
      const e = this.#versions.get(p.name)?.find((x) => x.meta.version === p.version);
      if (!e) throw new ConfigError('adapterId', `adapter version "${key}" is no longer kept`);
      r = { adapter: LoraAdapter.fromHost(this.ctx, e.cfg, e.meta.lora, e.tensors, { id: key, owner: `adapters:${e.meta.modelId}` }), pins: 0 };
      this.#loads++;
    }
    r.pins++;
    this.#resident.set(key, r);
    this.#shrink();
    return r.adapter;
  }

  release(p: PublishedAdapter): void {
    const key = keyOf(p);
    const r = this.#resident.get(key);
    if (r && r.pins > 0) r.pins--;
    const kept = this.#versions.get(p.name)?.some((x) => x.meta.version === p.version);
    if (r && r.pins === 0 && !kept) this.#drop(key); // published over while a call held it
    this.#shrink();
  }

  /** Evict least recently used, unpinned versions beyond the capacity. */
  #shrink(): void {
    for (const [key, r] of this.#resident) {
      if (this.#resident.size <= this.maxResident) return;
      if (r.pins > 0) continue;
      this.#resident.delete(key);
      r.adapter.release();
      this.#evictions++;
    }
  }

  #drop(key: string): void {
    const r = this.#resident.get(key);
    if (r && r.pins === 0) {
      this.#resident.delete(key);
      r.adapter.release();
    }
  }

  stats(): RegistryStats {
    const published = [...this.#versions.keys()].sort().flatMap((n) => this.#versions.get(n)!.map((e) => e.meta));
    return { published, resident: [...this.#resident.keys()], loads: this.#loads, evictions: this.#evictions };
  }

  /** Release every resident adapter and forget every version. */
  close(): void {
    for (const r of this.#resident.values()) r.adapter.release();
    this.#resident.clear();
    this.#versions.clear();
  }
}

/**
 * One inference call over a registry: resolves each request's adapter (`name` → the latest version
 * now, `name@v`), pins those versions on the GPU for the call (so a publish or an eviction never
 * changes a running batch), samples through `make(resolver)`, and says in each result which
 * version produced it.
 */
export async function registrySample(registry: AdapterRegistry, modelId: string, requests: readonly SampleRequest[],
  make: (adapters: (id: string) => AdapterWeights | undefined) => SampleFn): Promise<readonly SampleResult[]> {
  const used = new Map<string, PublishedAdapter>();
  const reqs = requests.map((r) => {
    if (r.adapterId === undefined) return r;
    const p = registry.resolve(r.adapterId, modelId);
    used.set(keyOf(p), p);
    return { ...r, adapterId: keyOf(p) };
  });
  const pinned = new Map<string, AdapterWeights>();
  try {
    for (const [key, p] of used) pinned.set(key, registry.acquire(p));
    const out = await make((id) => pinned.get(id))(reqs);
    return out.map((res, i) => {
      const p = reqs[i].adapterId === undefined ? undefined : used.get(reqs[i].adapterId!);
      return p ? { ...res, adapter: { name: p.name, version: p.version } } : res;
    });
  } finally {
    for (const key of pinned.keys()) registry.release(used.get(key)!);
  }
}
