/**
 * Training memory estimate, for the scheduler's admission control: how many GPU bytes one
 * forward/backward + AdamW step of a job needs, split into what a job shares with other jobs on
 * the same base (the base weights) and what it owns.
 *
 * Legend: N = B·T tokens, C dModel, Hq/Hkv heads, D headDim, Q = Hq·D, K = Hkv·D, F dFF, V vocab,
 * R LoRA rank, L layers, Nb rows of one block of logits.
 *
 * The accounting follows what the engine allocates, tensor by tensor, each in the buffer pool's
 * size class (src/gpu/pool.ts: 2^k or 1.5·2^k bytes, at least 256 — what the device pays for and
 * what the pool's peaks report; GPT-2 small's 154 MB tok_emb takes a 192 MiB buffer):
 *   base       every parameter (the block linears and an untied head at 2 bytes with an f16 base)
 *   job        'full': an f32 copy of every parameter (a BaseModel: exact sizes, no size class);
 *              'lora': the adapter (lora_a, lora_b per target module); a value head; per
 *              trainable tensor its gradient and two AdamW moments; the gradient norm, clip scale
 *              and non-finite guard
 *   call       (forward.ts, backward.ts, batch.ts, train_loss.ts) the batch's per-token inputs;
 *              resid[0..L] [N, C]; per block (one shared block with recompute) ln1, mid, ln2 [N, C],
 *              the norm statistics, q, att [N, Q], k, v [N, K], lse [N, Hq], h and act [N, F] (llama
 *              also up), x·Aᵀ [N, R] per adapted target; lnf [N, C] and its statistics; proj [N, C];
 *              values [N] with a value head; the logits block [Nb, V]; the backward's dresid, dtmp,
 *              dln [N, C], datt, dq [N, Q], dk, dv [N, K], dact, dh [N, F] (llama dup), attention work
 *              [N, Hq, 2], norm scratch, the embedding scratch when embeddings train; the loss's
 *              per-token outputs and scratch; the gradient-norm scratch; LoRA's dy·B [N, R] per
 *              adapted module (recording scratch, held until the submit)
 *   textures   where the matmul reads its operands through texture copies (llvmpipe): the copies
 *              of the largest A and B operands and one more of the smaller (the recording reuses
 *              a texture given back for a later copy that fits it, so only a few sizes are held);
 *              a weight is a B operand here only where the store did not keep its copy (a kept
 *              copy is in `kept`, never scratch: counted in both it would be counted twice); the
 *              loss's copy of a logits block is given back after its dispatch like them;
 *   kept       there too, the texture copies of the weights kept between steps (Recorder.texels):
 *              every block linear and the head (weightTexels), at most the store's limit —
 *              the base model's, shared by its LoRA jobs (not in jobBytes), or a full job's own
 *              copy's (in jobBytes)
 * Logits [N, V] are never built whole: with `device` (or `logitsChunkRows`) Nb is what one storage
 * binding holds (forward.ts logitsBlockRows), else N.
 * Checked against the pool's measured peaks by test/shared/cases/trainer.ts, which requires the
 * estimate to bound a step's peak from above, within 30% (LoRA, full, recompute + value head,
 * logits in blocks), and within 10% on a Qwen2.5-shaped LoRA job (test/shared/cases/memory_fit.ts);
 * the `pretrained` bench compares it at Qwen2.5-0.5B's real shape.
 *
 * `largestBuffer` (and `largestBaseBuffer` for the base) name the one biggest buffer asked for, in
 * bytes as requested (the pool falls back to an exact size where its size class would pass the
 * device's maxBufferSize), so admission can refuse a job no device buffer can hold before anything
 * is allocated.
 */
import { archOf } from './arch.ts';
import { adapterKind, type AdapterKind } from '../gpu/adapter_kind.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import { bucketBytes } from '../gpu/pool.ts';
import { embeddingScratchSize } from '../ops/embedding.ts';
import { splitRange } from '../gpu/chunks.ts';
import { KEPT_TEXELS_LIMIT, KEPT_TEXELS_MIN_ELEMENTS } from '../gpu/kept_texels.ts';
import { MAX_TEXTURE_COPY_BYTES, registerMaxK } from '../ops/matmul.ts';
import { quirksFor } from '../gpu/quirks/mod.ts';
import { POLICY_STATS_SIZE, policyLossScratchSize } from '../ops/policy_loss.ts';
import { reduceScratchSize } from '../ops/reduce.ts';
import { f16Eligible } from './base_model.ts';
import { type LoraConfig, loraTargetDims, type ModelConfig } from './config.ts';
import { ModelConfigError } from './errors.ts';
import { normScratchSize } from './layers.ts';
import { blockLinears, loraSpecs, numel, parameterSpecs } from './params.ts';

