/**
 * kv_cache — the KV cache's writes (host wrappers of kernels/kv_cache.wgsl): append new key/value
 * rows at each sequence's own row, grow lengths after a prefill, and advance the decode state
 * after each sampling step — all on the GPU, so a chunk of decode steps runs without a host round
 * trip. Llama's RoPE is not fused here: the model rotates q and k with the RoPE op first
 * (src/model/rope.ts), the same kernel as in training.
 *
 * Shapes (B sequences, Tn new rows, Tmax cache rows, Hkv heads, D head dim, K history rows):
 *   k, v [B, Tn, Hkv, D]   kCache, vCache [B, Tmax, Hkv, D] (what attentionDecode reads)
 *   start i32 [B] (cache row of new row 0)   count i32 [B] (real new rows; optional)
 *   lengths, positions i32 [B]   keys u32 [B, 2]
 *   tokens i32 [B], logprobs, logprobsRaw f32 [B]   history u32 [K, B, 3]
 * Rows that are padding (t ≥ count[b]) or would land past Tmax are not written. Nothing is summed:
 * the outputs are exact copies / single roundings, bitwise reproducible.
 */
import { ShapeError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { dims, expectBindable, expectDistinct, expectDtype, expectShape } from '../gpu/checks.ts';

const KERNEL = 'kv_cache';
const WG = 64;
/** The kernel's Params struct, shared by its entry points: the fields an entry point does not read are 0. */
function params(f: { B: number; Tn?: number; Hkv?: number; D?: number; Tmax: number; rowThreads?: number; counted?: number; step?: number; K?: number }) {
  return {
    B: f.B, Tn: f.Tn ?? 0, Hkv: f.Hkv ?? 0, D: f.D ?? 0, Tmax: f.Tmax, row_threads: f.rowThreads ?? 0, counted: f.counted ?? 0, step: f.step ?? 0,
    K: f.K ?? 0,
  };
}

export interface KvAppendOptions {
  /** i32 [B]: real new rows per sequence (a right-padded prefill); default: all Tn rows. */
  count?: Tensor;
}

interface AppendDims { B: number; Tn: number; Hkv: number; D: number; Tmax: number }

function appendDims(op: string, kCache: Tensor, vCache: Tensor, k: Tensor, v: Tensor, start: Tensor, opts: KvAppendOptions): AppendDims {
  for (const [n, t] of [['kCache', kCache], ['vCache', vCache], ['k', k], ['v', v]] as const) {
    expectDtype(op, n, t, 'f32');
    if (t.shape.length !== 4) throw new ShapeError(op, `${n} (${t}) must be 4-D: k, v [B, Tn, Hkv, D], kCache, vCache [B, Tmax, Hkv, D]`);
  }
  const [B, Tn, Hkv, D] = k.shape;
  const Tmax = kCache.shape[1];
  expectShape(op, 'v', v, k.shape);
  expectShape(op, 'vCache', vCache, kCache.shape);
  if (kCache.shape[0] !== B || kCache.shape[2] !== Hkv || kCache.shape[3] !== D) {
    throw new ShapeError(op, `kCache ${dims(kCache)} must be [${B}, Tmax, ${Hkv}, ${D}] for k ${dims(k)}`);
  }
  if (D % 2 !== 0) throw new ShapeError(op, `head size D = ${D} (k ${dims(k)}) must be even`);
  expectDtype(op, 'start', start, 'i32');
  expectShape(op, 'start', start, [B]);
  if (opts.count) {
    expectDtype(op, 'count', opts.count, 'i32');
    expectShape(op, 'count', opts.count, [B]);
  }
  return { B, Tn, Hkv, D, Tmax };
}

/**
 * kCache[b, start[b] + t] = k[b, t] and vCache likewise (=), for the real rows t < count[b] that
 * fit in the cache.
 */
export function kvAppend(rec: Recorder, kCache: Tensor, vCache: Tensor, k: Tensor, v: Tensor, start: Tensor, opts: KvAppendOptions = {}): void {
  const op = `${KERNEL}.append`;
  const d = appendDims(op, kCache, vCache, k, v, start, opts);
  const written: [string, Tensor][] = [['kCache', kCache], ['vCache', vCache]];
  const all: [string, Tensor | null][] = [['kCache', kCache], ['vCache', vCache], ['k', k], ['v', v], ['start', start], ['count', opts.count ?? null]];
  const pairs: [string, Tensor | null, string, Tensor | null][] = [];
  for (const [nw, w] of written) for (const [nr, r] of all) if (nw !== nr) pairs.push([nw, w, nr, r]);
  expectDistinct(op, pairs);
  expectBindable(op, rec.ctx, all);
  const threads = d.B * d.Tn * d.Hkv * (d.D / 2);
  if (threads === 0 || d.Tmax === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, threads, WG);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'append',
    constants: { WG },
    // Without count, start also fills the count slot (read-only aliases are allowed; never read).
    bindings: { start, count: opts.count ?? start, k_new: k, v_new: v, k_cache: kCache, v_cache: vCache },
    params: params({ B: d.B, Tn: d.Tn, Hkv: d.Hkv, D: d.D, Tmax: d.Tmax, rowThreads, counted: opts.count ? 1 : 0 }),
    workgroups,
  });
}

