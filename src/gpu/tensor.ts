/**
 * Tensors: a pooled GPU buffer with a shape, a dtype and an owner.
 *
 * dtypes: f32 (master weights, activations, gradients), f16 (frozen base weights where
 * `shader-f16` exists; host side it travels as raw bits in a Uint16Array), i32 and u32 (token
 * ids, segment ids, counters). Storage is row-major and contiguous.
 *
 * A view (`view`, `rows`) shares its tensor's buffer from a byte offset: that is how a tensor
 * larger than one storage binding (maxStorageBufferBindingSize) is bound a range at a time — one
 * GPUBuffer (maxBufferSize is usually far larger), several GPUBufferBindings {buffer, offset,
 * size}. A bound view's offset must be a multiple of minStorageBufferOffsetAlignment (the
 * Recorder checks); src/gpu/chunks.ts plans such ranges. Views are never released.
 */
import { ReleasedError, ShapeError } from '../errors.ts';
import type { GpuContext } from './device.ts';

export type DType = 'f32' | 'f16' | 'i32' | 'u32';

export const DTYPE_BYTES: Readonly<Record<DType, number>> = { f32: 4, f16: 2, i32: 4, u32: 4 };

/** Host-side array type per dtype (f16 as raw IEEE half bits). */
export type HostArray<D extends DType = DType> = D extends 'f32' ? Float32Array
  : D extends 'f16' ? Uint16Array
  : D extends 'i32' ? Int32Array
  : D extends 'u32' ? Uint32Array
  : never;

export type AnyHostArray = Float32Array | Uint16Array | Int32Array | Uint32Array;

export interface TensorOptions {
  /** Who pays for the bytes (a job id, a model id). Default: 'default'. */
  owner?: string;
  /** GPU label; shows up in validation messages. */
  label?: string;
  /**
   * A buffer of the tensor's own size (rounded to 16 bytes, so whole-vec4 views stay inside),
   * not the pool's size class: for long-lived tensors such as frozen weights, where the class's
   * up to 50% slack would be paid for the model's lifetime. Destroyed on release, not cached.
   */
  exact?: boolean;
}

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function checkShape(op: string, name: string, shape: readonly number[]): void {
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new ShapeError(op, `${name} has an invalid shape [${shape.join(', ')}]`);
  }
}

export function dtypeOf(data: AnyHostArray): DType {
  if (data instanceof Float32Array) return 'f32';
  if (data instanceof Uint16Array) return 'f16';
  if (data instanceof Int32Array) return 'i32';
  return 'u32';
}

export function hostArray(dtype: DType, buffer: ArrayBuffer, length: number): AnyHostArray {
  switch (dtype) {
    case 'f32': return new Float32Array(buffer, 0, length);
    case 'f16': return new Uint16Array(buffer, 0, length);
    case 'i32': return new Int32Array(buffer, 0, length);
    case 'u32': return new Uint32Array(buffer, 0, length);
  }
}

export class Tensor {
  readonly ctx: GpuContext;
  readonly buffer: GPUBuffer;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly owner: string;
  readonly label: string;
  /** Where the elements start in `buffer` (0 except for views). */
  readonly byteOffset: number;
  /**
   * Read often, written rarely (a model's weights): where a kernel reads it through a texture
   * copy (the matmul on llvmpipe), the copy is kept between recordings and made again only after
   * something writes the tensor (src/gpu/kept_texels.ts). Views and row ranges take it on.
   */
  keepTexels = false;
  #released = false;

  constructor(ctx: GpuContext, buffer: GPUBuffer, shape: readonly number[], dtype: DType, owner: string, label: string, byteOffset = 0) {
    this.ctx = ctx;
    this.buffer = buffer;
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.owner = owner;
    this.label = label;
    this.byteOffset = byteOffset;
  }

  /**
   * The same buffer range under another shape (a reshape, or a prefix or slightly longer run of
   * elements — e.g. whole vec4s): a view sharing this tensor's buffer and offset. Never release it.
   */
  view(shape: readonly number[], label = this.label): Tensor {
    return this.#derived(new Tensor(this.ctx, this.buffer, shape, this.dtype, this.owner, label, this.byteOffset));
  }