/** What of the device the plan depends on (`trainingMemoryDevice(ctx)` reads it off a GpuContext). */
export interface TrainingMemoryDevice {
  /** Logits are made a block of rows at a time, as many rows as one binding holds. */
  readonly maxStorageBufferBindingSize: number;
  /** The matmul and the loss read operands through texture copies (DeviceQuirks.textureReads). Default false. */
  readonly textureReads?: boolean;
  /** The adapter's loop budget (DeviceQuirks.loopBudget): texture-read products copy K ranges that fit it. Default: none. */
  readonly loopBudget?: number;
  /** Most bytes of weight texture copies kept between steps (GpuContext.keptTexels.limitBytes). Default KEPT_TEXELS_LIMIT. */
  readonly keptTexelLimitBytes?: number;
}

export interface TrainingMemoryOptions {
  /** B: sequences per micro-batch. */
  readonly batch: number;
  /** T: tokens per sequence (packed or padded). */
  readonly seqLen: number;
  /** 'full': every parameter trains (an f32 copy owned by the job); 'lora': only the adapter. */
  readonly mode: 'full' | 'lora';
  /** Required for mode 'lora'. */
  readonly lora?: LoraConfig;
  /** Keep only block inputs and recompute each block in the backward. Default false. */
  readonly recompute?: boolean;
  /** Bytes per frozen base linear weight: 4 (f32) or 2 (f16 storage). Default 4. */
  readonly baseWeightBytes?: 2 | 4;
  /** A trained value head on the final hidden state. */
  readonly valueHead?: boolean;
  /** Rows of one block of logits. Default: as many as `device`'s binding holds (at most N), or N. */
  readonly logitsChunkRows?: number;
  /** The device's binding limit and read path; without it, logits are one block of N rows and no textures are counted. */
  readonly device?: TrainingMemoryDevice;
}

export interface TrainingMemoryEstimate {
  /** Base weights, shared by every job on the same base (a full job's copy is made from them). */
  readonly sharedBytes: number;
  /** Weights the job owns: an f32 copy of the model in 'full' mode, the adapter in 'lora' mode (and a value head). */
  readonly weightBytes: number;
  readonly gradBytes: number;
  /** AdamW first and second moments (and the norm, clip scale and non-finite guard). */
  readonly optimizerBytes: number;
  /** Saved forward activations (excluding logits). */
  readonly activationBytes: number;
  /** One block of logits, [logitsRows, V] (its gradient is written in place). */
  readonly logitsBytes: number;
  readonly logitsRows: number;
  /** Backward scratch, the batch's inputs, the loss's outputs, recording scratch. */
  readonly workspaceBytes: number;
  /** Texture copies of matmul operands and of a logits block (device.textureReads). */
  readonly textureBytes: number;
  /** Weight texture copies kept between steps (device.textureReads): in jobBytes for a full job (its own weights), else shared like sharedBytes. */
  readonly keptTexelBytes: number;
  /** Everything but sharedBytes: what admitting this job adds when its base is already resident. */
  readonly jobBytes: number;
  /** sharedBytes + jobBytes (+ keptTexelBytes of the base for a LoRA job): the job alone on a fresh device. */
  readonly totalBytes: number;
  /** The largest single buffer the job itself asks for (the base's own: largestBaseBuffer), for the device's maxBufferSize. */
  readonly largestBuffer: BufferNeed;
}

/** One buffer an allocation plan asks for: what it holds and its bytes as requested. */
export interface BufferNeed {
  readonly name: string;
  readonly bytes: number;
}

const largest = (needs: readonly BufferNeed[]): BufferNeed => needs.reduce((a, b) => (b.bytes > a.bytes ? b : a));

/**
 * The base's largest tensor as stored (BaseModel: exact size; linear weights at `baseWeightBytes`,
 * embeddings and norms f32): e.g. Qwen2.5-0.5B's tied embedding, 151936 × 896 f32 = 544.5 MB.
 */
