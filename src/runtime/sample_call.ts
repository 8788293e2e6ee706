/**
 * One `sample` callable for every sampling client, in both call forms:
 *
 *   sample(requests)              the agent layer's SampleFn (src/env/types.ts): a batch of
 *                                 SampleRequests in, one SampleResult per request out — what the
 *                                 job runner and the agents use, unchanged;
 *   sample(prompt, n, params)     Tinker's form: n continuations of one prompt (token ids, or
 *                                 `{ tokens }`) → `{ sequences: [{ tokens, logprobs, stopReason }] }`.
 *
 * The form is chosen by the arguments (a number as the second one is Tinker's). Both end in the
 * client's engine call (`EngineSample`) — the LocalService's engineSampleFn, or the worker
 * protocol's `sample` — so every client of both services gets the same mapping from this one
 * function (makeSampleCall).
 *
 * Mapping of Tinker's form onto requests: sequence i is a request with the prompt, `maxTokens`,
 * `temperature` (default 1), the stop strings or stop token ids of `params.stop`, the adapter of
 * `params.adapter` (inference clients: `name` or `name@v`), and sampler stream i; the sampler's
 * key is `params.seed`, so the same prompt, params and seed give bitwise the same sequences on the
 * same adapter, and sequence i does not depend on n. Without a seed the client's k-th unseeded
 * call uses key k (0, 1, 2, …): fresh samples on every call, and a fresh client repeats its
 * sequence of calls. `topK` / `topP` are the GPU sampler's filters (src/ops/sample.ts), applied
 * to the whole call. Log-probs are the policy's (log-softmax at temperature 1, unfiltered: what
 * the training loss recomputes), as in SampleResult; `stopReason` is 'stop' when a stop token or
 * stop string ended the sequence (it is kept in `tokens`), 'length' when maxTokens (or the
 * model's context) did.
 */
import { ConfigError } from '../errors.ts';
import type { SampleRequest, SampleResult } from '../env/types.ts';

/** A prompt: token ids, or Tinker's ModelInput reduced to its tokens. */
export type ModelInput = readonly number[] | { readonly tokens: readonly number[] };

/** Tinker's sampling parameters of `sample(prompt, n, params)`. */
export interface SamplingParams {
  /** New tokens per sequence (≥ 1); fewer when the prompt nearly fills the model's context. */
  readonly maxTokens: number;
  /** 0 = greedy. Default 1. */
  readonly temperature?: number;
  /** Keep the k most likely tokens (0: all). */
  readonly topK?: number;
  /** Nucleus mass in (0, 1] (1: all). */
  readonly topP?: number;
  /** Stop strings (need the service's detokenizer) or stop token ids; the stop is kept in the output. */
  readonly stop?: string | readonly string[] | readonly number[];
  /** u32 sampler key; default: the client's count of unseeded calls so far. */
  readonly seed?: number;
  /** The published adapter to sample from (an inference client: `name` or `name@v`). */
  readonly adapter?: string;
  /**
   * Streaming, as WebLLM's users expect: sequence i's new tokens as each decode chunk comes back
   * (`done` with its last ones), before the call resolves with the whole sequences. In-process
   * services (LocalService) only: a function cannot cross to the GPU worker.
   */
  readonly onTokens?: (sequence: number, tokens: readonly number[], done: boolean) => void;
}

/** Why a sequence ended: a stop token or string (`stop`), or the token limit (`length`). */
export type StopReason = 'stop' | 'length';

/** One sampled continuation of a prompt (Tinker's SampledSequence). */
export interface SampledSequence {
  readonly tokens: readonly number[];
  /** ln π(token) of the policy at temperature 1, unfiltered (as SampleResult.logprobs). */
  readonly logprobs: readonly number[];
  readonly stopReason: StopReason;
  /** The published adapter version that produced it (inference clients). */
  readonly adapter?: { readonly name: string; readonly version: number };
}

/** What `sample(prompt, n, params)` returns: the n sequences, in order. */
export interface SampleResponse {
  readonly sequences: readonly SampledSequence[];
}

/** Sampler settings of one engine call (the whole batch): Tinker's filters and key. */
export interface SamplerSettings {
  readonly topK?: number;
  readonly topP?: number;
  /** u32 sampler key (engineSampleFn's `seed`); default 0. */
  readonly seed?: number;
  /** Results also carry `stopReason`. */
  readonly stopReasons?: boolean;
  /** Streaming: request i's new tokens after each decode chunk (in-process services only). */
  readonly onTokens?: (index: number, tokens: readonly number[], done: boolean) => void;
}

/** A SampleResult that may say why it ended (when the engine call asked for it). */
export type EngineSampleResult = SampleResult & { readonly stopReason?: StopReason };

/** A client's engine call: requests under call-wide settings. */
export type EngineSample = (requests: readonly SampleRequest[], settings: SamplerSettings) => Promise<readonly EngineSampleResult[]>;

/** Both call forms of `SamplingClient.sample`. Assignable to SampleFn. */
export interface SampleCall {
  (requests: readonly SampleRequest[]): Promise<readonly SampleResult[]>;
  (prompt: ModelInput, n: number, params: SamplingParams): Promise<SampleResponse>;
}

const U32 = 2 ** 32;

function u32(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= U32) throw new ConfigError(field, `must be an integer in [0, 2^32), got ${String(v)}`);
  return v;
}

function posInt(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new ConfigError(field, `must be a positive integer, got ${String(v)}`);
  return v;
}

