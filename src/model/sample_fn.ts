/**
 * engineSampleFn — the env layer's SampleFn (src/env/types.ts) over `generate`, so agents roll
 * out episodes on the GPU engine.
 *
 * A batch of requests is split into groups that can share one generate() call — same adapter,
 * temperature, stop tokens, stop strings and allowed tokens — and each group runs as one batch (split into
 * batches of at most `maxBatch` sequences whose padded prefill, logits [B, V] and per-layer KV
 * cache [B, Tmax, Hkv, D] each fit one storage binding; a request whose own cache cannot is
 * refused with a LimitError before anything runs). The
 * adapter is resolved per request id (undefined = the base model), so switching adapters never
 * touches the base weights.
 *
 * Randomness: every request samples from its own Philox stream, stream = request.seed, under
 * the sampler seed `opts.seed` (default 0): a request's tokens depend on its prompt, settings and
 * seed only, not on which requests share its batch.
 * Budget: a request's maxTokens is capped so that prompt + tokens fit the model's maxSeqLen (the
 * result is then shorter, as the contract allows); a prompt that already fills maxSeqLen gets an
 * empty result.
 * Log-probs: by default the policy's log-probs at T = 1 (generate's `logprobs`, what the training
 * loss recomputes); `logprobs: 'sampling'` returns the sampling distribution's instead (after
 * temperature and filters, generate's `samplingLogprobs`). At temperature 1 without top-k/top-p
 * the two are the same quantity. A request with `allowedTokens` samples from the policy
 * renormalised over those ids (the rest masked, as the service's own vocabMask masks its unused
 * ids), and both log-probs are that distribution's.
 */
import { ConfigError, LimitError } from '../errors.ts';
import type { SampleFn, SampleRequest, SampleResult } from '../env/types.ts';
import type { GpuContext } from '../gpu/device.ts';
import { type FinishReason, generate, type GenerateOptions } from './generate.ts';
import { logitsRowLimit, weightsCtx } from './infer_block.ts';
import { kvCacheRowLimit } from './kv_cache.ts';
import type { ModelConfig } from './config.ts';
import type { VocabMask } from '../ops/vocab_mask.ts';
import type { Tokenizer } from './tokenizer/tokenizer.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

export interface EngineSampleFnOptions {
  readonly weights: ModelWeights;
  /** Resolves a request's adapterId; may return undefined for an unknown id (→ ConfigError). */
  readonly adapters?: (id: string) => AdapterWeights | undefined | Promise<AdapterWeights | undefined>;
  /** Detokenizer, needed when requests carry stop strings. */
  readonly decode?: (ids: readonly number[]) => string;
  readonly topK?: number;
  readonly topP?: number;
  /** Sampler seed (u32) shared by all requests; each request's own seed picks its stream. Default 0. */
  readonly seed?: number;
  /** Decode steps per submission (generate's chunk). */
  readonly chunk?: number;
  /** Most sequences per generate() call. Default 64. */
  readonly maxBatch?: number;
  /**
   * Results also say why each sequence ended (`stopReason`: 'stop' for a stop token or string,
   * 'length' for maxTokens or the context). Off by default: results stay the env contract's fields.
   */
  readonly stopReasons?: boolean;
  /** Streaming (generate's onTokens): request `index`'s new tokens after each decode chunk. */
  readonly onTokens?: (index: number, tokens: readonly number[], done: boolean) => void;
  /** Which log-probs the results carry. Default 'policy'. */
  readonly logprobs?: 'policy' | 'sampling';
  /** Owner of the generation buffers in the pool. Default 'sample'. */
  readonly owner?: string;
  /** Wraps each chunk's GPU work (generate's `quantum`), e.g. a scheduler's quantum. */
  readonly quantum?: GenerateOptions['quantum'];
  /** Ids never sampled (generate's `vocabMask`); `tokenizerVocabMask(tokenizer)` builds it. */
  readonly vocabMask?: VocabMask;
  readonly ctx?: GpuContext;
}

/**
 * Most prompt rows (sequences × the longest prompt, padding included) one prefill can take: its
 * widest activation [rows, max(C, Hq·D, F)] f32 must fit one storage binding.
 */
