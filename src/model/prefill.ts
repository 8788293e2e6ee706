/**
 * Prefill: the model's forward pass over a batch of prompts, writing every layer's keys and
 * values into an empty KV cache and producing the logits of each prompt's last token.
 *
 * Batch layout: prompts right-padded to T tokens, tokens i32 [B, T]; lengths i32 [B] real tokens
 * per prompt; positions i32 [B, T] = t on real tokens (0 on padding, as the tfjs reference).
 * Attention is causal with the padding masked by `lengths` (and the layer's window); RoPE
 * (rope.ts) rotates q and k in place at position t before k is cached; learned positions add
 * pos_emb[t]. Nothing is saved for a backward pass and the [B·T, V] logits are never formed:
 * the last real row of each sequence (row b·T + lengths[b] − 1) is gathered first — with the
 * embedding kernel, treating the hidden states as a table — and only those B rows go through the
 * final norm and the output head.
 */
import { ConfigError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import { type Tensor, tensorFrom } from '../gpu/tensor.ts';
import { attentionForward } from '../ops/attention.ts';
import { embeddingForward } from '../ops/embedding.ts';
import { kvAppend, kvExtend } from '../ops/kv_cache.ts';
import type { ModelConfig } from './config.ts';
import { attentionScale } from './arch.ts';
import { blockForward, view } from './block.ts';
import { embedInputs } from './embed.ts';
import { blockScratch, headForward, inferencePass } from './infer_block.ts';
import type { KvCache } from './kv_cache.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

/** Prompts on the GPU, right-padded. Release with `releasePrompts`. */
export interface PromptBatch {
  readonly B: number;
  readonly T: number;
  /** Host copy of the prompt lengths. */
  readonly lengthsHost: Int32Array;
  /** i32 [B, T] */
  readonly tokens: Tensor;
  /** i32 [B] */
  readonly lengths: Tensor;
  /** i32 [B, T] */
  readonly positions: Tensor;
  /** i32 [B]: b·T + lengths[b] − 1, the row of each prompt's last token */
  readonly lastRows: Tensor;
}

/**
 * Checks prompts against the model: at least one, none empty, ids integers in [0, V), none longer
 * than maxSeqLen. Throws ConfigError naming the prompt (field `prompts[i]`).
 */
export function checkPrompts(cfg: ModelConfig, prompts: readonly (readonly number[])[], where = 'prompts'): void {
  if (!Array.isArray(prompts) || prompts.length === 0) throw new ConfigError(where, 'need at least one prompt');
  prompts.forEach((p, i) => {
    if (!Array.isArray(p) || p.length === 0) throw new ConfigError(`${where}[${i}]`, 'is empty: a prompt needs at least one token');
    if (p.length > cfg.maxSeqLen) {
      throw new ConfigError(`${where}[${i}]`, `has ${p.length} tokens, more than the model's maxSeqLen of ${cfg.maxSeqLen}`);
    }
    for (let t = 0; t < p.length; t++) {
      const id = p[t];
      if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize) {
        throw new ConfigError(`${where}[${i}]`, `token ${id} at position ${t} is outside the vocabulary [0, ${cfg.vocabSize})`);
      }
    }
  });
}

/** Uploads prompts (checked with `checkPrompts`), right-padded with id 0 to the longest. */
export function uploadPrompts(ctx: GpuContext, cfg: ModelConfig, prompts: readonly (readonly number[])[], owner = 'prefill'): PromptBatch {
  checkPrompts(cfg, prompts);
  const B = prompts.length;
  const T = Math.max(...prompts.map((p) => p.length));
  const tokens = new Int32Array(B * T);
  const positions = new Int32Array(B * T);
  const lengths = new Int32Array(B);
  const lastRows = new Int32Array(B);
  prompts.forEach((p, b) => {
    lengths[b] = p.length;
    lastRows[b] = b * T + p.length - 1;
    for (let t = 0; t < p.length; t++) {
      tokens[b * T + t] = p[t];
      positions[b * T + t] = t;
    }
  });
  const up = (a: Int32Array, shape: number[], label: string) => tensorFrom(ctx, a, shape, { owner, label: `${owner}/${label}` });
  return {
    B, T, lengthsHost: lengths,
    tokens: up(tokens, [B, T], 'tokens'),
    lengths: up(lengths, [B], 'lengths'),
    positions: up(positions, [B, T], 'positions'),
    lastRows: up(lastRows, [B], 'last_rows'),
  };
}

