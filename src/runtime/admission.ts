/**
 * Admission of the WorkerService's jobs (worker_service.ts): what each one asks of the scheduler
 * (its kind, class, weight and memory estimate: a JobSpec), and the checks that refuse it first.
 *
 * Memory. WebGPU reports no device memory, so the scheduler's budget is charged with estimates:
 *   - a base model holds every parameter at f32 (an upper bound for f16 storage) and, on llvmpipe,
 *     the texture copies of its weights that its jobs' and samplers' matmuls keep (kept_texels.ts)
 *     — once per base, so admitted with it; N LoRA jobs on it then reserve base + N × job bytes;
 *   - a training job, estimateTrainingMemory(...).jobBytes for its configured micro-batch (for a
 *     LoRA job that excludes the shared base), as the worker's device runs it;
 *   - a sampler, its snapshot, the KV cache of one batch, prefill activations and logits.
 *
 * Buffers. The scheduler's budget bounds a job's total bytes; a device also caps every single
 * buffer (maxBufferSize: 2 GiB on llvmpipe, often 256 MiB to 4 GiB on real GPUs). A job whose
 * largest buffer passes it would fail in the middle of its allocations (the pool's LimitError), so
 * it is refused first, from the estimate alone, with the buffer and the numbers — before the
 * scheduler reserves anything or the worker allocates.
 */
import type { AdapterSummary } from '../gpu/device.ts';
import type { ModelConfig } from '../model/config.ts';
import { adapterMemoryDevice, baseKeptTexelBytes, type BufferNeed, estimateTrainingMemory, largestBaseBuffer } from '../model/memory.ts';
import { countParameters } from '../model/params.ts';
import { AdmissionError } from './errors.ts';
import type { JobSpec } from './scheduler.ts';
import type { SamplerScheduleOptions, WorkerTrainingClientOptions } from './worker_types.ts';

/** Throws AdmissionError naming `need` when it is over the adapter's maxBufferSize (no limit reported: no check). */
export function checkBufferFits(jobId: string, need: BufferNeed, adapter: Pick<AdapterSummary, 'limits'>, remedy: string): void {
  const limit = adapter.limits.maxBufferSize;
  if (limit === undefined || need.bytes <= limit) return;
  throw new AdmissionError(
    jobId,
    `its largest buffer, ${need.name}, needs ${need.bytes} bytes, more than this device's maxBufferSize of ${limit} bytes — ${remedy}`,
    { neededBytes: need.bytes, limitBytes: limit, limit: 'maxBufferSize', buffer: need.name },
  );
}

/** Rough peak bytes of a sampler: its snapshot, the KV cache of one batch, prefill activations, logits. */
export function estimateSamplingMemory(cfg: ModelConfig, batch: number, snapshotParams: number): number {
  const kv = 2 * cfg.nLayer * cfg.nKvHead * cfg.headDim;
  const width = Math.max(cfg.dModel, cfg.nHead * cfg.headDim, cfg.dFF);
  return 4 * (snapshotParams + batch * cfg.maxSeqLen * (kv + 4 * width) + 2 * batch * cfg.vocabSize);
}

/** A resident base model's job `schedId` (kind 'inference', class 'normal'); AdmissionError when its largest tensor cannot be one buffer. */
export function modelJob(schedId: string, cfg: ModelConfig, opts: { f16?: boolean }, adapter: AdapterSummary): JobSpec {
  const kept = baseKeptTexelBytes(cfg, adapterMemoryDevice(adapter));
  const f16 = Boolean(opts.f16) && adapter.features.includes('shader-f16');
  checkBufferFits(schedId, largestBaseBuffer(cfg, f16 ? 2 : 4), adapter, 'a device with larger buffers (the embedding stays f32 even with an f16 base)');
  return { id: schedId, kind: 'inference', priority: 'normal', memoryBytes: 4 * countParameters(cfg) + kept };
}

/**
 * A training job's scheduler job: kind 'lora_rl' or 'full_rl' by trainable (or `schedule.kind`),
 * class 'normal' and weight 1 unless scheduled otherwise, its estimate for the configured
 * micro-batch (default 8 × maxSeqLen); AdmissionError when one of its buffers is over maxBufferSize.
 */
export function trainingJob(id: string, cfg: ModelConfig, opts: WorkerTrainingClientOptions, adapter: AdapterSummary): JobSpec {
  const sch = opts.schedule ?? {};
  const est = estimateTrainingMemory(cfg, {
    batch: sch.batch ?? 8,
    seqLen: sch.seqLen ?? cfg.maxSeqLen,
    mode: opts.trainable === 'lora' ? 'lora' : 'full',
    ...(opts.lora ? { lora: opts.lora } : {}),
    ...(opts.recompute ? { recompute: true } : {}),
    ...(opts.valueHead ? { valueHead: true } : {}),
    // Logits in blocks of rows that fit one binding, texture copies on llvmpipe: as the worker's device runs it.
    device: adapterMemoryDevice(adapter),
  });
  checkBufferFits(id, est.largestBuffer, adapter, opts.trainable === 'lora' ? 'a smaller batch or sequence length' : 'LoRA instead of full fine-tuning, or a smaller batch');
  return {
    id,
    kind: sch.kind ?? (opts.trainable === 'lora' ? 'lora_rl' : 'full_rl'),
    priority: sch.priority ?? 'normal',
    weight: sch.weight ?? 1,
    memoryBytes: est.jobBytes,
  };
}

/** A sampler's scheduler job (kind 'inference', class 'interactive' unless scheduled otherwise), its estimate for batches of `perQuantum` requests. */
export function samplerJob(id: string, cfg: ModelConfig, perQuantum: number, snapshotParams: number, sch: SamplerScheduleOptions): JobSpec {
  return {
    id,
    kind: 'inference',
    priority: sch.priority ?? 'interactive',
    weight: sch.weight ?? 1,
    memoryBytes: estimateSamplingMemory(cfg, perQuantum, snapshotParams),
  };
}
