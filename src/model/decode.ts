/**
 * Decode: one new token per sequence per step, against the KV cache, with the sampler in the
 * loop — all recorded, no host round trip between steps.
 *
 * One step (B sequences; the token ids come from the previous step's sampler, on the GPU):
 *   x = tok_emb[ids] (+ pos_emb[positions] for gpt2)              [B, C]
 *   per layer: h = norm1(x); q, k, v = linear(h)
 *              llama: rotate q, k in place at positions[b] (rope.ts)
 *              kvAppend: write k, v at cache row positions[b]
 *              att = attentionDecode(q, cache, lengths)             (lengths include the new row)
 *              x += o(att); x += mlp(norm2(x))
 *   logits = finalNorm(x)·Headᵀ                                      [B, V]
 *   sample(logits, keys) → tokens, logprobs, logprobsRaw             the next step's ids
 *   kvAdvance: history[step] = the sample; positions = lengths; lengths += 1; counter += 1
 * After a prefill (lengths = prompt lengths) one `recordSampleStep` turns the prompt's logits into
 * the first token and the state for feeding it; each `recordDecodeStep` + `recordSampleStep`
 * then produces one more token.
 */
import { ShapeError } from '../errors.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { attentionDecode } from '../ops/attention.ts';
import { embeddingForward } from '../ops/embedding.ts';
import { kvAdvance, kvAppend } from '../ops/kv_cache.ts';
import { sample, type SampleOptions } from '../ops/sample.ts';
import { type BlockScratch, blockForward, blockScratch, headForward, view } from './infer_block.ts';
import type { KvCache } from './kv_cache.ts';
import { ropeQK } from './rope.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

/** Scratch of the decode steps of one recording (B rows), reused by every step. */
export interface DecodeScratch {
  readonly ws: BlockScratch;
  /** [B, V] */
  readonly logits: Tensor;
}

export function decodeScratch(rec: Recorder, weights: ModelWeights, adapter: AdapterWeights | null, B: number): DecodeScratch {
  const cfg = weights.cfg;
  return { ws: blockScratch(rec, cfg, B, adapter, 'decode'), logits: rec.temp([B, cfg.vocabSize], 'f32', 'decode/logits') };
}

/**
 * One decode step: feeds `tokens` i32 [B] at rows cache.positions, appends every layer's k/v
 * there, and writes (=) ds.logits [B, V]. The cache's positions/lengths must already count the
 * fed token (recordSampleStep's kvAdvance does that).
 */
export function recordDecodeStep(rec: Recorder, weights: ModelWeights, adapter: AdapterWeights | null, cache: KvCache, ds: DecodeScratch, tokens: Tensor): void {
  const cfg = weights.cfg;
  const { B } = cache;
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = cfg;
  const { ws } = ds;
  if (ws.N !== B) throw new ShapeError('decode', `scratch has ${ws.N} rows for a cache of B = ${B} sequences`);
  if (tokens.dtype !== 'i32' || tokens.size !== B) throw new ShapeError('decode', `tokens (${tokens}) must be i32 with B = ${B} values`);
  const pos = cfg.family === 'gpt2' ? { wpe: weights.param('pos_emb.weight'), pos: cache.positions } : undefined;
  embeddingForward(rec, ws.x, tokens, weights.param('tok_emb.weight'), pos);
  const q4 = view(ws.q, [B, 1, Hq, D]);
  const k4 = view(ws.k, [B, 1, Hkv, D]);
  const v4 = view(ws.v, [B, 1, Hkv, D]);
  const q3 = view(ws.q, [B, Hq, D]);
  const att3 = view(ws.att, [B, Hq, D]);
  const pos2 = view(cache.positions, [B, 1]);
  const attend = (layer: number) => {
    if (cfg.family === 'llama') ropeQK(rec, cfg, q4, k4, pos2);
    kvAppend(rec, cache.k[layer], cache.v[layer], k4, v4, cache.positions);
    attentionDecode(rec, att3, q3, cache.k[layer], cache.v[layer], cache.lengths);
  };
  for (let l = 0; l < cfg.nLayer; l++) blockForward(rec, ws, weights, adapter, l, attend);
  headForward(rec, ws, weights, ds.logits, ws.x, ws.h);
}

/** Sampler settings of a generation (the seed and the per-sequence streams live in cache.keys). */
export type DecodeSampling = Omit<SampleOptions, 'keys' | 'step' | 'streamBase'>;

/** The sampler's outputs of one step, i32/f32 [B]; the tokens feed the next step. */
export interface SampleBuffers {
  readonly tokens: Tensor;
  readonly logprobs: Tensor;
  readonly logprobsRaw: Tensor;
}

/**
 * Samples from `logits` [B, V] with the cache's per-sequence keys, then advances the decode
 * state and records the sample in history u32 [K, B, 3] at row `step` (see kvAdvance).
 */
export function recordSampleStep(rec: Recorder, cache: KvCache, logits: Tensor, out: SampleBuffers, history: Tensor, step: number, opts: DecodeSampling): void {
  sample(rec, out.tokens, out.logprobs, out.logprobsRaw, logits, { ...opts, keys: cache.keys });
  kvAdvance(rec, cache, out, history, step, cache.Tmax);
}