export function largestBaseBuffer(cfg: ModelConfig, baseWeightBytes: 2 | 4 = 4): BufferNeed {
  return largest(parameterSpecs(cfg).map((p) => ({ name: `${p.name} [${p.shape.join(', ')}] ${f16Eligible(p) && baseWeightBytes === 2 ? 'f16' : 'f32'}`, bytes: (f16Eligible(p) ? baseWeightBytes : 4) * numel(p.shape) })));
}

/** The device facts the estimate uses, from a GpuContext (structurally: kind and limit()). */
export function trainingMemoryDevice(ctx: { kind: AdapterKind; limit(name: string): number; keptTexels?: { limitBytes: number } }): TrainingMemoryDevice {
  const { textureReads, loopBudget } = quirksFor(ctx.kind);
  return { maxStorageBufferBindingSize: ctx.limit('maxStorageBufferBindingSize'), textureReads, loopBudget, keptTexelLimitBytes: ctx.keptTexels?.limitBytes };
}

/** The same facts from an adapter's summary (the page side of a GPU worker knows only that). */
export function adapterMemoryDevice(adapter: AdapterSummary): TrainingMemoryDevice {
  return trainingMemoryDevice({ kind: adapterKind(adapter), limit: (name) => adapter.limits[name] });
}

function checkPosInt(field: string, x: number): void {
  if (!Number.isSafeInteger(x) || x <= 0) throw new ModelConfigError(field, `must be a positive integer, got ${x}`);
}

/** Pool bytes of f32 tensors of these element counts. */
const pooled = (...elems: number[]) => elems.reduce((s, n) => s + bucketBytes(4 * n), 0);

/** Texels per row of the recorder's scratch textures (texelTableWidth: 8192 on every adapter). */
const TEXTURE_WIDTH = 8192;

/** Bytes of a scratch texture holding `elems` f32 elements (rgba32float, whole rows). */
const textureOf = (elems: number) => Math.ceil(Math.ceil(elems / 4) / TEXTURE_WIDTH) * TEXTURE_WIDTH * 16;