export function prefillRowLimit(ctx: GpuContext, cfg: ModelConfig): number {
  const width = Math.max(cfg.dModel, cfg.nHead * cfg.headDim, cfg.dFF);
  return Math.max(1, Math.floor(ctx.limit('maxStorageBufferBindingSize') / (4 * width)));
}

/** What a batch may hold: sequences, padded prefill rows, KV-cache rows (sequences × longest prompt + tokens). */
interface BatchLimits {
  readonly sequences: number;
  readonly prefillRows: number;
  readonly cacheRows: number;
}

/**
 * Splits a group (per request in request order: prompt length and cache rows, i.e. prompt plus
 * the tokens it may generate) into generate() batches of at most `limits.sequences` sequences
 * whose padded prefill (count × longest prompt) and KV cache (count × most cache rows) stay
 * within their limits; a request over a limit alone still gets a batch of its own (a prompt the
 * kernels then refuse; a cache is refused before: see engineSampleFn).
 */
function batches(items: readonly { prompt: number; cache: number }[], limits: BatchLimits): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let prompt = 0;
  let cache = 0;
  items.forEach((it, j) => {
    const p = Math.max(prompt, it.prompt);
    const c = Math.max(cache, it.cache);
    const n = cur.length + 1;
    if (cur.length > 0 && (n > limits.sequences || n * p > limits.prefillRows || n * c > limits.cacheRows)) {
      out.push(cur);
      cur = [];
      prompt = 0;
      cache = 0;
    }
    cur.push(j);
    prompt = Math.max(prompt, it.prompt);
    cache = Math.max(cache, it.cache);
  });
  if (cur.length > 0) out.push(cur);
  return out;
}

function groupKey(r: SampleRequest): string {
  const allowed = r.allowedTokens === undefined ? null : [...new Set(r.allowedTokens)].sort((a, b) => a - b);
  return JSON.stringify([r.adapterId ?? null, r.temperature, [...r.stopTokens], [...r.stopStrings], allowed]);
}

/** A request's allowed ids, checked: a non-empty list of ids of the vocabulary (ConfigError naming `requests[i].allowedTokens`). */
function checkAllowed(r: SampleRequest, i: number, V: number): void {
  const a = r.allowedTokens;
  if (a === undefined) return;
  if (!Array.isArray(a) || a.length === 0) throw new ConfigError(`requests[${i}].allowedTokens`, 'must be a non-empty array of token ids (leave it out to allow every id)');
  for (const id of a) {
    if (!Number.isInteger(id) || id < 0 || id >= V) throw new ConfigError(`requests[${i}].allowedTokens`, `${id} is not a token id in [0, ${V})`);
  }
}

