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
 *
 * Durability (optional): with an AdapterStore, each publish is written to the store first — the
 * store numbers the version, and makes it visible only once completely written — and only then
 * published here; a failed write (quota, I/O) rejects the publish and leaves every earlier version
 * as it was. A request for a version this registry does not hold (a service started anew on the
 * same store, or a version older than the host copies kept) is loaded from the store, checked
 * against the base's config, and kept as a host copy (at most `keepVersions` such loads, LRU).
 * A bare `name` that this registry has published or loaded is resolved from memory (the registry
 * assumes it is the only publisher of a name once it has seen it); an unseen one asks the store
 * for its latest version. The store keeps every version until deleted through AdapterStore.
 */
import { ConfigError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { LoraAdapter } from '../model/lora.ts';
import type { AdapterWeights } from '../model/weights_view.ts';
import type { SampleFn, SampleRequest, SampleResult } from '../env/types.ts';
import type { HostParams } from './clients.ts';
import type { AdapterStore } from './store/adapter_store.ts';
import { StoreNotFoundError } from './store/errors.ts';
import { checkLoraHost } from '../model/lora.ts';

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
  /** Where every published version is also written, and where unknown versions are looked up. */
  readonly store?: AdapterStore;
}

/** A base model as the registry needs it: its id and config (for checking and uploading stored adapters). */
export interface RegistryModel {
  readonly id: string;
  readonly cfg: ModelConfig;
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
  #ctx: GpuContext;
  readonly maxResident: number;
  readonly keepVersions: number;
  readonly store: AdapterStore | undefined;
  /** Host copies of the latest published (or loaded-latest) versions, by name, oldest first. */
  #versions = new Map<string, Entry[]>();
  /** Older versions loaded from the store on request (LRU, at most keepVersions). */
  #loaded = new Map<string, Entry>();
  /** Insertion order = LRU order (least recent first). */
  #resident = new Map<string, Resident>();
  #loads = 0;
  #evictions = 0;

  constructor(ctx: GpuContext, opts: AdapterRegistryOptions = {}) {
    this.#ctx = ctx;
    this.maxResident = opts.maxResident ?? 4;
    this.keepVersions = opts.keepVersions ?? 2;
    this.store = opts.store;
    if (!Number.isInteger(this.maxResident) || this.maxResident < 1) throw new ConfigError('maxResidentAdapters', `must be a positive integer, got ${this.maxResident}`);
    if (!Number.isInteger(this.keepVersions) || this.keepVersions < 1) throw new ConfigError('keepVersions', `must be a positive integer, got ${this.keepVersions}`);
  }

  get ctx(): GpuContext {
    return this.#ctx;
  }

  /**
   * Publish host tensors as the next version of `name` (the tensors are kept, not copied: do not
   * mutate them). With a store, resolves once the version is durable (see the header).
   */
  async publish(name: string, modelId: string, cfg: ModelConfig, lora: LoraConfig, tensors: HostParams, step: number): Promise<PublishedAdapter> {
    if (!NAME.test(name)) throw new ConfigError('name', `adapter name "${name}" is invalid: use 1–128 of A–Z a–z 0–9 . _ - (a version is asked for as name@v)`);
    const owner = this.#versions.get(name)?.at(-1)?.meta.modelId ?? (this.store ? (await this.store.versions(name)).at(-1)?.baseModel : undefined);
    if (owner !== undefined && owner !== modelId) throw new ConfigError('name', `adapter "${name}" belongs to model "${owner}", not "${modelId}"`);
    let meta: PublishedAdapter;
    if (this.store) {
      const specs = checkLoraHost(cfg, lora, tensors, `adapter "${name}"`);
      const saved = await this.store.save(name, specs.map((sp) => ({ name: sp.name, shape: [...sp.shape], dtype: 'f32' as const, data: tensors[sp.name] })), {
        baseModel: modelId, rank: lora.rank, alpha: lora.alpha, targetModules: [...lora.targets], step,
      });
      meta = { name, version: saved.version, modelId, lora: structuredClone(lora), step, bytes: saved.bytes, publishedAt: saved.createdAt };
    } else {
      const bytes = Object.values(tensors).reduce((s, t) => s + t.byteLength, 0);
      meta = { name, version: (this.#versions.get(name)?.at(-1)?.meta.version ?? 0) + 1, modelId, lora: structuredClone(lora), step, bytes, publishedAt: new Date().toISOString() };
    }
    this.#keep({ meta, cfg, tensors });
    return meta;
  }

  /** Add a host copy among the latest of its name (in version order), dropping what falls out. */
  #keep(e: Entry): void {
    const list = this.#versions.get(e.meta.name) ?? [];
    list.push(e);
    list.sort((a, b) => a.meta.version - b.meta.version);
    for (const old of list.splice(0, Math.max(0, list.length - this.keepVersions))) this.#drop(keyOf(old.meta));
    this.#versions.set(e.meta.name, list);
  }

  /** A stored version as a host entry for `model` (checked against its config). */
  async #load(name: string, version: number | undefined, model: RegistryModel): Promise<Entry | undefined> {
    if (!this.store) return undefined;
    let rec;
    try {
      rec = await this.store.load(name, version);
    } catch (e) {
      if (e instanceof StoreNotFoundError) return undefined;
      throw e;
    }
    const { meta: m, tensors: stored } = rec;
    const lora: LoraConfig = { rank: m.rank, alpha: m.alpha, targets: m.targetModules as LoraConfig['targets'] };
    const tensors: HostParams = {};
    for (const t of stored) {
      if (!(t.data instanceof Float32Array)) throw new ConfigError('adapterId', `stored adapter "${name}@${m.version}" tensor "${t.name}" is ${t.dtype}, not f32`);
      tensors[t.name] = t.data;
    }
    const meta: PublishedAdapter = { name, version: m.version, modelId: m.baseModel, lora, step: m.step, bytes: m.bytes, publishedAt: m.createdAt };
    if (m.baseModel === model.id) checkLoraHost(model.cfg, lora, tensors, `stored adapter "${name}@${m.version}"`);
    return { meta, cfg: model.cfg, tensors };
  }

