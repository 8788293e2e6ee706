/**
 * The objects of a WorkerService (worker_service.ts) — base models, training jobs, samplers — each
 * a scheduler job of its own on one device epoch, and the way every call of theirs reaches the GPU
 * worker: as one quantum of that job (`quantum`), tracked so that
 *   - a call of an object of an earlier device (or worker) rejects with LostWithDeviceError, and so
 *     does a call that fails once its device is gone (the worker names a call the device died
 *     under, DeviceLostError; its loss event may still be on its way, so it waits for it);
 *   - closing waits for the object's running quantum (`tail`) before the worker frees it, and its
 *     queued quanta reject; closing again waits for that same release;
 *   - a job cancelled through the scheduler is freed in the worker after its running quantum.
 * At a loss (`loseAll`) the epoch moves on and every object is dropped, its scheduler job
 * cancelled (freeing its reservation).
 */
import { JobStateError } from './errors.ts';
import type { GpuClient } from './gpu_client.ts';
import type { Scheduler } from './scheduler.ts';
import type { ModelRecipe } from './worker_revive.ts';
import { type Api, LostWithDeviceError, type Owned } from './worker_types.ts';

/** What the objects need besides the worker and the scheduler. */
export interface ObjectHooks {
  /** Resolves once a loss after `epoch` has been handled (worker_revive.ts). */
  lossReported(epoch: number): Promise<void>;
  /** A sampler was closed: it is not to come back after a loss. */
  samplerClosed(samplerId: string): void;
}

export class ServiceObjects {
  /** One more at each device loss or worker crash. */
  epoch = 0;
  #lostWhy = '';
  readonly models = new Map<string, Owned & ModelRecipe>();
  readonly jobs = new Map<string, Owned>();
  readonly samplers = new Map<string, Owned>();

  constructor(readonly gpu: GpuClient, readonly scheduler: Scheduler, readonly hooks: ObjectHooks) {}

  /** A new object of the current epoch, its scheduler job `schedId` (submitted by the caller). */
  owned(schedId: string, kind: Owned['kind']): Owned {
    return { schedId, epoch: this.epoch, kind, closed: false, tail: Promise.resolve() };
  }

  /** A client's (or model's) scheduler job id. */
  schedId(id: string): string {
    return this.models.has(id) ? `model:${id}` : id;
  }

  /** End an object's scheduler job (cancel rejects its queued quanta; finish after a close). */
  end(o: Owned, how: 'cancel' | 'finish'): void {
    o.closed = true;
    const st = this.scheduler.stats(o.schedId).state;
    if (st === 'cancelled' || st === 'finished') return;
    if (how === 'cancel') this.scheduler.cancel(o.schedId);
    else this.scheduler.finish(o.schedId);
  }

  /** A job cancelled through the scheduler: free what it holds in the worker (after its running quantum). */
  onCancelled(schedId: string): void {
    const find = (m: Map<string, Owned>) => [...m.entries()].find(([, o]) => o.schedId === schedId);
    for (const [map, release] of [
      [this.jobs, (id: string) => (api: Api) => api.closeJob(id)],
      [this.samplers, (id: string) => (api: Api) => api.closeSampler(id)],
      [this.models as Map<string, Owned>, (id: string) => (api: Api) => api.releaseModel(id)],
    ] as const) {
      const hit = find(map);
      if (!hit) continue;
      const [id, o] = hit;
      o.closed = true;
      map.delete(id);
      if (o.epoch === this.epoch) o.release = o.tail.then(() => this.gpu.call(release(id))).catch(() => {});
    }
  }

  /** A loss (`why`: which, for the errors): the epoch moves on, every object is dropped and its job cancelled; returns their ids. */
  loseAll(why: string): { models: string[]; jobs: string[]; samplers: string[] } {
    this.epoch++;
    this.#lostWhy = why;
    const lost = { models: [...this.models.keys()], jobs: [...this.jobs.keys()], samplers: [...this.samplers.keys()] };
    const all = [...this.samplers.values(), ...this.jobs.values(), ...this.models.values()];
    this.models.clear();
    this.jobs.clear();
    this.samplers.clear();
    for (const o of all) this.end(o, 'cancel');
    return lost;
  }

  /** Run `f` in the worker as one quantum of `o`'s scheduler job. */
  quantum<T>(o: Owned, objectId: string, label: string, f: (api: Api) => Promise<T>): Promise<T> {
    return this.track(o, objectId, () => this.scheduler.quantum(o.schedId, () => {
      if (!this.isLive(o)) throw this.lost(objectId);
      return this.gpu.call(f);
    }, label));
  }

  /** A LostWithDeviceError for an object of an earlier device (or worker). */
  lost(objectId: string, cause?: unknown): LostWithDeviceError {
    return new LostWithDeviceError(objectId, this.#lostWhy, cause === undefined ? undefined : { cause });
  }

  /** Start `start()` (a call of `o`'s) unless `o` is gone; a failure after a loss becomes LostWithDeviceError; `o.tail` follows it. */
  track<T>(o: Owned, objectId: string, start: () => Promise<T>): Promise<T> {
    if (o.epoch !== this.epoch) return Promise.reject(this.lost(objectId));
    if (o.closed && this.scheduler.stats(o.schedId).state === 'finished') {
      return Promise.reject(new JobStateError(`"${objectId}" was closed`));
    }
    const p = start().catch(async (e) => {
      // The worker names a call the device died under; its loss event may still be on its way.
      if (o.epoch === this.epoch && (e as Error | null)?.name === 'DeviceLostError') await this.hooks.lossReported(o.epoch);
      throw o.epoch !== this.epoch && !(e instanceof LostWithDeviceError) ? this.lost(objectId, e) : e;
    });
    const before = o.tail;
    o.tail = p.then(() => before, () => before);
    return p;
  }

  isLive(o: Owned): boolean {
    return o.epoch === this.epoch;
  }

  /** Forget a closed job or sampler and free its scheduler reservation. */
  closed(o: Owned, id: string): void {
    (o.kind === 'job' ? this.jobs : this.samplers).delete(id);
    if (o.kind === 'sampler') this.hooks.samplerClosed(id);
    this.end(o, 'finish');
  }

  /**
   * A client's close(): queued quanta reject, the running one completes, then the worker frees
   * the object with `release`. Closing again (or after a cancel) waits for that same release.
   */
  closeOwned(o: Owned, id: string, release: (api: Api) => Promise<void>): Promise<void> {
    if (o.kind === 'sampler') this.hooks.samplerClosed(id);
    if (o.closed) return o.release ?? Promise.resolve();
    this.closed(o, id);
    o.release = o.tail.then(() => (this.isLive(o) ? this.gpu.call(release) : undefined));
    return o.release;
  }

  /** The service closes: every job and sampler closed, every model's job finished. */
  closeAll(): void {
    for (const [id, o] of [...this.samplers, ...this.jobs]) this.closed(o, id);
    for (const o of this.models.values()) this.end(o, 'finish');
    this.models.clear();
  }
}
