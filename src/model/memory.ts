/**
 * Training memory estimate, for the scheduler's admission control: how many GPU bytes one
 * forward/backward + AdamW step of a job needs, split into what a LoRA job shares with other jobs
 * on the same base (the base weights) and what it owns.
 *
 * Legend: N = B·T tokens, C dModel, Hq/Hkv heads, D headDim, F dFF, V vocab, R LoRA rank,
 * P parameter count. All activations f32.
 *
 * The accounting is the engine's plan (llm.c style: explicit backward, activations saved in the
 * forward), per block:
 *   always   block input N·C, norm stats (gpt2: mean+rstd 2N per norm, llama: rstd N), q N·Hq·D,
 *            k and v N·Hkv·D each (after RoPE), attention out N·Hq·D (its backward reads it),
 *            lse N·Hq, residual after attention N·C, MLP pre-activations (gpt2: N·F before GELU;
 *            llama: gate and up, 2·N·F), and for each LoRA target x·Aᵀ, N·R;
 *   if a weight gradient needs it (full training, or a LoRA target reads it): the attention norm
 *            output N·C (q/k/v), the MLP norm output N·C (gate/up), the MLP activation N·F (down);
 *            the attention out already counts for o.
 * After the blocks: the final norm output N·C (+ stats) when the head or the tied embedding or a
 * value head is trained, and the logits N·V (their gradient is written in place), or chunk·V
 * when the loss is fused over chunks of rows.
 * With recomputation only each block's input is kept; one block's activations are rebuilt at a
 * time during the backward. Backward workspace: two N·C residual-gradient buffers, the gradients of
 * one block's activations (as large as one block's saved set) and the attention workspace 2·N·Hq.
 * Optimizer: AdamW, two f32 moments per trainable parameter; gradients f32.
 */
import { type LoraConfig, type ModelConfig } from './config.ts';
import { ModelConfigError } from './errors.ts';
import { countLoraParameters, countParameters } from './params.ts';

export interface TrainingMemoryOptions {
  /** B: sequences per micro-batch. */
  readonly batch: number;
  /** T: tokens per sequence (packed or padded). */
  readonly seqLen: number;
  /** 'full': every parameter trains (f32 weights owned by the job); 'lora': only the adapter. */
  readonly mode: 'full' | 'lora';
  /** Required for mode 'lora'. */
  readonly lora?: LoraConfig;
  /** Keep only block inputs and recompute each block in the backward. Default false. */
  readonly recompute?: boolean;
  /** Bytes per frozen base weight in 'lora' mode: 4 (f32) or 2 (f16 storage). Default 4. */
  readonly baseWeightBytes?: 2 | 4;
  /** A trained value head on the final hidden state. */
  readonly valueHead?: boolean;
  /**
   * Rows of logits alive at once when the loss is fused and chunked (logits, loss and their
   * gradient for a chunk, then the next). Default: all N rows.
   */
  readonly logitsChunkRows?: number;
}

export interface TrainingMemoryEstimate {
  /** Base weights a LoRA job shares with every job on the same base (0 in 'full' mode). */
  readonly sharedBytes: number;
  /** Weights the job owns: all of them in 'full' mode, the adapter (and value head) in 'lora' mode. */
  readonly weightBytes: number;
  readonly gradBytes: number;
  /** AdamW first and second moments. */
  readonly optimizerBytes: number;
  /** Saved forward activations (excluding logits). */
  readonly activationBytes: number;
  readonly logitsBytes: number;
  /** Backward scratch. */
  readonly workspaceBytes: number;
  /** Everything but sharedBytes: what admitting this job adds when its base is already resident. */
  readonly jobBytes: number;
  /** sharedBytes + jobBytes: the job alone on a fresh device. */
  readonly totalBytes: number;
}

function checkPosInt(field: string, x: number): void {
  if (!Number.isSafeInteger(x) || x <= 0) throw new ModelConfigError(field, `must be a positive integer, got ${x}`);
}

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
  const targets = new Set(lora?.targets ?? []);
  const N = opts.batch * opts.seqLen;
  const { dModel: C, nHead: Hq, nKvHead: Hkv, headDim: D, dFF: F, vocabSize: V } = cfg;
  const statsPerNorm = cfg.family === 'gpt2' ? 2 * N : N;
  const mlpPre = cfg.family === 'gpt2' ? N * F : 2 * N * F;

  // Floats one block saves for its backward.
  let block = N * C + 2 * statsPerNorm + N * Hq * D + 2 * N * Hkv * D + N * Hq * D + N * Hq + N * C + mlpPre;
  if (lora) block += targets.size * N * lora.rank;
  if (full || targets.has('q') || targets.has('k') || targets.has('v')) block += N * C;
  if (full || targets.has('gate') || targets.has('up')) block += N * C;
  if (full || targets.has('down')) block += N * F;

  const headTrained = full || opts.valueHead === true;
  const finalSaved = headTrained ? N * C + statsPerNorm : 0;
  const activations = opts.recompute ? cfg.nLayer * N * C + block + finalSaved : cfg.nLayer * block + finalSaved;
  const workspace = 2 * N * C + block + 2 * N * Hq;

  const valueHeadParams = opts.valueHead ? C + 1 : 0;
  const baseParams = countParameters(cfg);
  const trainable = full ? baseParams + valueHeadParams : countLoraParameters(cfg, lora as LoraConfig) + valueHeadParams;
  const sharedBytes = full ? 0 : baseParams * (opts.baseWeightBytes ?? 4);
  const weightBytes = 4 * trainable;
  const gradBytes = 4 * trainable;
  const optimizerBytes = 8 * trainable;
  const activationBytes = 4 * activations;
  const logitsBytes = 4 * Math.min(N, opts.logitsChunkRows ?? N) * V;
  const workspaceBytes = 4 * workspace;
  const jobBytes = weightBytes + gradBytes + optimizerBytes + activationBytes + logitsBytes + workspaceBytes;
  return Object.freeze({
    sharedBytes, weightBytes, gradBytes, optimizerBytes, activationBytes, logitsBytes, workspaceBytes,
    jobBytes, totalBytes: sharedBytes + jobBytes,
  });
}