  #hostEntry(p: Pick<PublishedAdapter, 'name' | 'version'>): Entry | undefined {
    return this.#versions.get(p.name)?.find((x) => x.meta.version === p.version) ?? this.#loaded.get(keyOf(p));
  }

  /** The version a request for `ref` (`name` or `name@v`) on `model` gets now (loaded from the store if need be). */
  async resolve(ref: string, model: RegistryModel): Promise<PublishedAdapter> {
    const at = ref.lastIndexOf('@');
    const name = at < 0 ? ref : ref.slice(0, at);
    const list = this.#versions.get(name) ?? [];
    const known = () => [...new Set([...this.#versions.keys(), ...[...this.#loaded.values()].map((e) => e.meta.name)])].join(', ') || 'none';
    let e: Entry | undefined;
    if (at < 0) {
      e = list.at(-1);
      if (!e) {
        e = await this.#load(name, undefined, model);
        if (e) this.#keep(e);
      }
      if (!e) throw new ConfigError('adapterId', `no published adapter "${name}" (known: ${known()}${this.store ? '; none stored either' : ''})`);
    } else {
      const v = Number(ref.slice(at + 1));
      e = Number.isSafeInteger(v) && v >= 1 ? this.#hostEntry({ name, version: v }) : undefined;
      if (!e && Number.isSafeInteger(v) && v >= 1) {
        e = await this.#load(name, v, model);
        if (e) {
          this.#loaded.delete(keyOf(e.meta));
          this.#loaded.set(keyOf(e.meta), e);
          for (const k of this.#loaded.keys()) if (this.#loaded.size > this.keepVersions) this.#loaded.delete(k);
        }
      } else if (e && this.#loaded.has(keyOf(e.meta))) {
        this.#loaded.delete(keyOf(e.meta)); // most recently used
        this.#loaded.set(keyOf(e.meta), e);
      }
      if (!e) {
        if (list.length === 0 && !this.store) throw new ConfigError('adapterId', `no published adapter "${name}" (known: ${known()})`);
        throw new ConfigError('adapterId', `adapter "${name}" has no version "${ref.slice(at + 1)}" (kept: ${list.map((x) => x.meta.version).join(', ') || 'none'}${this.store ? '; not stored either' : ''})`);
      }
    }
    if (e.meta.modelId !== model.id) throw new ConfigError('adapterId', `adapter "${ref}" belongs to model "${e.meta.modelId}", not "${model.id}"`);
    return e.meta;
  }

  /** The GPU copy of a version, uploaded if it is not resident; pinned until `release`. */
  acquire(p: PublishedAdapter): LoraAdapter {
    const key = keyOf(p);
    let r = this.#resident.get(key);
    if (r) {
      this.#resident.delete(key); // move to the most recent end
    } else {
      const e = this.#hostEntry(p);
      if (!e) throw new ConfigError('adapterId', `adapter version "${key}" is no longer kept`);
      r = { adapter: LoraAdapter.fromHost(this.#ctx, e.cfg, e.meta.lora, e.tensors, { id: key, owner: `adapters:${e.meta.modelId}` }), pins: 0 };
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
    const kept = this.#hostEntry(p) !== undefined;
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

  /**
   * Take over the host copies of `from` (a registry on a device that was lost): the published
   * versions survive a device loss, only their GPU residency does not. `from` is left empty.
   */
  adopt(from: AdapterRegistry): void {
    for (const list of from.#versions.values()) for (const e of list) if (!this.#hostEntry(e.meta)) this.#keep(e);
    for (const e of from.#loaded.values()) if (!this.#hostEntry(e.meta)) this.#loaded.set(keyOf(e.meta), e);
    from.#versions.clear();
    from.#loaded.clear();
    from.close();
  }

  /** Release every resident adapter and forget every version. */
  close(): void {
    for (const r of this.#resident.values()) r.adapter.release();
    this.#resident.clear();
    this.#versions.clear();
    this.#loaded.clear();
  }
}

/**
 * One inference call over a registry: resolves each request's adapter (`name` → the latest version
 * now, `name@v`), pins those versions on the GPU for the call (so a publish or an eviction never
 * changes a running batch), samples through `make(resolver)`, and says in each result which
 * version produced it.
 */
export async function registrySample(registry: AdapterRegistry, model: RegistryModel, requests: readonly SampleRequest[],
  make: (adapters: (id: string) => AdapterWeights | undefined) => SampleFn): Promise<readonly SampleResult[]> {
  const used = new Map<string, PublishedAdapter>();
  const reqs: SampleRequest[] = [];
  for (const r of requests) {
    if (r.adapterId === undefined) {
      reqs.push(r);
      continue;
    }
    const p = await registry.resolve(r.adapterId, model);
    used.set(keyOf(p), p);
    reqs.push({ ...r, adapterId: keyOf(p) });
  }
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
