/**
 * Named, versioned LoRA adapters with their metadata (base model, rank, step, metrics, time),
 * on IndexedDB in browsers and files under Deno — VersionedRecords under the "adapters" prefix.
 * `save` resolves once the new version is durable and visible; a failed save leaves the previous
 * versions loadable (see records.ts for how).
 */
import type { KvStore } from './kv.ts';
import { type StoredTensor, VersionedRecords, type VersionMeta } from './records.ts';

export { fnv1a } from './records.ts';
export type { StoredDType } from './records.ts';

/** One tensor of an adapter (f16 as raw bits in a Uint16Array). */
export type AdapterTensor = StoredTensor;

/** What a caller describes when saving. */
export interface AdapterInfo {
  baseModel: string;
  rank: number;
  alpha: number;
  targetModules: string[];
  step: number;
  metrics?: Record<string, number>;
}

/** A stored adapter version as listed: what was saved with it, plus its name, version and save time. */
export interface AdapterMeta extends AdapterInfo, VersionMeta {
  metrics: Record<string, number>;
}

/**
 * Named, versioned LoRA adapters with their metadata in a KvStore: each save of a name is a new
 * version, durable and visible when `save` resolves; a failed save leaves earlier versions loadable.
 */
export class AdapterStore {
  readonly kv: KvStore;
  #records: VersionedRecords<AdapterInfo & { metrics: Record<string, number> }>;

  constructor(kv: KvStore) {
    this.kv = kv;
    this.#records = new VersionedRecords(kv, 'adapters', 'adapter');
  }

  /** Save a new version (latest + 1). Resolves with its metadata once it is durable and visible. */
  save(name: string, tensors: readonly AdapterTensor[], info: AdapterInfo): Promise<AdapterMeta> {
    return this.#records.save(name, tensors, { ...info, targetModules: [...info.targetModules], metrics: { ...(info.metrics ?? {}) } });
  }

  /** Load a version (default: the latest). */
  load(name: string, version?: number): Promise<{ meta: AdapterMeta; tensors: AdapterTensor[] }> {
    return this.#records.load(name, version);
  }

  /** Every version of an adapter, oldest first. */
  versions(name: string): Promise<AdapterMeta[]> {
    return this.#records.versions(name);
  }

  /** The latest version of every adapter, by name. */
  list(): Promise<AdapterMeta[]> {
    return this.#records.list();
  }

  /** Delete one version, or every version when `version` is omitted. */
  delete(name: string, version?: number): Promise<void> {
    return this.#records.delete(name, version);
  }
}
