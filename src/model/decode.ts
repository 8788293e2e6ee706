/**
 * Decode: one new token per sequence per step, against the KV cache, with the sampler in the
 * loop — all recorded, no host round trip between steps.
 *
 * One step (B sequences; the token ids come from the previous step's sampler, on the GPU):
 *   x = tok_emb[ids] (· √C) (+ pos_emb[positions], learned)         [B, C]
 *   per layer, the one block forward (block.ts) with attention against the cache:
 *              h = norm1(x); q, k, v = linear(h) (qkNorm, rope at positions[b])
 *              kvAppend: write k, v at cache row positions[b]
 *              att = attentionDecode(q, cache, lengths; the layer's window)
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
import { kvAdvance, kvAppend } from '../ops/kv_cache.ts';
import { sample, type SampleOptions } from '../ops/sample.ts';
import { attentionScale } from './arch.ts';
import { blockForward, view } from './block.ts';
import { embedInputs } from './embed.ts';
import { type BlockScratch, blockScratch, headForward, inferencePass } from './infer_block.ts';
import type { KvCache } from './kv_cache.ts';
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
  const pos2 = view(cache.positions, [B, 1]);
  embedInputs(rec, weights, ws.x, tokens, pos2);
  const scale = attentionScale(cfg);
  const pass = inferencePass(ws, B, 1, pos2, (r, layer, settings, s) => {
    kvAppend(r, cache.k[layer], cache.v[layer], view(s.k, [B, 1, Hkv, D]), view(s.v, [B, 1, Hkv, D]), cache.positions);
    attentionDecode(r, view(s.att, [B, Hq, D]), view(s.q, [B, Hq, D]), cache.k[layer], cache.v[layer], cache.lengths, { window: settings.window, scale });
  });
  const env = { cfg, weights, adapter };
  for (let l = 0; l < cfg.nLayer; l++) blockForward(rec, env, pass, ws.acts, l, ws.x, ws.x);
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
