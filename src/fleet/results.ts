/**
 * A finished fleet job's result in the shared store, and the run folder `fetch` rebuilds from it.
 *
 * Layout (job id J, in the NATS KvStore): the trained tensors as AdapterStore record J (the LoRA
 * adapter, or every parameter of a full run, rank 0), the base a LoRA adapter belongs to as
 * record `bases/J`, and `results/J` — the summary plus the model and LoRA configs — written last:
 * it is the commit point a worker writes (fenced by its delivery epoch) before it acks the job.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { HostParams } from '../runtime/clients.ts';
import { decodeNonFinite, encodeNonFinite } from '../runtime/job_checkpoint.ts';
import type { JobResult, JobSummary } from '../runtime/rl_job.ts';
import { AdapterStore } from '../runtime/store/adapter_store.ts';
import { StoreNotFoundError } from '../runtime/store/errors.ts';
import type { KvStore } from '../runtime/store/kv.ts';
import { type StoredTensor, storedF32, VersionedRecords } from '../runtime/store/records.ts';
import { writeRunOutputs } from '../cli/train.ts';
import { readRepoTexts } from '../hub/pretrained.ts';
import { hubOptionsOf } from '../runtime/clients.ts';
import { type PretrainedJob, TOKENIZER_FILES } from '../runtime/pretrained_job.ts';

interface StoredResult {
  summary: JobSummary;
  cfg: ModelConfig;
  lora: LoraConfig | null;
  adapterVersion: number;
  baseVersion: number | null;
  /** The pretrained checkpoint (repo, commit) a job trained on; its tokenizer files are read again by `fetch`. */
  pretrained?: PretrainedJob;
}

const paramsOf = (t: readonly StoredTensor[]): HostParams => Object.fromEntries(t.map((x) => [x.name, x.data as Float32Array]));

/** Store the result (tensors first, `results/<id>` last); returns the adapter's version. */
export async function saveResult(kv: KvStore, id: string, r: JobResult, summary: JobSummary): Promise<number> {
  const { cfg, lora, tensors, base } = r.trained;
  const adapter = await new AdapterStore(kv).save(id, storedF32(tensors), {
    baseModel: cfg.name ?? cfg.family,
    rank: lora?.rank ?? 0,
    alpha: lora?.alpha ?? 0,
    targetModules: [...(lora?.targets ?? [])],
    step: summary.steps,
    metrics: { successBefore: summary.successBefore, successAfter: summary.successAfter, rewardBefore: summary.rewardBefore, rewardAfter: summary.rewardAfter },
  });
  const baseVersion = base ? (await new VersionedRecords<{ step: number }>(kv, 'bases', 'base').save(id, storedF32(base), { step: 0 })).version : null;
  const stored: StoredResult = { summary, cfg, lora, adapterVersion: adapter.version, baseVersion, ...(r.trained.pretrained ? { pretrained: r.trained.pretrained.job } : {}) };
  // NaN curves (skipped steps) survive JSON tagged, as in checkpoints.
  await kv.setMany([[`results/${id}`, encodeNonFinite(stored)]]);
  return adapter.version;
}

/** The stored result of a finished job, as runTraining returned it. */
export async function loadResult(kv: KvStore, id: string): Promise<JobResult> {
  const raw = await kv.get<StoredResult>(`results/${id}`);
  if (!raw) throw new StoreNotFoundError(`result of job "${id}"`);
  const stored = decodeNonFinite(raw) as StoredResult;
  if (!stored) throw new StoreNotFoundError(`result of job "${id}"`);
  const adapter = await new AdapterStore(kv).load(id, stored.adapterVersion);
  const base = stored.baseVersion === null ? undefined : paramsOf((await new VersionedRecords(kv, 'bases', 'base').load(id, stored.baseVersion)).tensors);
  const pretrained = stored.pretrained ? { pretrained: { job: stored.pretrained, tokenizerFiles: await tokenizerFilesOf(stored.pretrained) } } : {};
  return { ...stored.summary, trained: { cfg: stored.cfg, lora: stored.lora, tensors: paramsOf(adapter.tensors), ...(base ? { base } : {}), ...pretrained } };
}

/**
 * A pretrained job's tokenizer files for its exported adapter, from the fetching host's Hugging
 * Face cache or the Hub (the small files alone, at the job's commit): too large for a KV value
 * (Qwen's tokenizer.json is 7 MB), and the same bytes wherever they are read.
 */
async function tokenizerFilesOf(job: PretrainedJob): Promise<Record<string, Uint8Array>> {
  // Online unless this host says otherwise (HF_HUB_OFFLINE): the fetching host may lack the files.
  const { offline: _jobOffline, ...where } = job;
  const { texts } = await readRepoTexts(job.repo, [], TOKENIZER_FILES, hubOptionsOf(where));
  return Object.fromEntries(Object.entries(texts).map(([f, t]) => [f, new TextEncoder().encode(t)]));
}

/** Write the run folder as `npm run train` does: metrics.jsonl, summary.json, the weights, curve.svg. */
export async function writeRunFolder(dir: string, result: JobResult, metricsJsonl: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'metrics.jsonl'), metricsJsonl);
  return [join(dir, 'metrics.jsonl'), ...(await writeRunOutputs(dir, result))];
}