/** Peak GPU bytes of one training step; see the file header for what is counted. */
export function estimateTrainingMemory(cfg: ModelConfig, opts: TrainingMemoryOptions): TrainingMemoryEstimate {
  checkPosInt('batch', opts.batch);
  checkPosInt('seqLen', opts.seqLen);
  if (opts.logitsChunkRows !== undefined) checkPosInt('logitsChunkRows', opts.logitsChunkRows);
  if (opts.seqLen > cfg.maxSeqLen) throw new ModelConfigError('seqLen', `${opts.seqLen} exceeds the model's maxSeqLen ${cfg.maxSeqLen}`);
  if (opts.mode !== 'full' && opts.mode !== 'lora') throw new ModelConfigError('mode', `must be "full" or "lora", got ${String(opts.mode)}`);
  if (opts.mode === 'lora' && !opts.lora) throw new ModelConfigError('lora', 'mode "lora" needs a LoRA config');
  const full = opts.mode === 'full';
  const lora = full ? undefined : opts.lora;
  const B = opts.batch, T = opts.seqLen, N = B * T;
  const { dModel: C, nHead: Hq, vocabSize: V, nLayer: L } = cfg;
  const Q = Hq * cfg.headDim, K = cfg.nKvHead * cfg.headDim, F = cfg.dFF;
  const arch = archOf(cfg);
  const gated = arch.mlp !== 'gelu';
  const R = lora?.rank ?? 0;
  const adapted = lora ? blockLinears(cfg).filter((t) => lora.targets.includes(t)) : [];

  // Rows of one block of logits (forward.ts logitsBlockRows; 16: vec4 views round up).
  const bindingRows = opts.device ? Math.max(1, Math.floor((opts.device.maxStorageBufferBindingSize - 16) / (4 * V))) : N;
  const Nb = Math.min(N, opts.logitsChunkRows ?? bindingRows);

  // Weights, gradients, moments.
  const specs = parameterSpecs(cfg);
  const baseBytes = opts.baseWeightBytes ?? 4;
  // The base is allocated at its tensors' own sizes (BaseModel: exact buffers, 16-byte rounded).
  const sharedBytes = specs.reduce((s, p) => s + Math.max(16, Math.ceil(((f16Eligible(p) ? baseBytes : 4) * numel(p.shape)) / 16) * 16), 0);
  const trainable = [
    ...(full ? specs : loraSpecs(cfg, lora as LoraConfig)).map((p) => numel(p.shape)),
    ...(opts.valueHead ? [C, 1] : []),
  ];
  // A full job's copy of the base is a BaseModel (exact sizes, like the base at f32); an adapter,
  // a value head, gradients and moments are pooled.
  const exact = (elems: number) => Math.max(16, Math.ceil((4 * elems) / 16) * 16);
  const gradBytes = pooled(...trainable);
  const weightBytes = full ? specs.reduce((s, p) => s + exact(numel(p.shape)), 0) + (opts.valueHead ? pooled(C, 1) : 0) : gradBytes;
  const optimizerBytes = 2 * gradBytes + pooled(1, 1, 1); // + norm, clip scale, non-finite guard

  // Saved activations.
  const stats = arch.norm === 'layernorm' ? [N, N] : [N];
  const perHead = (H: number) => (arch.norm === 'layernorm' ? [N * H, N * H] : [N * H]);
  const qkNorm = arch.qkNorm ? [N * Q, N * K, ...perHead(Hq), ...perHead(cfg.nKvHead)] : [];
  const sandwich = arch.sandwichNorms ? [N * C, ...stats, N * C, ...stats] : [];
  const block = [N * C, ...stats, ...qkNorm, N * Q, N * K, N * K, N * Q, N * Hq, ...sandwich, N * C, N * C, ...stats, N * F, ...(gated ? [N * F] : []), N * F,
    ...adapted.map(() => N * R)];
  const blocks = opts.recompute ? 1 : L;
  const activationBytes = (L + 1) * pooled(N * C) + blocks * pooled(...block) + pooled(N * C, ...stats, N * C, ...(arch.sandwichNorms ? [N * C] : []))
    + (opts.valueHead ? pooled(N) : 0);
  const logitsBytes = pooled(Nb * V);

  // Backward scratch, batch inputs (a policy loss's, with reference log-probs), loss outputs.
  const embRows = Math.max(V, arch.positions === 'learned' ? cfg.maxSeqLen : 0);
  const D = cfg.headDim;
  const normScratch = Math.max(normScratchSize(cfg, N), arch.qkNorm ? normScratchSize(cfg, N * Math.max(Hq, cfg.nKvHead), D) : 0);
  const backward = [N * C, N * C, N * C, N * Q, N * Q, N * K, N * K, ...(arch.qkNorm ? [N * Q, N * K, D] : []), ...(arch.sandwichNorms ? [N * C] : []),
    N * F, N * F, ...(gated ? [N * F] : []), 2 * N * Hq, normScratch, C, C, ...(full ? [embeddingScratchSize(N, embRows)] : [])];
  const inputs = [N, N, N, N, N, N, N, N, N];
  const loss = [N, N, N, POLICY_STATS_SIZE, policyLossScratchSize(N), ...(opts.valueHead ? [N, 2] : [])];
  const workspaceBytes = pooled(...backward, ...inputs, ...loss, reduceScratchSize(...trainable)) + L * adapted.length * pooled(N * R);

  // Texture copies: the largest A (activations [N, ·], a dlogits block) and B (a weight copied per
  // recording because the store did not keep it, a LoRA factor, a window of registerMaxK rows of
  // activations as the B of a weight or factor gradient) of any product, one more of the smaller
  // of the two (a copy no texture given back was large enough for). Kept weight copies are not
  // scratch: they are keptTexelBytes. The loss's copy of a logits block is one of these: it is
  // given back after its dispatch, and the largest A counts a dlogits block.
  let textureBytes = 0;
  const loopBudget = opts.device?.loopBudget ?? Number.POSITIVE_INFINITY;
  // A full job reads (and keeps copies of) its own f32 copy of the weights, whatever the base's storage.
  const weightCopies = opts.device?.textureReads ? weightTexels(cfg, full ? 4 : baseBytes, opts.device.maxStorageBufferBindingSize, opts.device.keptTexelLimitBytes ?? KEPT_TEXELS_LIMIT, loopBudget) : null;
  if (weightCopies) {
    const maxA = textureOf(Math.max(N * Math.max(C, Q, F), Nb * V));
    const maxK = registerMaxK(R, loopBudget);
    const factors = lora ? loraSpecs(cfg, lora).map((p) => numel(p.shape)) : [];
    const maxB = Math.max(weightCopies.largestCopied, textureOf(Math.max(0, ...factors, Math.min(N, maxK) * Math.max(C, Q, F))));
    textureBytes = maxA + maxB + Math.min(maxA, maxB);
  }
  const keptTexelBytes = weightCopies?.kept ?? 0;

  // The job's own buffers that grow with the model or the batch: trainable tensors (their
  // gradients and moments are the same size), the activations and backward scratch of one
  // [N, ·] kind, the logits block, the embedding scratch.
  const trainableSpecs = [...(full ? specs : loraSpecs(cfg, lora as LoraConfig))];
  const needs: BufferNeed[] = [
    ...trainableSpecs.map((p) => ({ name: `${p.name} [${p.shape.join(', ')}] f32 (${full ? 'the job\'s copy, ' : ''}its gradient and AdamW moments)`, bytes: 4 * numel(p.shape) })),
    { name: `activations [${N}, ${Math.max(C, Q, F)}] f32`, bytes: 4 * N * Math.max(C, Q, F) },
    { name: `logits block [${Nb}, ${V}] f32`, bytes: 4 * Nb * V },
    ...(full ? [{ name: 'embedding backward scratch', bytes: 4 * embeddingScratchSize(N, embRows) }] : []),
  ];

  const jobBytes = weightBytes + gradBytes + optimizerBytes + activationBytes + logitsBytes + workspaceBytes + textureBytes + (full ? keptTexelBytes : 0);
  return Object.freeze({
    sharedBytes, weightBytes, gradBytes, optimizerBytes, activationBytes, logitsBytes, logitsRows: Nb, workspaceBytes, textureBytes,
    keptTexelBytes, jobBytes, totalBytes: sharedBytes + jobBytes + (full ? 0 : keptTexelBytes), largestBuffer: largest(needs),
  });
}

