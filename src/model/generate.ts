/**
 * generate — batched text generation on the GPU engine: prefill the prompts into a fresh KV
 * cache, then decode chunks of K steps per submission (a submit-and-wait has a fixed cost, large
 * beside one decode step of a small model, so the steps of a chunk are recorded into one Recorder and the sampler's ids feed the next step on
 * the GPU). After each chunk one u32 readback brings the chunk's tokens and log-probs home, where
 * stop tokens, stop strings (through the `decode` callback) and max tokens end sequences one by
 * one. Finished sequences keep decoding harmlessly until the whole batch is done (their rows of
 * the cache are their own, and a row past the cache is dropped); their extra tokens are
 * discarded. The stop token or the token completing a stop string is kept in the output.
 *
 * Log-probabilities (both come from the sampler; see src/ops/sample.ts):
 *   logprobs          log softmax(logits)[token] at temperature 1, no top-k/top-p: the policy's
 *                     own log-probability — what the training loss kernel recomputes from the
 *                     logits, so PPO/GRPO old-logprobs and ratios use this convention (sampling at
 *                     T ≠ 1 or with filters is then a behaviour policy the ratio does not model);
 *   samplingLogprobs  log p(token) under the distribution actually sampled from (logits / T, then
 *                     top-k and top-p, renormalized; 0 under greedy).
 * Randomness: sequence b draws its step-s number from Philox(seed, stream = streams[b] (default b),
 * counter s), so the same seed gives bitwise the same tokens, whatever the chunk size, and a
 * sequence given its own stream samples the same alone as inside any batch.
 */
import { ConfigError, LimitError, NonFiniteError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../gpu/tensor.ts';
import { NON_FINITE_TOKEN, sampleSettings } from '../ops/sample.ts';
import { type DecodeScratch, decodeScratch, type DecodeSampling, recordDecodeStep, recordSampleStep, type SampleBuffers } from './decode.ts';
import { KvCache, kvCacheRowLimit } from './kv_cache.ts';
import { logitsRowLimit } from './infer_block.ts';
import { checkPrompts, type PromptBatch, recordPrefill, releasePrompts, uploadPrompts } from './prefill.ts';
import { allowedBy, vocabBitmask, vocabMask, type VocabMask } from '../ops/vocab_mask.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

export const DEFAULT_DECODE_CHUNK = 8;

export interface GenerateOptions {
  /** New tokens per sequence (one number for all, or one per prompt); prompt + maxTokens ≤ maxSeqLen. */
  maxTokens: number | readonly number[];
  /** 0 = greedy. */
  temperature: number;
  /** Keep the k most likely tokens (0: all). */
  topK?: number;
  /** Nucleus mass in (0, 1] (1: all). */
  topP?: number;
  /** u32 seed of the sampler. */
  seed: number;
  /** u32 sampler stream per prompt (default: its index). */
  streams?: readonly number[];
  /** Token ids that end a sequence (kept in its output). */
  stopTokens?: readonly number[];
  /** Strings that end a sequence once the decoded output contains one (needs `decode`). */
  stopStrings?: readonly string[];
  /** Detokenizer for stop strings: ids → text. */
  decode?: (ids: readonly number[]) => string;
  /** Decode steps per submission. Default 8. */
  chunk?: number;
  /** Owner of the cache and buffers in the pool. Default 'generate'. */
  owner?: string;
  /**
   * Runs each chunk's GPU work (record, submit, read back): a scheduler hook, e.g.
   * `(fn) => scheduler.quantum(jobId, fn)`, so other jobs may use the device between chunks.
   */
  quantum?: (fn: () => Promise<Uint32Array>) => Promise<Uint32Array>;
  /**
   * Ids the sampler may return: ids ≥ `limit` and those in `masked` get logit −Inf before each
   * sample (ops/vocab_mask.ts), so a model whose embedding has more rows than its tokenizer has
   * ids (Qwen2.5: 151936 rows, 151665 ids) never yields an id the tokenizer cannot decode. The
   * log-probs are then those of the masked distribution, while the training loss normalizes over
   * every id: the two differ by log(1 − masked mass), ≈ 0 where the masked rows were never trained
   * toward. Default: every id of the model.
   */
  vocabMask?: VocabMask;
  /**
   * Streaming: called after each decode chunk's readback with each sequence's new tokens (in
   * order; `done` once its last token has come). Tokens arrive a chunk at a time (`chunk` decode
   * steps per submission). A throw ends generate with that error.
   */
  onTokens?: (sequence: number, tokens: readonly number[], done: boolean) => void;
}

export type FinishReason = 'stop' | 'length';

export interface GenerateResult {
  tokens: number[][];
  /** Policy log-probs: log softmax(logits)[token] at T = 1, unfiltered (see the file header). */
  logprobs: number[][];
  /** Log-probs under the sampling distribution (temperature, top-k, top-p; 0 when greedy). */
  samplingLogprobs: number[][];
  finishReasons: FinishReason[];
  /** Decode steps run (the prefill's sample counts as one) and submissions made. */
  steps: number;
  submissions: number;
}

function posInt(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new ConfigError(field, `must be a positive integer, got ${String(v)}`);
  return v;
}

/** Checks everything before any allocation; returns per-sequence budgets and the cache rows. */
function plan(weights: ModelWeights, prompts: readonly (readonly number[])[], opts: GenerateOptions): { maxTok: number[]; Tmax: number; chunk: number; sampling: DecodeSampling; allowed: Uint32Array | null } {
  const cfg = weights.cfg;
  checkPrompts(cfg, prompts, 'generate.prompts');
  const B = prompts.length;
  let maxTok: number[];
  if (Array.isArray(opts.maxTokens)) {
    if (opts.maxTokens.length !== B) throw new ConfigError('generate.maxTokens', `has ${opts.maxTokens.length} values; give one number or one per prompt (${B})`);
    maxTok = opts.maxTokens.map((m, i) => posInt(`generate.maxTokens[${i}]`, m));
  } else {
    maxTok = new Array<number>(B).fill(posInt('generate.maxTokens', opts.maxTokens));
  }
  prompts.forEach((p, i) => {
    if (p.length + maxTok[i] > cfg.maxSeqLen) {
      throw new ConfigError('generate.maxTokens', `prompt ${i} has ${p.length} tokens; with maxTokens ${maxTok[i]} it needs ${p.length + maxTok[i]} cache rows, more than the model's maxSeqLen of ${cfg.maxSeqLen}`);
    }
  });
  const chunk = posInt('generate.chunk', opts.chunk ?? DEFAULT_DECODE_CHUNK);
  for (const t of opts.stopTokens ?? []) {
    if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize) throw new ConfigError('generate.stopTokens', `${t} is not a token id in [0, ${cfg.vocabSize})`);
  }
  const stopStrings = opts.stopStrings ?? [];
  if (stopStrings.some((s) => typeof s !== 'string' || s.length === 0)) throw new ConfigError('generate.stopStrings', 'stop strings must be non-empty strings');
  if (stopStrings.length > 0 && typeof opts.decode !== 'function') {
    throw new ConfigError('generate.decode', 'stop strings need a decode (ids → text) callback');
  }
  if (opts.streams && opts.streams.length !== B) throw new ConfigError('generate.streams', `${opts.streams.length} streams for ${B} prompts`);
  const s = sampleSettings({ temperature: opts.temperature, topK: opts.topK, topP: opts.topP, seed: opts.seed });
  const Tmax = Math.max(...prompts.map((p, i) => p.length + maxTok[i]));
  const allowed = opts.vocabMask === undefined ? null : vocabBitmask(opts.vocabMask, cfg.vocabSize, 'generate.vocabMask');
  return { maxTok, Tmax, chunk, sampling: { temperature: s.temperature, topK: s.topK, topP: s.topP, seed: s.seed }, allowed };
}