export function engineSampleFn(opts: EngineSampleFnOptions): SampleFn {
  const { weights } = opts;
  const ctx = opts.ctx ?? weightsCtx(weights);
  const maxBatch = opts.maxBatch ?? 64;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new ConfigError('engineSampleFn.maxBatch', `must be a positive integer, got ${maxBatch}`);
  const cfg = weights.cfg;
  const maxSeqLen = cfg.maxSeqLen;
  const limits: BatchLimits = {
    sequences: Math.min(maxBatch, logitsRowLimit(ctx, cfg)),
    prefillRows: prefillRowLimit(ctx, cfg),
    cacheRows: kvCacheRowLimit(ctx, cfg),
  };
  /** KV-cache rows of a request: its prompt and the tokens it may generate. */
  const cacheRows = (r: SampleRequest) => r.promptTokens.length + Math.min(r.maxTokens, maxSeqLen - r.promptTokens.length);

  const resolve = async (id: string | undefined): Promise<AdapterWeights | null> => {
    if (id === undefined) return null;
    if (!opts.adapters) throw new ConfigError('adapterId', `request asks for adapter "${id}" but the sampling function has no adapter resolver`);
    const a = await opts.adapters(id);
    if (!a) throw new ConfigError('adapterId', `unknown adapter "${id}"`);
    return a;
  };

  return async (requests: readonly SampleRequest[]): Promise<readonly SampleResult[]> => {
    const results: (SampleResult & { stopReason?: FinishReason })[] = new Array(requests.length);
    const groups = new Map<string, number[]>();
    requests.forEach((r, i) => {
      if (r.promptTokens.length > maxSeqLen) {
        throw new ConfigError(`requests[${i}].promptTokens`, `has ${r.promptTokens.length} tokens, more than the model's maxSeqLen of ${maxSeqLen}`);
      }
      if (!Number.isInteger(r.maxTokens) || r.maxTokens < 0) throw new ConfigError(`requests[${i}].maxTokens`, `must be a non-negative integer, got ${r.maxTokens}`);
      checkAllowed(r, i, cfg.vocabSize);
      if (Math.min(r.maxTokens, maxSeqLen - r.promptTokens.length) === 0) {
        results[i] = { tokens: [], logprobs: [], ...(opts.stopReasons ? { stopReason: 'length' as const } : {}) };
        return;
      }
      if (cacheRows(r) > limits.cacheRows) {
        throw new LimitError('engineSampleFn', `requests[${i}] needs ${cacheRows(r)} KV-cache rows (${r.promptTokens.length} prompt tokens + ` +
          `${cacheRows(r) - r.promptTokens.length} new), ${4 * cfg.nKvHead * cfg.headDim} bytes each per layer: over the device's ` +
          `maxStorageBufferBindingSize of ${ctx.limit('maxStorageBufferBindingSize')}, which holds ${limits.cacheRows} rows; lower its maxTokens or prompt`);
      }
      const k = groupKey(r);
      const g = groups.get(k);
      if (g) g.push(i);
      else groups.set(k, [i]);
    });
    for (const members of groups.values()) {
      const first = requests[members[0]];
      const adapter = await resolve(first.adapterId);
      const items = members.map((i) => ({ prompt: requests[i].promptTokens.length, cache: cacheRows(requests[i]) }));
      for (const idx of batches(items, limits).map((b) => b.map((j) => members[j]))) {
        const reqs = idx.map((i) => requests[i]);
        const res = await generate(ctx, weights, adapter, reqs.map((r) => r.promptTokens), {
          maxTokens: reqs.map((r) => Math.min(r.maxTokens, maxSeqLen - r.promptTokens.length)),
          temperature: first.temperature,
          ...(opts.topK !== undefined ? { topK: opts.topK } : {}),
          ...(opts.topP !== undefined ? { topP: opts.topP } : {}),
          seed: opts.seed ?? 0,
          streams: reqs.map((r) => r.seed),
          stopTokens: first.stopTokens,
          stopStrings: first.stopStrings,
          ...(opts.decode ? { decode: opts.decode } : {}),
          ...(opts.chunk !== undefined ? { chunk: opts.chunk } : {}),
          owner: opts.owner ?? 'sample',
          ...(opts.quantum ? { quantum: opts.quantum } : {}),
          ...(first.allowedTokens ? { vocabMask: { ...(opts.vocabMask ?? { limit: cfg.vocabSize }), allowed: first.allowedTokens } }
            : opts.vocabMask ? { vocabMask: opts.vocabMask } : {}),
          ...(opts.onTokens ? { onTokens: (b: number, t: readonly number[], done: boolean) => opts.onTokens!(idx[b], t, done) } : {}),
        });
        idx.forEach((i, j) => {
          results[i] = {
            tokens: res.tokens[j],
            logprobs: opts.logprobs === 'sampling' ? res.samplingLogprobs[j] : res.logprobs[j],
            ...(opts.stopReasons ? { stopReason: res.finishReasons[j] } : {}),
          };
        });
      }
    }
    return results;
  };
}

/**
 * The ids a policy using `tokenizer` may sample: those below its vocabSize (a model's embedding
 * may have more rows), minus the ids it lists as unused (`unusedIds`: reserved, never-trained
 * tokens and holes in its id range). Pass it as engineSampleFn's or generate's `vocabMask`.
 */
export function tokenizerVocabMask(tokenizer: Tokenizer & { unusedIds?(): readonly number[] }): VocabMask {
  return { limit: tokenizer.vocabSize, masked: tokenizer.unusedIds?.() ?? [] };
}
