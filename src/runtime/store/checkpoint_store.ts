/**
 * Checkpoints of a run: tensors (weights or adapters, optimizer moments) plus the plain-data
 * state that makes a resume exact (step counters, generator states, environment and data
 * cursors, the metrics so far) — VersionedRecords under the "checkpoints" prefix, one record per
 * run, one version per save. `keepLast` prunes old versions after each successful save, never
 * before, so a failed save always leaves the previous checkpoint loadable.
 */
import { StoreNotFoundError } from './errors.ts';
import type { KvStore } from './kv.ts';
import { type StoredTensor, VersionedRecords, type VersionMeta } from './records.ts';

/** What a checkpoint holds besides its tensors: the step and the run state to resume from. */
export interface CheckpointInfo<S = unknown> {
  /** Training step the checkpoint was taken after. */
  step: number;
  /** Plain, structured-clone-safe run state (generators, cursors, optimizer counters, metrics). */
  state: S;
}

/** A stored checkpoint version as listed: its CheckpointInfo, version and save time. */
export type CheckpointMeta<S = unknown> = CheckpointInfo<S> & VersionMeta;

/**
 * Versioned training checkpoints of runs (tensors and plain run state) in a KvStore; `keepLast`
 * prunes older versions after each save.
 */
export class CheckpointStore<S = unknown> {
  readonly kv: KvStore;
  /** Versions kept per run after a save (older ones are deleted); Infinity keeps all. */
  readonly keepLast: number;
  #records: VersionedRecords<CheckpointInfo<S>>;

  constructor(kv: KvStore, opts: { keepLast?: number } = {}) {
    this.kv = kv;
    this.keepLast = opts.keepLast ?? 3;
    if (!(this.keepLast >= 1)) throw new RangeError(`CheckpointStore: keepLast must be ≥ 1, got ${this.keepLast}`);
    this.#records = new VersionedRecords(kv, 'checkpoints', 'checkpoint');
  }

  /** Save a checkpoint of `run`; resolves once durable, then prunes beyond `keepLast`. */
  async save(run: string, tensors: readonly StoredTensor[], info: CheckpointInfo<S>): Promise<CheckpointMeta<S>> {
    const meta = await this.#records.save(run, tensors, info);
    const all = await this.#records.versions(run);
    for (const old of all.slice(0, Math.max(0, all.length - this.keepLast))) {
      // Another writer of this run may have pruned it already.
      await this.#records.delete(run, old.version).catch((e) => {
        if (!(e instanceof StoreNotFoundError)) throw e;
      });
    }
    return meta;
  }

  /** The latest checkpoint of `run` (or a given version). */
  load(run: string, version?: number): Promise<{ meta: CheckpointMeta<S>; tensors: StoredTensor[] }> {
    return this.#records.load(run, version);
  }

  /** The latest checkpoint's metadata, or undefined when the run has none. */
  async latest(run: string): Promise<CheckpointMeta<S> | undefined> {
    return (await this.#records.versions(run)).at(-1);
  }

  versions(run: string): Promise<CheckpointMeta<S>[]> {
    return this.#records.versions(run);
  }

  delete(run: string, version?: number): Promise<void> {
    return this.#records.delete(run, version);
  }
}