export function releasePrompts(p: PromptBatch): void {
  for (const t of [p.tokens, p.lengths, p.positions, p.lastRows]) if (!t.released) t.release();
}

/**
 * Records the prefill of `prompts` into `cache` (which must be empty: every sequence starts at
 * row 0) and writes (=) logits [B, V] of each prompt's last token. Afterwards cache.lengths =
 * the prompt lengths. All scratch is the recording's (`rec.temp`).
 */
export function recordPrefill(rec: Recorder, weights: ModelWeights, adapter: AdapterWeights | null, cache: KvCache, prompts: PromptBatch, logits: Tensor): void {
  const cfg = weights.cfg;
  const op = 'prefill';
  const { B, T } = prompts;
  const { nHead: Hq, nKvHead: Hkv, headDim: D, dModel: C, vocabSize: V } = cfg;

  if (cache.B !== B) throw new ShapeError(op, `cache holds B = ${cache.B} sequences, the prompts ${B}`);
  if (cache.cfg !== cfg) checkSameShape(op, cache.cfg, cfg);
  const longest = Math.max(...prompts.lengthsHost);
  if (longest > cache.Tmax) throw new ShapeError(op, `a prompt of ${longest} tokens does not fit the cache's Tmax = ${cache.Tmax} rows`);
  if (logits.dtype !== 'f32' || logits.shape.length !== 2 || logits.shape[0] !== B || logits.shape[1] !== V) {
    throw new ShapeError(op, `logits (${logits}) must be f32 [${B}, ${V}]`);
  }
  cache.claimPrefill();
  const N = B * T;
  const lse = rec.temp([B, Hq, T], 'f32', 'prefill/lse');
  const ws = blockScratch(rec, cfg, N, adapter, 'prefill', lse);
  embedInputs(rec, weights, ws.x, prompts.tokens, prompts.positions);
  const scale = attentionScale(cfg);
  const h = (t: Tensor, H: number) => view(t, [B, T, H, D]);
  const pass = inferencePass(ws, B, T, prompts.positions, (r, layer, settings, s) => {
    kvAppend(r, cache.k[layer], cache.v[layer], h(s.k, Hkv), h(s.v, Hkv), cache.lengths, { count: prompts.lengths });
    attentionForward(r, h(s.att, Hq), s.lse!, h(s.q, Hq), h(s.k, Hkv), h(s.v, Hkv), { lengths: prompts.lengths, window: settings.window, scale });
  });
  const env = { cfg, weights, adapter };
  for (let l = 0; l < cfg.nLayer; l++) blockForward(rec, env, pass, ws.acts, l, ws.x, ws.x);
  kvExtend(rec, cache.lengths, prompts.lengths, cache.Tmax);
  // The last real row of each prompt: the hidden states [N, C] serve as the embedding "table".
  const last = rec.temp([B, C], 'f32', 'prefill/last');
  embeddingForward(rec, last, prompts.lastRows, ws.x);
  headForward(rec, ws, weights, logits, last, view(ws.h, [B, C]));
}

function checkSameShape(op: string, a: ModelConfig, b: ModelConfig): void {
  const keys = ['family', 'nLayer', 'nKvHead', 'headDim', 'maxSeqLen'] as const;
  for (const k of keys) {
    if (a[k] !== b[k]) throw new ShapeError(op, `the cache was made for ${k} = ${a[k]}, the weights have ${b[k]}`);
  }
}