/**
 * Generates up to maxTokens tokens after each prompt. Throws ConfigError (naming the field:
 * `generate.prompts[i]`, `generate.maxTokens`, ...) or the sampler's ConfigError before touching
 * the GPU; every buffer it allocates is released when it returns or throws.
 */
export async function generate(ctx: GpuContext, weights: ModelWeights, adapter: AdapterWeights | null,
  prompts: readonly (readonly number[])[], opts: GenerateOptions): Promise<GenerateResult> {
  const cfg = weights.cfg;
  const { maxTok, Tmax, chunk, sampling, allowed } = plan(weights, prompts, opts);
  const B = prompts.length;
  const rowsMax = logitsRowLimit(ctx, cfg);
  if (B > rowsMax) {
    throw new LimitError('generate', `${B} prompts need logits [${B}, ${cfg.vocabSize}] (f32) in one storage binding, over the device's ` +
      `maxStorageBufferBindingSize of ${ctx.limit('maxStorageBufferBindingSize')}; generate at most ${rowsMax} at once (engineSampleFn splits its batches so)`);
  }
  const cacheRows = kvCacheRowLimit(ctx, cfg);
  if (B * Tmax > cacheRows) {
    const per = `[${B}, ${Tmax}, ${cfg.nKvHead}, ${cfg.headDim}] (f32) per layer`;
    throw new LimitError('generate', `${B} sequences of up to ${Tmax} tokens need KV caches ${per} in one storage binding, over the device's ` +
      `maxStorageBufferBindingSize of ${ctx.limit('maxStorageBufferBindingSize')}; at most ${cacheRows} cache rows (sequences × tokens) fit ` +
      (Tmax > cacheRows ? 'one binding, fewer than one sequence needs: lower maxTokens or the prompt' : 'at once (engineSampleFn splits its batches so)'));
  }
  const owner = opts.owner ?? 'generate';
  const stopTokens = new Set(opts.stopTokens ?? []);
  const stopStrings = opts.stopStrings ?? [];
  const out = { tokens: prompts.map(() => [] as number[]), logprobs: prompts.map(() => [] as number[]), samplingLogprobs: prompts.map(() => [] as number[]) };
  const finish: (FinishReason | null)[] = new Array(B).fill(null);

  let cache: KvCache | null = null;
  let batch: PromptBatch | null = null;
  const own: Tensor[] = [];
  let steps = 0;
  let submissions = 0;
  try {
    cache = KvCache.create(ctx, cfg, B, Tmax, { owner, ...(opts.streams ? { streams: opts.streams } : {}) });
    batch = uploadPrompts(ctx, cfg, prompts, owner);
    const mk = (dtype: 'i32' | 'f32', label: string) => {
      const t = emptyTensor(ctx, [B], dtype, { owner, label: `${owner}/${label}` });
      own.push(t);
      return t;
    };
    // Persist across submissions: the last step's tokens feed the next chunk's first step.
    const sampled: SampleBuffers = { tokens: mk('i32', 'tokens'), logprobs: mk('f32', 'logprobs'), logprobsRaw: mk('f32', 'logprobs_raw') };
    let allowedT: Tensor | null = null;
    if (allowed) {
      allowedT = tensorFrom(ctx, allowed, [allowed.length], { owner, label: `${owner}/vocab_mask` });
      own.push(allowedT);
    }
    let prefilled = false;
    const kvCache = cache;
    const prompt = batch;
    // One chunk: record K steps (the first chunk starts with the prefill), submit once, read once.
    const runChunk = async (K: number): Promise<Uint32Array> => {
      const rec = new Recorder(ctx, { label: `${owner} chunk ${submissions}` });
      const history = rec.temp([K, B, 3], 'u32', 'history');
      let ds: DecodeScratch | null = null;
      try {
        for (let s = 0; s < K; s++) {
          let logits: Tensor;
          if (!prefilled) {
            logits = rec.temp([B, cfg.vocabSize], 'f32', 'prefill/logits');
            recordPrefill(rec, weights, adapter, kvCache, prompt, logits);
            prefilled = true;
          } else {
            ds ??= decodeScratch(rec, weights, adapter, B);
            recordDecodeStep(rec, weights, adapter, kvCache, ds, sampled.tokens);
            logits = ds.logits;
          }
          if (allowedT) vocabMask(rec, logits, allowedT);
          recordSampleStep(rec, kvCache, logits, sampled, history, s, sampling);
        }
      } catch (e) {
        // An op refused its input mid-recording (weights of the wrong shape, a binding over the
        // limit). The recorder frees its scratch only at submit: submit what was recorded (valid,
        // and writing only buffers released below) so nothing stays charged to the pool.
        await rec.submit().catch(() => {});
        throw e;
      }
      const read = rec.read(history);
      await rec.submit();
      return (await read) as Uint32Array;
    };
    const quantum = opts.quantum ?? ((fn) => fn());
    for (;;) {
      let remaining = 0;
      for (let b = 0; b < B; b++) if (finish[b] === null) remaining = Math.max(remaining, maxTok[b] - out.tokens[b].length);
      if (remaining === 0) break;
      const K = Math.min(chunk, remaining);
      const words = await quantum(() => runChunk(K));
      submissions++;
      steps += K;
      const floats = new Float32Array(words.buffer, words.byteOffset, words.length);
      const before = opts.onTokens ? out.tokens.map((t) => t.length) : null;
      const open = before ? finish.map((f) => f === null) : null;
      for (let s = 0; s < K; s++) {
        for (let b = 0; b < B; b++) {
          if (finish[b] !== null) continue;
          const o = (s * B + b) * 3;
          const token = words[o];
          if (token === NON_FINITE_TOKEN >>> 0) {
            throw new NonFiniteError(cfg.name ?? cfg.family, `generate (${owner}), sequence ${b}, new token ${out.tokens[b].length}`,
              'the logits are not finite (NaN or +Inf, or no finite value): the weights hold non-finite values or overflow');
          }
          if (token >= cfg.vocabSize) throw new ShapeError('generate', `the sampler returned token ${token} outside the vocabulary (${cfg.vocabSize})`);
          if (allowed && !allowedBy(allowed, token)) throw new ShapeError('generate', `the sampler returned token ${token}, which vocabMask excludes`);
          out.tokens[b].push(token);
          out.samplingLogprobs[b].push(floats[o + 1]);
          out.logprobs[b].push(floats[o + 2]);
          finish[b] = stopTokens.has(token) || hitsStopString(out.tokens[b], stopStrings, opts.decode)
            ? 'stop'
            : out.tokens[b].length >= maxTok[b] ? 'length' : null;
        }
      }
      if (before && open) {
        for (let b = 0; b < B; b++) if (open[b]) opts.onTokens!(b, out.tokens[b].slice(before[b]), finish[b] !== null);
      }
    }
  } finally {
    if (cache && !cache.released) cache.release();
    if (batch) releasePrompts(batch);
    for (const t of own) t.release();
  }
  return { ...out, finishReasons: finish.map((f) => f ?? 'length'), steps, submissions };
}

/** Whether the decoded output contains a stop string (checked after every token). */
function hitsStopString(ids: readonly number[], stops: readonly string[], decode: GenerateOptions['decode']): boolean {
  if (stops.length === 0 || !decode) return false;
  const text = decode(ids);
  return stops.some((s) => text.includes(s));
}
