/**
 * The model's input embedding, one helper for every pass: x = tok_emb[ids] (· √C where the record
 * scales embeddings, Gemma) (+ pos_emb[positions] where positions are learned, GPT-2).
 * Legend: N rows, C width.
 */
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { embeddingForward } from '../ops/embedding.ts';
import { scaleInPlace } from '../ops/residual.ts';
import { archOf } from './arch.ts';
import type { ModelConfig } from './config.ts';
import type { ModelWeights } from './weights_view.ts';

/** Gemma's √C embedding scale, in f32. */
export function embeddingScale(cfg: ModelConfig): number {
  return Math.fround(Math.sqrt(cfg.dModel));
}

/** x [N, C] (=) = the embeddings of ids (i32, N values) at positions (i32, N values). */
export function embedInputs(rec: Recorder, weights: ModelWeights, x: Tensor, ids: Tensor, positions: Tensor): void {
  const cfg = weights.cfg;
  const arch = archOf(cfg);
  const pos = arch.positions === 'learned' ? { wpe: weights.param('pos_emb.weight'), pos: positions } : undefined;
  embeddingForward(rec, x, ids, weights.param('tok_emb.weight'), pos);
  if (arch.embedScale) scaleInPlace(rec, x, embeddingScale(cfg));
}
