/**
 * engineSampleFn — the env layer's SampleFn (src/env/types.ts) over `generate`, so agents roll
 * out episodes on the GPU engine.
 *
 * A batch of requests is split into groups that can share one generate() call — same adapter,
 * temperature, stop tokens and stop strings — and each group runs as one batch (split into
 * batches of at most `maxBatch` sequences whose padded prefill and logits [B, V] fit one storage
 * binding). The
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
 * the two are the same quantity.
 */
import { ConfigError } from '../errors.ts';
import type { SampleFn, SampleRequest, SampleResult } from '../env/types.ts';
import type { GpuContext } from '../gpu/device.ts';
import { type FinishReason, generate, type GenerateOptions } from './generate.ts';
import { logitsRowLimit, weightsCtx } from './infer_block.ts';
import type { ModelConfig } from './config.ts';
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
  /** Which log-probs the results carry. Default 'policy'. */
  readonly logprobs?: 'policy' | 'sampling';
  /** Owner of the generation buffers in the pool. Default 'sample'. */
  readonly owner?: string;
  /** Wraps each chunk's GPU work (generate's `quantum`), e.g. a scheduler's quantum. */
  readonly quantum?: GenerateOptions['quantum'];
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

/**
 * Splits a group (prompt lengths in request order) into generate() batches of at most `maxBatch`
 * sequences whose padded prefill (count × longest prompt) stays within `rowLimit` rows; a
 * prompt longer than rowLimit still gets a batch of its own (the kernels then refuse it).
 */
function batches(lengths: readonly number[], maxBatch: number, rowLimit: number): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let longest = 0;
  lengths.forEach((len, j) => {
    const l = Math.max(longest, len);
    if (cur.length > 0 && (cur.length + 1 > maxBatch || (cur.length + 1) * l > rowLimit)) {
      out.push(cur);
      cur = [];
      longest = 0;
    }
    cur.push(j);
    longest = Math.max(longest, len);
  });
  if (cur.length > 0) out.push(cur);
  return out;
}

function groupKey(r: SampleRequest): string {
  return JSON.stringify([r.adapterId ?? null, r.temperature, [...r.stopTokens], [...r.stopStrings]]);
}

export function engineSampleFn(opts: EngineSampleFnOptions): SampleFn {
  const { weights } = opts;
  const ctx = opts.ctx ?? weightsCtx(weights);
  const maxBatch = opts.maxBatch ?? 64;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new ConfigError('engineSampleFn.maxBatch', `must be a positive integer, got ${maxBatch}`);
  const maxSeqLen = weights.cfg.maxSeqLen;
  const rowLimit = prefillRowLimit(ctx, weights.cfg);
  const batchLimit = Math.min(maxBatch, logitsRowLimit(ctx, weights.cfg));

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
      if (Math.min(r.maxTokens, maxSeqLen - r.promptTokens.length) === 0) {
        results[i] = { tokens: [], logprobs: [], ...(opts.stopReasons ? { stopReason: 'length' as const } : {}) };
        return;
      }
      const k = groupKey(r);
      const g = groups.get(k);
      if (g) g.push(i);
      else groups.set(k, [i]);
    });
    for (const members of groups.values()) {
      const first = requests[members[0]];
      const adapter = await resolve(first.adapterId);
      for (const idx of batches(members.map((i) => requests[i].promptTokens.length), batchLimit, rowLimit).map((b) => b.map((j) => members[j]))) {
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