  #derived(t: Tensor): Tensor {
    t.keepTexels = this.keepTexels;
    return t;
  }

  /**
   * Rows [first, first + count) along the first dimension (a 1-D tensor's elements), as a view
   * starting `first` rows into the buffer. Never release it.
   */
  rows(first: number, count: number, label = `${this.label}[${first}:${first + count}]`): Tensor {
    const rowElems = this.shape.length === 0 ? 1 : numel(this.shape.slice(1));
    const total = this.shape.length === 0 ? 1 : this.shape[0];
    if (!Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0 || first + count > total) {
      throw new ShapeError('tensor', `rows [${first}, ${first + count}) are outside ${this}`);
    }
    const shape = this.shape.length === 0 ? [count] : [count, ...this.shape.slice(1)];
    return this.#derived(new Tensor(this.ctx, this.buffer, shape, this.dtype, this.owner, label, this.byteOffset + first * rowElems * DTYPE_BYTES[this.dtype]));
  }

  /** Number of elements. */
  get size(): number {
    return numel(this.shape);
  }

  /** Bytes the elements occupy (without the pool's rounding). */
  get byteLength(): number {
    return this.size * DTYPE_BYTES[this.dtype];
  }

  /** Bytes to bind: the element bytes rounded up to 4 (WGSL storage arrays are 4-byte aligned). */
  get bindingBytes(): number {
    return Math.max(4, Math.ceil(this.byteLength / 4) * 4);
  }

  get released(): boolean {
    return this.#released;
  }

  /** Throws ReleasedError when the tensor was released. */
  assertLive(): void {
    if (this.#released) throw new ReleasedError(`tensor "${this.label}"`);
  }

  /** Give the buffer back to the pool. Releasing twice throws. */
  release(): void {
    this.assertLive();
    this.#released = true;
    this.ctx.keptTexels.forget(this.buffer);
    this.ctx.pool.release(this.buffer);
  }

  toString(): string {
    return `Tensor(${this.label}: ${this.dtype}[${this.shape.join(', ')}]${this.byteOffset ? ` @${this.byteOffset}` : ''})`;
  }
}

let nextId = 0;

/** A tensor with unspecified contents (pooled buffers are reused). */
export function emptyTensor(ctx: GpuContext, shape: readonly number[], dtype: DType = 'f32', opts: TensorOptions = {}): Tensor {
  const label = opts.label ?? `t${nextId++}`;
  checkShape('tensor', label, shape);
  const owner = opts.owner ?? 'default';
  const bytes = Math.max(4, Math.ceil((numel(shape) * DTYPE_BYTES[dtype]) / 4) * 4);
  const { buffer } = ctx.pool.acquire(bytes, owner, label, { exact: opts.exact });
  return new Tensor(ctx, buffer, shape, dtype, owner, label);
}

/** A tensor of zeros. */
export function zerosTensor(ctx: GpuContext, shape: readonly number[], dtype: DType = 'f32', opts: TensorOptions = {}): Tensor {
  const t = emptyTensor(ctx, shape, dtype, opts);
  const enc = ctx.device.createCommandEncoder({ label: `zero ${t.label}` });
  enc.clearBuffer(t.buffer, 0, t.bindingBytes);
  ctx.device.queue.submit([enc.finish()]);
  return t;
}

/** Upload host data; the dtype follows the array type (Uint16Array = f16 bits). */
export function tensorFrom(ctx: GpuContext, data: AnyHostArray, shape: readonly number[] = [data.length], opts: TensorOptions = {}): Tensor {
  const label = opts.label ?? `t${nextId++}`;
  checkShape('tensor', label, shape);
  if (numel(shape) !== data.length) {
    throw new ShapeError('tensor', `${label}: ${data.length} values do not fill shape [${shape.join(', ')}]`);
  }
  const t = emptyTensor(ctx, shape, dtypeOf(data), { ...opts, label });
  if (data.byteLength % 4 === 0) {
    ctx.device.queue.writeBuffer(t.buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  } else {
    const padded = new Uint8Array(t.bindingBytes);
    padded.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    ctx.device.queue.writeBuffer(t.buffer, 0, padded);
  }
  return t;
}
