/** CPU reference of kernels/vocab_mask.wgsl: disallowed columns of logits [B, V] become −Inf. */
import { allowedBy } from './vocab_mask.ts';

export function vocabMaskRef(logits: Float32Array, B: number, V: number, allowed: Uint32Array): Float32Array {
  const out = logits.slice(0, B * V);
  for (let r = 0; r < B; r++) for (let j = 0; j < V; j++) if (!allowedBy(allowed, j)) out[r * V + j] = -Infinity;
  return out;
}
