/**
 * A packed batch (src/algorithms/pack.ts) on the GPU for one training or scoring call.
 *
 * Legend: B rows, T positions per row, N = B·T tokens.
 * Segments: `seqIdBT` gives each token's segment id, negative = padding. A token attends to the
 * earlier tokens of its row with the same id (causal within a segment), so a row may hold one
 * padded sequence or several packed ones. Positions restart at 0 in each segment (the count of
 * earlier tokens of the row with the same id); padding takes position 0 — the tfjs reference's
 * refPositions convention.
 */
import { ShapeError } from '../errors.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { ModelConfig } from './config.ts';
import type { Arena } from './layers.ts';

/** Positions [B·T] restarting per segment; padding (negative id) at 0. */
export function segmentPositions(segmentsBT: Int32Array, B: number, T: number): Int32Array {
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const seen = new Map<number, number>();
    for (let t = 0; t < T; t++) {
      const s = segmentsBT[b * T + t];
      if (s < 0) continue;
      const k = seen.get(s) ?? 0;
      pos[b * T + t] = k;
      seen.set(s, k + 1);
    }
  }
  return pos;
}

/** Which per-token inputs of the loss a call uploads. */
export interface BatchNeeds {
  readonly policy?: boolean; // old log-probs, advantages
  readonly ref?: boolean; // reference log-probs
  readonly value?: boolean; // returns (+ old values when clipped)
  readonly oldValues?: boolean;
}

export interface GpuBatch {
  readonly B: number;
  readonly T: number;
  readonly N: number;
  readonly ids: Tensor; // i32 [B, T]
  readonly targets: Tensor; // i32 [N]
  readonly segments: Tensor; // i32 [B, T]
  readonly positions: Tensor; // i32 [N] (gpt2: pos_emb rows; llama: RoPE positions)
  readonly ones: Tensor; // f32 [1, N]
  readonly weights: Tensor; // f32 [N] tokenScaleBT: the token's weight in the step's loss
  readonly oldLogprobs?: Tensor; // f32 [N]
  readonly advantages?: Tensor; // f32 [N]
  readonly refLogprobs?: Tensor; // f32 [N]
  readonly returns?: Tensor; // f32 [N]
  readonly oldValues?: Tensor; // f32 [N]
  /** Tokens with a non-zero weight (host count). */
  readonly weightedTokens: number;
}

function expectLen(name: string, a: ArrayLike<number> | null, n: number): void {
  if (a && a.length !== n) throw new ShapeError('batch', `${name} has ${a.length} entries, want rows·seqLen = ${n}`);
}

/** Validates a packed batch against the model; returns [B, T]. */
export function batchDims(cfg: ModelConfig, batch: PackedBatch): [number, number] {
  const B = batch.rows;
  const T = batch.seqLen;
  if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1) throw new ShapeError('batch', `rows and seqLen must be positive integers, got ${B}, ${T}`);
  if (T > cfg.maxSeqLen) throw new ShapeError('batch', `seqLen ${T} is over the model's maxSeqLen ${cfg.maxSeqLen}`);
  const N = B * T;
  expectLen('inputsBT', batch.inputsBT, N);
  expectLen('targetsBT', batch.targetsBT, N);
  expectLen('seqIdBT', batch.seqIdBT, N);
  expectLen('tokenScaleBT', batch.tokenScaleBT, N);
  expectLen('lossMaskBT', batch.lossMaskBT, N);
  return [B, T];
}

/** Uploads what a call needs (arena-owned, released with the call). Validation first. */
export function uploadBatch(arena: Arena, cfg: ModelConfig, batch: PackedBatch, needs: BatchNeeds = {}): GpuBatch {
  const [B, T] = batchDims(cfg, batch);
  const N = B * T;
  const check = (name: string, a: ArrayLike<number> | null | undefined) => {
    if (!a) throw new ShapeError('batch', `this loss needs ${name}, which the batch does not have`);
    expectLen(name, a, N);
  };
  if (needs.policy) {
    check('oldLogprobsBT', batch.oldLogprobsBT);
    check('advantagesBT', batch.advantagesBT);
  }
  if (needs.ref) check('refLogprobsBT', batch.refLogprobsBT);
  if (needs.value) check('returnsBT', batch.returnsBT);
  if (needs.oldValues) check('oldValuesBT', batch.oldValuesBT);
  // Ids must be in the table where they matter (live inputs, weighted targets); elsewhere they
  // are clamped to 0 so lookups stay in range (their rows never reach the loss).
  const live = (i: number) => batch.seqIdBT[i] >= 0;
  const weighted = (i: number) => batch.tokenScaleBT[i] !== 0 || batch.lossMaskBT[i] !== 0;
  const ids = (name: string, a: Int32Array, matters: (i: number) => boolean) =>
    Int32Array.from(a, (x, i) => {
      if (x >= 0 && x < cfg.vocabSize) return x;
      if (matters(i)) throw new ShapeError('batch', `${name}[${i}] = ${x} is outside the vocabulary [0, ${cfg.vocabSize})`);
      return 0;
    });
  const positions = segmentPositions(batch.seqIdBT, B, T);
  const inputs = ids('inputsBT', batch.inputsBT, live);
  const targets = ids('targetsBT', batch.targetsBT, weighted);
  let weightedTokens = 0;
  for (let i = 0; i < N; i++) if (batch.tokenScaleBT[i] !== 0) weightedTokens++;
  const f32 = (a: Float32Array, label: string) => arena.upload(Float32Array.from(a), [N], label);
  return {
    B, T, N,
    ids: arena.upload(inputs, [B, T], 'ids'),
    targets: arena.upload(targets, [N], 'targets'),
    segments: arena.upload(Int32Array.from(batch.seqIdBT), [B, T], 'segments'),
    positions: arena.upload(positions, [N], 'positions'),
    ones: arena.upload(new Float32Array(N).fill(1), [1, N], 'ones'),
    weights: f32(batch.tokenScaleBT, 'token scale'),
    ...(needs.policy ? { oldLogprobs: f32(batch.oldLogprobsBT, 'old logprobs'), advantages: f32(batch.advantagesBT, 'advantages') } : {}),
    ...(needs.ref ? { refLogprobs: f32(batch.refLogprobsBT!, 'ref logprobs') } : {}),
    ...(needs.value ? { returns: f32(batch.returnsBT!, 'returns') } : {}),
    ...(needs.oldValues ? { oldValues: f32(batch.oldValuesBT!, 'old values') } : {}),
    weightedTokens,
  };
}
