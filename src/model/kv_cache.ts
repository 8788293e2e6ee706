/**
 * The KV cache of one generation batch: every layer's keys and values for B sequences of up to
 * Tmax rows, the per-sequence (ragged) lengths and the decode state that advances on the GPU.
 * Llama's keys are cached already rotated (prefill and decode apply RoPE first, src/model/rope.ts).
 *
 * Layout (what attentionDecode in src/ops/attention.ts reads):
 *   k[l], v[l]   f32 [B, Tmax, Hkv, D]   row j of sequence b holds the key/value of its token at
 *                                         position j (right-aligned prompts are not supported:
 *                                         every sequence starts at row 0)
 *   lengths      i32 [B]   valid rows per sequence (rows ≥ lengths[b] hold stale data, never read)
 *   positions    i32 [B]   row (= position) of the token the next decode step feeds
 *   keys         u32 [B, 2] sampler (stream, counter) per sequence, counter = tokens sampled so far
 * Every buffer is charged to `owner` in the device's pool; `release()` gives all of them back.
 */
import { ReleasedError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../gpu/tensor.ts';
import type { ModelConfig } from './config.ts';

export interface KvCacheOptions {
  /** Who pays for the bytes (a job or request id). Default 'kv-cache'. */
  owner?: string;
  /** Sampler stream of each sequence (u32); default b. */
  streams?: readonly number[];
}

/** Bytes a cache of B sequences × Tmax rows takes on the device (before pool rounding). */
export function kvCacheBytes(cfg: ModelConfig, B: number, Tmax: number): number {
  const kv = 2 * cfg.nLayer * B * Tmax * cfg.nKvHead * cfg.headDim * 4;
  return kv + 4 * B * 4;
}

/**
 * Most cache rows (sequences × positions) one layer's keys — or values, [B, Tmax, Hkv, D] f32 —
 * hold in one storage binding: attention binds each whole, so a generation batch's B · Tmax must
 * stay within it (engineSampleFn splits its batches so).
 */
export function kvCacheRowLimit(ctx: GpuContext, cfg: ModelConfig): number {
  return Math.floor(ctx.limit('maxStorageBufferBindingSize') / (4 * cfg.nKvHead * cfg.headDim));
}

export class KvCache {
  readonly ctx: GpuContext;
  readonly cfg: ModelConfig;
  readonly B: number;
  readonly Tmax: number;
  readonly owner: string;
  /** Per layer, [B, Tmax, Hkv, D]. */
  readonly k: readonly Tensor[];
  readonly v: readonly Tensor[];
  readonly lengths: Tensor;
  readonly positions: Tensor;
  readonly keys: Tensor;
  #released = false;
  #prefilled = false;

  private constructor(ctx: GpuContext, cfg: ModelConfig, B: number, Tmax: number, owner: string, tensors: {
    k: Tensor[]; v: Tensor[]; lengths: Tensor; positions: Tensor; keys: Tensor;
  }) {
    this.ctx = ctx;
    this.cfg = cfg;
    this.B = B;
    this.Tmax = Tmax;
    this.owner = owner;
    this.k = Object.freeze(tensors.k);
    this.v = Object.freeze(tensors.v);
    this.lengths = tensors.lengths;
    this.positions = tensors.positions;
    this.keys = tensors.keys;
  }

  /**
   * An empty cache (all lengths 0) for B sequences of up to Tmax rows. Throws ShapeError for a
   * B or Tmax that is not a positive integer, or a Tmax past the model's maxSeqLen.
   */
  static create(ctx: GpuContext, cfg: ModelConfig, B: number, Tmax: number, opts: KvCacheOptions = {}): KvCache {
    const op = 'kv_cache';
    if (!Number.isInteger(B) || B < 1) throw new ShapeError(op, `batch size B must be a positive integer, got ${B}`);
    if (!Number.isInteger(Tmax) || Tmax < 1) throw new ShapeError(op, `cache rows Tmax must be a positive integer, got ${Tmax}`);
    if (Tmax > cfg.maxSeqLen) throw new ShapeError(op, `cache rows Tmax = ${Tmax} exceed the model's maxSeqLen of ${cfg.maxSeqLen}`);
    const streams = opts.streams ?? Array.from({ length: B }, (_, b) => b);
    if (streams.length !== B) throw new ShapeError(op, `${streams.length} sampler streams for B = ${B} sequences`);
    const keys = new Uint32Array(2 * B);
    streams.forEach((s, b) => {
      if (!Number.isInteger(s) || s < 0 || s > 0xffffffff) throw new ShapeError(op, `sampler stream ${s} of sequence ${b} is not a u32`);
      keys[2 * b] = s;
    });
    const owner = opts.owner ?? 'kv-cache';
    const made: Tensor[] = [];
    const track = (t: Tensor) => (made.push(t), t);
    try {
      const shape = [B, Tmax, cfg.nKvHead, cfg.headDim];
      const k: Tensor[] = [];
      const v: Tensor[] = [];
      for (let l = 0; l < cfg.nLayer; l++) {
        k.push(track(emptyTensor(ctx, shape, 'f32', { owner, label: `${owner}/k${l}` })));
        v.push(track(emptyTensor(ctx, shape, 'f32', { owner, label: `${owner}/v${l}` })));
      }
      const lengths = track(tensorFrom(ctx, new Int32Array(B), [B], { owner, label: `${owner}/lengths` }));
      const positions = track(tensorFrom(ctx, new Int32Array(B), [B], { owner, label: `${owner}/positions` }));
      const keyT = track(tensorFrom(ctx, keys, [B, 2], { owner, label: `${owner}/keys` }));
      return new KvCache(ctx, cfg, B, Tmax, owner, { k, v, lengths, positions, keys: keyT });
    } catch (e) {
      for (const t of made) t.release();
      throw e;
    }
  }

  /**
   * Marks the cache as filled by a prefill; throws ShapeError when it already was (a prefill
   * attends within its own prompt only, so it must start from an empty cache).
   */
  claimPrefill(): void {
    if (this.#released) throw new ReleasedError(`KV cache "${this.owner}"`);
    if (this.#prefilled) throw new ShapeError('prefill', `the KV cache "${this.owner}" was already prefilled; make a new cache per batch`);
    this.#prefilled = true;
  }

  get released(): boolean {
    return this.#released;
  }

  /** Bytes of every tensor of the cache (element bytes, before the pool's size classes). */
  get bytes(): number {
    return this.#tensors().reduce((s, t) => s + t.byteLength, 0);
  }

  /** Give every buffer back to the pool. Releasing twice throws ReleasedError. */
  release(): void {
    for (const t of this.#tensors()) t.release();
    this.#released = true;
  }

  #tensors(): Tensor[] {
    return [...this.k, ...this.v, this.lengths, this.positions, this.keys];
  }
}