const PARAM_KEYS = new Set(['maxTokens', 'temperature', 'topK', 'topP', 'stop', 'seed', 'adapter', 'onTokens']);

function promptTokens(prompt: unknown): number[] {
  const ids = Array.isArray(prompt) ? prompt : (prompt as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(ids)) throw new ConfigError('prompt', 'must be token ids or { tokens: token ids }');
  if (ids.length === 0) throw new ConfigError('prompt', 'has no tokens');
  ids.forEach((t, i) => {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) throw new ConfigError(`prompt[${i}]`, `must be a token id (an integer ≥ 0), got ${String(t)}`);
  });
  return [...(ids as number[])];
}

function stops(stop: SamplingParams['stop']): { stopStrings: string[]; stopTokens: number[] } {
  if (stop === undefined) return { stopStrings: [], stopTokens: [] };
  if (typeof stop === 'string') return { stopStrings: [stop], stopTokens: [] };
  if (!Array.isArray(stop)) throw new ConfigError('params.stop', 'must be a string, an array of strings, or an array of token ids');
  if (stop.every((s) => typeof s === 'string')) return { stopStrings: [...(stop as string[])], stopTokens: [] };
  if (stop.every((s) => typeof s === 'number' && Number.isInteger(s) && s >= 0)) return { stopStrings: [], stopTokens: [...(stop as number[])] };
  throw new ConfigError('params.stop', 'must be all strings or all token ids (integers ≥ 0), not a mix');
}

/** Checks Tinker-form arguments; returns the requests and the call's sampler settings (key not yet chosen). */
export function tinkerRequests(prompt: ModelInput, n: number, params: SamplingParams): { requests: SampleRequest[]; settings: Omit<SamplerSettings, 'seed'>; seed: number | undefined } {
  const tokens = promptTokens(prompt);
  posInt('n', n);
  if (typeof params !== 'object' || params === null) throw new ConfigError('params', 'must be an object with at least maxTokens');
  for (const k of Object.keys(params)) if (!PARAM_KEYS.has(k)) throw new ConfigError(`params.${k}`, `unknown field (known: ${[...PARAM_KEYS].join(', ')})`);
  const maxTokens = posInt('params.maxTokens', params.maxTokens);
  const temperature = params.temperature ?? 1;
  if (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0) throw new ConfigError('params.temperature', `must be a finite number ≥ 0 (0 = greedy), got ${String(temperature)}`);
  if (params.topK !== undefined) u32('params.topK', params.topK);
  if (params.topP !== undefined && !(typeof params.topP === 'number' && params.topP > 0 && params.topP <= 1)) throw new ConfigError('params.topP', `must be in (0, 1], got ${String(params.topP)}`);
  const seed = params.seed === undefined ? undefined : u32('params.seed', params.seed);
  if (params.adapter !== undefined && (typeof params.adapter !== 'string' || params.adapter.length === 0)) throw new ConfigError('params.adapter', 'must be a non-empty adapter name (name or name@v)');
  if (params.onTokens !== undefined && typeof params.onTokens !== 'function') throw new ConfigError('params.onTokens', 'must be a function (sequence, tokens, done) => void');
  const { stopStrings, stopTokens } = stops(params.stop);
  const requests = Array.from({ length: n }, (_, i): SampleRequest => ({
    promptTokens: tokens, maxTokens, stopStrings, stopTokens, temperature, seed: i,
    ...(params.adapter !== undefined ? { adapterId: params.adapter } : {}),
  }));
  return {
    requests,
    settings: {
      ...(params.topK !== undefined ? { topK: params.topK } : {}), ...(params.topP !== undefined ? { topP: params.topP } : {}), stopReasons: true,
      ...(params.onTokens ? { onTokens: params.onTokens } : {}),
    },
    seed,
  };
}

/** The `sample` of a sampling client over its engine call (see the header). */
export function makeSampleCall(engine: EngineSample): SampleCall {
  let unseeded = 0;
  function sample(requests: readonly SampleRequest[]): Promise<readonly SampleResult[]>;
  function sample(prompt: ModelInput, n: number, params: SamplingParams): Promise<SampleResponse>;
  function sample(a: readonly SampleRequest[] | ModelInput, n?: number, params?: SamplingParams): Promise<readonly SampleResult[] | SampleResponse> {
    if (n === undefined && params === undefined) {
      if (!Array.isArray(a) || a.some((r) => typeof r !== 'object' || r === null)) {
        return Promise.reject(new ConfigError('requests', 'sample(requests) takes an array of SampleRequests; Tinker\'s form is sample(prompt, n, params)'));
      }
      return engine(a as readonly SampleRequest[], {});
    }
    return tinkerSample(a as ModelInput, n as number, params as SamplingParams);
  }
  async function tinkerSample(prompt: ModelInput, n: number, params: SamplingParams): Promise<SampleResponse> {
    const { requests, settings, seed } = tinkerRequests(prompt, n, params);
    const key = seed ?? unseeded++ % U32;
    const results = await engine(requests, { ...settings, seed: key });
    return {
      sequences: results.map((r, i) => {
        if (r.stopReason === undefined) throw new Error(`sampling engine returned no stopReason for sequence ${i}`);
        return { tokens: r.tokens, logprobs: r.logprobs, stopReason: r.stopReason, ...(r.adapter ? { adapter: r.adapter } : {}) };
      }),
    };
  }
  return sample;
}
