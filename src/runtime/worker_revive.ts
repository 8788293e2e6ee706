/**
 * After a device loss or a worker crash, on the new device: the sampling and inference clients a
 * WorkerService keeps recipes for (Revivable) come back — first the base models they sample, from
 * their recipes and under their ids, then each client's sampler under its id, the client pointed
 * at it. A client whose model or sampler cannot be made again stays lost (its calls reject with
 * LostWithDeviceError); a later loss starts over, and a recovery overtaken by one stops.
 * The service's side of it (its maps, scheduler jobs and epochs) is the ReviveHost.
 */
import type { ModelConfig } from '../model/config.ts';
import type { CreateModelOptions } from './clients.ts';
import { JobStateError } from './errors.ts';
import type { Revivable } from './worker_clients.ts';

/** What a recovery brought back (the service's 'recovered' event). */
export interface Restored {
  readonly models: string[];
  readonly samplers: string[];
}

export interface ReviveHost {
  /** False once a later loss has started another recovery. */
  current(): boolean;
  hasModel(modelId: string): boolean;
  createModel(cfg: ModelConfig, recipe: CreateModelOptions, modelId: string): Promise<unknown>;
  /** Makes the client's sampler again (its scheduler job and the sampler in the worker) and points the client at it. */
  reopen(r: Revivable): Promise<void>;
  /** Frees a client's sampler made again while its user closed it. */
  closeReopened(r: Revivable): Promise<void>;
  /** Keeps `r` for the next loss. */
  keep(r: Revivable): void;
}

export async function reviveClients(host: ReviveHost, revive: readonly Revivable[], recipes: ReadonlyMap<string, { cfg: ModelConfig; recipe: CreateModelOptions }>, restored: Restored): Promise<void> {
  const failed = new Set<string>();
  for (const r of revive) {
    if (!host.current() || r.client.userClosed || host.hasModel(r.modelId) || failed.has(r.modelId)) continue;
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
    if (!host.current() || r.client.userClosed || failed.has(r.modelId) || !host.hasModel(r.modelId)) continue;
    try {
      await host.reopen(r);
      if (r.client.userClosed) {
        // Closed while it was being made again: free it at once.
        await host.closeReopened(r);
        continue;
      }
      host.keep(r);
      restored.samplers.push(r.client.id);
    } catch {
      // stays lost
    }
  }
}