/** lengths[b] = clamp(lengths[b] + count[b], 0, tmax) (=, in place): after a prefill's appends. */
export function kvExtend(rec: Recorder, lengths: Tensor, count: Tensor, tmax: number): void {
  const op = `${KERNEL}.extend`;
  expectDtype(op, 'lengths', lengths, 'i32');
  expectDtype(op, 'count', count, 'i32');
  if (lengths.shape.length !== 1) throw new ShapeError(op, `lengths (${lengths}) must be [B]`);
  expectShape(op, 'count', count, lengths.shape);
  expectDistinct(op, [['lengths', lengths, 'count', count]]);
  checkTmax(op, tmax);
  const B = lengths.shape[0];
  if (B === 0) return;
  rec.dispatch({
    kernel: KERNEL, entryPoint: 'extend', constants: { WG },
    bindings: { count, lengths },
    params: params({ B, Tmax: tmax }),
    workgroups: [Math.ceil(B / WG), 1, 1],
  });
}

function checkTmax(op: string, tmax: number): void {
  if (!Number.isInteger(tmax) || tmax < 0 || tmax > 0x7fffffff) throw new ShapeError(op, `tmax must be a non-negative integer, got ${tmax}`);
}

/** The per-sequence decode state advanced by `kvAdvance`. */
export interface DecodeState {
  /** i32 [B]: valid cache rows. */
  lengths: Tensor;
  /** i32 [B]: row and position of the token being fed (written). */
  positions: Tensor;
  /** u32 [B, 2]: sampler (stream, counter) per sequence; the counter is incremented. */
  keys: Tensor;
}

/** What the sampler wrote this step. */
export interface SampledStep {
  tokens: Tensor;
  logprobs: Tensor;
  logprobsRaw: Tensor;
}

/**
 * After a sampling step (in place): history[step, b] = (tokens[b], bits of logprobs[b], bits of
 * logprobsRaw[b]) when step < K; positions[b] = lengths[b]; lengths[b] = min(lengths[b] + 1, tmax);
 * keys[b, 1] += 1. The sampled token then feeds the next decode step at row positions[b].
 */
export function kvAdvance(rec: Recorder, state: DecodeState, sampled: SampledStep, history: Tensor, step: number, tmax: number): void {
  const op = `${KERNEL}.advance`;
  const { lengths, positions, keys } = state;
  expectDtype(op, 'lengths', lengths, 'i32');
  if (lengths.shape.length !== 1) throw new ShapeError(op, `lengths (${lengths}) must be [B]`);
  const B = lengths.shape[0];
  expectDtype(op, 'positions', positions, 'i32');
  expectShape(op, 'positions', positions, [B]);
  expectDtype(op, 'keys', keys, 'u32');
  expectShape(op, 'keys', keys, [B, 2]);
  expectDtype(op, 'tokens', sampled.tokens, 'i32');
  expectDtype(op, 'logprobs', sampled.logprobs, 'f32');
  expectDtype(op, 'logprobsRaw', sampled.logprobsRaw, 'f32');
  for (const [n, t] of [['tokens', sampled.tokens], ['logprobs', sampled.logprobs], ['logprobsRaw', sampled.logprobsRaw]] as const) {
    if (t.size !== B) throw new ShapeError(op, `${n} (${t}) must hold B = ${B} values like lengths ${dims(lengths)}`);
  }
  expectDtype(op, 'history', history, 'u32');
  if (history.shape.length !== 3 || history.shape[1] !== B || history.shape[2] !== 3) {
    throw new ShapeError(op, `history (${history}) must be [K, ${B}, 3]`);
  }
  const K = history.shape[0];
  if (!Number.isInteger(step) || step < 0 || step >= K) throw new ShapeError(op, `step ${step} outside the history's ${K} rows (${history})`);
  checkTmax(op, tmax);
  const written: [string, Tensor][] = [['lengths', lengths], ['positions', positions], ['keys', keys], ['history', history]];
  const read: [string, Tensor][] = [['tokens', sampled.tokens], ['logprobs', sampled.logprobs], ['logprobsRaw', sampled.logprobsRaw]];
  const pairs: [string, Tensor, string, Tensor][] = [];
  written.forEach(([nw, w], i) => {
    for (const [nr, r] of [...written.slice(i + 1), ...read]) pairs.push([nw, w, nr, r]);
  });
  expectDistinct(op, pairs);
  if (B === 0) return;
  rec.dispatch({
    kernel: KERNEL, entryPoint: 'advance', constants: { WG },
    bindings: { lengths, positions, keys, tokens: sampled.tokens, logprobs: sampled.logprobs, logprobs_raw: sampled.logprobsRaw, history },
    params: params({ B, Tmax: tmax, step, K }),
    workgroups: [Math.ceil(B / WG), 1, 1],
  });
}
