/**
 * A finished fleet job's adapter, copied from the fleet's store (the NATS KvStore, over
 * WebSocket) into this browser's demo store, so the train page lists it with the runs it trained
 * itself and can load, play and export it. What the train page needs besides the adapter is the
 * base it applies to (the fleet stores it as record `bases/<job>`, results.ts) and the run's
 * settings and results (`results/<job>`), saved as the run's checkpoint first; the adapter is
 * written last (downloadAdapter), as DemoStore.save does, so the run is listed only once whole.
 */
import { downloadAdapter } from '../../../src/fleet/browser.ts';
import type { FleetJob } from '../../../src/fleet/jobs.ts';
import { type AdapterMeta, type KvStore, type LoraConfig, type ModelConfig, StoreError, StoreNotFoundError } from '../../../src/mod.ts';
import { decodeNonFinite } from '../../../src/runtime/job_checkpoint.ts';
import type { JobSummary } from '../../../src/runtime/rl_job.ts';
import { VersionedRecords } from '../../../src/runtime/store/records.ts';
import type { DemoStore, RunInfo } from './adapters.ts';
import type { DemoAlgo, DemoSettings } from './job.ts';

/** What a worker stores as `results/<job>` (src/fleet/results.ts's StoredResult). */
interface FleetResult {
  summary: JobSummary;
  cfg: ModelConfig;
  lora: LoraConfig | null;
  adapterVersion: number;
  baseVersion: number | null;
  pretrained?: unknown;
}

/** The job's settings as the demos record a run's (DemoSettings). */
function demoSettings(job: FleetJob, summary: JobSummary): DemoSettings {
  const s = job.settings;
  return {
    env: s.env, algo: s.algo as DemoAlgo, model: s.model, hub: '', base: 'scratch', steps: s.steps, warmstart: summary.warmStartSteps,
    groups: s.groups, groupSize: s.groupSize, seed: s.seed, evalEpisodes: s.evalEpisodes,
  };
}

/** Copy job `job.id`'s adapter and base into `store` under the job id; resolves with the adapter's metadata. */
export async function saveFleetRun(store: DemoStore, fleet: KvStore, job: FleetJob): Promise<AdapterMeta> {
  const raw = await fleet.get<FleetResult>(`results/${job.id}`);
  if (!raw) throw new StoreNotFoundError(`result of job "${job.id}"`);
  const r = decodeNonFinite(raw) as FleetResult;
  if (!r.lora) throw new StoreError(`job "${job.id}" trained every parameter: the demos keep LoRA adapters only`);
  if (r.pretrained !== undefined || r.baseVersion === null) throw new StoreError(`job "${job.id}" trained a pretrained model: the demos keep adapters of from-scratch runs (their base is stored with them)`);
  const base = await new VersionedRecords(fleet, 'bases', 'base').load(job.id, r.baseVersion);
  const info: RunInfo = {
    settings: demoSettings(job, r.summary), cfg: r.cfg, lora: r.lora, successBefore: r.summary.successBefore, successAfter: r.summary.successAfter,
    rewardCurve: [...r.summary.rewardCurve], wallSeconds: r.summary.wallSeconds,
  };
  await store.bases.save(job.id, base.tensors, { step: info.settings.warmstart, state: info });
  return await downloadAdapter(fleet, job.id, store.kv, { version: r.adapterVersion });
}