/**
 * Bytes of a base's kept weight texture copies on `device` (0 where the matmul reads no textures):
 * what its LoRA jobs' steps and its samplers keep, once, whatever the number of jobs on it.
 */
export function baseKeptTexelBytes(cfg: ModelConfig, device?: TrainingMemoryDevice, baseBytes = 4): number {
  return device?.textureReads ? weightTexels(cfg, baseBytes, device.maxStorageBufferBindingSize, device.keptTexelLimitBytes ?? KEPT_TEXELS_LIMIT, device.loopBudget ?? Number.POSITIVE_INFINITY).kept : 0;
}

/**
 * The weight texture copies a training step makes (Recorder.texels), in the order it makes them:
 * every block linear whole (half the texel bytes for an f16 base, `baseBytes` 2); the head [V, C]
 * in the forward's ranges of N of at most MAX_TEXTURE_COPY_BYTES; and where the forward split it,
 * the backward's own copies for dx = dlogits·head, which reads it unsplit along N — the whole head
 * where it fits one binding, else windows of registerMaxK rows (its K ranges; windows of a binding
 * without a loop budget). `kept`: the bytes of
 * those the store keeps — of at least KEPT_TEXELS_MIN_ELEMENTS, each while it fits under `limit`;
 * `largestCopied`: the largest of the others, copied into a scratch texture in every recording.
 */
function weightTexels(cfg: ModelConfig, baseBytes: number, maxBinding: number, limit: number, loopBudget: number): { kept: number; largestCopied: number } {
  const { dModel: C, vocabSize: V } = cfg;
  const copies: { n: number; bytes: number }[] = [];
  const linears = blockLinears(cfg).map((t) => numel(loraTargetDims(cfg, t)));
  for (let l = 0; l < cfg.nLayer; l++) for (const n of linears) copies.push({ n, bytes: (textureOf(n) * baseBytes) / 4 });
  const headRows = Math.max(1, Math.floor(MAX_TEXTURE_COPY_BYTES / (4 * C)));
  for (const [, n] of splitRange(V, headRows)) copies.push({ n: n * C, bytes: textureOf(n * C) });
  if (4 * V * C > MAX_TEXTURE_COPY_BYTES) {
    if (4 * V * C <= maxBinding) copies.push({ n: V * C, bytes: textureOf(V * C) });
    else {
      const maxK = registerMaxK(0, loopBudget);
      const rows = Number.isFinite(maxK) ? maxK : Math.max(1, Math.floor(maxBinding / (4 * C)));
      for (const [, n] of splitRange(V, rows)) copies.push({ n: n * C, bytes: textureOf(n * C) });
    }
  }
  let kept = 0;
  let largestCopied = 0;
  for (const c of copies) {
    if (c.n >= KEPT_TEXELS_MIN_ELEMENTS && kept + c.bytes <= limit) kept += c.bytes;
    else largestCopied = Math.max(largestCopied, c.bytes);
  }
  return { kept, largestCopied };
}
