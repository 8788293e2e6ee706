/**
 * Device-loss revival of a WorkerService's sampling clients (worker_service.ts). Sampling clients
 * made by createSamplingClient and createInferenceClient come back after a device loss or a worker
 * crash: the service keeps their recipes here (Revivable: the client's config, its snapshot size,
 * its scheduling and how to make its sampler in the worker — with the adapter tensors, or for an
 * inference client nothing, since published versions survive a device loss in the worker, and a
 * worker crash with an adapterStore), and at a loss also the recipes of the base models then
 * loaded (their config and host params or seed). On the new device, before the service's
 * settled() resolves, the base models they sample are made again from their recipes under their
 * ids, then each client's sampler under its id, the client pointed at it; 'recovered' names them
 * (`restored`). A client whose model or sampler cannot be made again stays lost (its calls reject
 * with LostWithDeviceError); a later loss starts over, and a recovery overtaken by one stops.
 * A training job's snapshot (TrainingClient.samplingClient) is not revivable: it dies with its job;
 * training jobs come back through recovery.ts, from their checkpoints.
 * Calls that failed with DeviceLostError wait here (lossReported) for the loss to be handled, so
 * they reject with LostWithDeviceError rather than the worker's bare error.
 * The service's side of it (its maps, scheduler jobs and epochs) is the ReviveHost.
 */
import type { ModelConfig } from '../model/config.ts';
import type { CreateModelOptions } from './clients.ts';
import { JobStateError } from './errors.ts';
import type { SamplerInfo } from './protocol.ts';
import type { WorkerSamplingClient } from './worker_clients.ts';
import type { SamplerScheduleOptions } from './worker_types.ts';

/** How a WorkerService makes a sampling client again after a loss. */
export interface Revivable {
  readonly client: WorkerSamplingClient;
  readonly modelId: string;
  readonly cfg: ModelConfig;
  readonly snapshotParams: number;
  readonly sch: SamplerScheduleOptions;
  /** Creates the sampler in the worker under the given id (a quantum of its job). */
  readonly make: (samplerId: string) => Promise<SamplerInfo>;
}

/** How a base model is made again: its config and createModel options (host params by reference). */
export interface ModelRecipe {
  readonly cfg: ModelConfig;
  readonly recipe: CreateModelOptions;
}

/** What a recovery brought back (the service's 'recovered' event). */
export interface Restored {
  readonly models: string[];
  readonly samplers: string[];
}

export interface ReviveHost {
  /** The service's device epoch: one more at each loss. */
  epoch(): number;
  hasModel(modelId: string): boolean;
  createModel(cfg: ModelConfig, recipe: CreateModelOptions, modelId: string): Promise<unknown>;
  /** Makes the client's sampler again (its scheduler job and the sampler in the worker) and points the client at it. */
  reopen(r: Revivable): Promise<void>;
  /** Frees a client's sampler made again while its user closed it. */
  closeReopened(r: Revivable): Promise<void>;
}

export class Revival {
  /** Sampling and inference clients that are recreated after a loss, by sampler id. */
  readonly #revivable = new Map<string, Revivable>();
  #restored: Restored = { models: [], samplers: [] };
  readonly #lossWaiters = new Set<() => void>();

  constructor(readonly host: ReviveHost) {}

  /** What the last recovery brought back (in its 'recovered' event). */
  get restored(): Restored {
    return this.#restored;
  }

  /** Bring `r` back after a loss. */
  keep(r: Revivable): void {
    this.#revivable.set(r.client.id, r);
  }

  /** Not any more (its client was closed). */
  forget(samplerId: string): void {
    this.#revivable.delete(samplerId);
  }

  /**
   * A loss, once the host's epoch has moved on: takes what to bring back (the revivable clients, the
   * recipes of the models loaded now) and wakes the calls waiting in lossReported. Returns the
   * recovery, to run once the new device is ready.
   */
  lost(models: ReadonlyMap<string, ModelRecipe>): () => Promise<void> {
    const epoch = this.host.epoch();
    const revive = [...this.#revivable.values()];
    const recipes = new Map([...models].map(([id, m]) => [id, { cfg: m.cfg, recipe: m.recipe }]));
    for (const w of this.#lossWaiters) w();
    this.#lossWaiters.clear();
    return () => this.#revive(epoch, revive, recipes);
  }

  /** Resolves once a loss after `epoch` has been handled (or after `ms`, if none comes). */
  lossReported(epoch: number, ms = 5000): Promise<void> {
    if (this.host.epoch() !== epoch) return Promise.resolve();
    return new Promise<void>((res) => {
      const done = () => {
        clearTimeout(timer);
        this.#lossWaiters.delete(done);
        res();
      };
      const timer = setTimeout(done, ms);
      this.#lossWaiters.add(done);
    });
  }

  /** On the ready new device after the loss of `epoch`: the base models first, then the clients on them. */
  async #revive(epoch: number, revive: readonly Revivable[], recipes: ReadonlyMap<string, ModelRecipe>): Promise<void> {
    const restored: Restored = { models: [], samplers: [] };
    this.#restored = restored;
    const { host } = this;
    const current = () => host.epoch() === epoch;
    const failed = new Set<string>();
    for (const r of revive) {
      if (!current() || r.client.userClosed || host.hasModel(r.modelId) || failed.has(r.modelId)) continue;
      const m = recipes.get(r.modelId);
      try {
        if (!m) throw new JobStateError(`no recipe for model "${r.modelId}"`);
        await host.createModel(m.cfg, m.recipe, r.modelId);
        restored.models.push(r.modelId);
      } catch {
        failed.add(r.modelId);
      }
    }
    for (const r of revive) {
      if (!current() || r.client.userClosed || failed.has(r.modelId) || !host.hasModel(r.modelId)) continue;
      try {
        await host.reopen(r);
        if (r.client.userClosed) {
          // Closed while it was being made again: free it at once.
          await host.closeReopened(r);
          continue;
        }
        this.keep(r);
        restored.samplers.push(r.client.id);
      } catch {
        // stays lost
      }
    }
  }
}
