/**
 * Ranges of a tensor that fit one storage binding.
 *
 * WebGPU caps a single binding at maxStorageBufferBindingSize (128 MiB on the software adapters
 * here and many GPUs) while a buffer may be far larger (maxBufferSize): GPT-2 small's tied
 * embedding is 154 MB f32, Qwen2.5-0.5B's 544 MB. Such a tensor stays one GPUBuffer; the kernels
 * that touch it bind a range at a time ({buffer, offset, size}, offset a multiple of
 * minStorageBufferOffsetAlignment). This file plans those ranges; the pure functions take plain
 * numbers (unit-tested in Node), the last three apply them to a tensor on its context.
 *
 *   splitRange(total, per)           [first, count] pieces of at most `per`
 *   flatChunkElems(...)              elements per piece of an elementwise pass (aligned starts)
 *   windowRows(...)                  rows of a [rows, ld] matrix one aligned window can hold
 *   alignedWindow(...)               the aligned window holding elements [first, first + count)
 *   rowChunks(op, t, quantum)        a tensor as views of row ranges that each fit a binding
 *   flatChunks(op, t, quantum)       the same over its elements (elementwise passes)
 *   windowOf(t, first, count)        a view holding elements [first, first + count) + their offset in it
 */
import { LimitError } from '../errors.ts';
import { DTYPE_BYTES, type Tensor } from './tensor.ts';

/** Bytes a window may take beyond its elements: the aligned start (< align) and vec4 rounding (≤ 16). */
export function windowSlack(align: number): number {
  return align + 16;
}

/** [first, count] pieces of [0, total) of at most `per` each, in order (none for total 0). */
export function splitRange(total: number, per: number): [number, number][] {
  if (!(per >= 1)) throw new RangeError(`splitRange: pieces of ${per} cannot cover ${total}`);
  const out: [number, number][] = [];
  for (let o = 0; o < total; o += per) out.push([o, Math.min(per, total - o)]);
  return out;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Elements per piece when a flat run of `size` elements of `elemBytes` is processed a binding at
 * a time: all of them when they fit, else the most that fit, rounded down to a multiple of
 * `quantum` and of the elements in `align` bytes (so every piece starts aligned). 0 when not even
 * one such unit fits.
 */
export function flatChunkElems(size: number, elemBytes: number, maxBytes: number, align: number, quantum = 1): number {
  if (Math.ceil((size * elemBytes) / 4) * 4 <= maxBytes) return Math.max(1, size);
  const unitAlign = align / gcd(align, elemBytes);
  const unit = (unitAlign * quantum) / gcd(unitAlign, quantum);
  return Math.floor(Math.floor(maxBytes / elemBytes) / unit) * unit;
}

/**
 * Most rows n of a row-major matrix with row stride `ld` elements, of which `cols` are used,
 * whose window (((n − 1)·ld + cols) elements from any start, see alignedWindow) fits `maxBytes`.
 * 0 when not even one row fits.
 */
export function windowRows(ld: number, cols: number, elemBytes: number, maxBytes: number, align: number): number {
  const room = maxBytes - windowSlack(align) - cols * elemBytes;
  return room < 0 ? 0 : Math.floor(room / (ld * elemBytes)) + 1;
}

/**
 * The window that binds elements [first, first + count) of a buffer region starting at an aligned
 * byte: it starts at the aligned byte at or before the first element, `offset` elements before
 * it, and holds offset + count elements rounded up to whole vec4s.
 */
export function alignedWindow(first: number, count: number, elemBytes: number, align: number): { startElem: number; offset: number; elems: number } {
  const startByte = Math.floor((first * elemBytes) / align) * align;
  const startElem = startByte / elemBytes;
  const offset = first - startElem;
  return { startElem, offset, elems: Math.ceil((offset + count) / 4) * 4 };
}

/** Rows [first, first + count) of a tensor, and a view of them that fits one binding. */
export interface RowChunk {
  readonly first: number;
  readonly count: number;
  readonly view: Tensor;
}

/**
 * `t` (rows along its first dimension) as views of consecutive rows that each fit one binding, in
 * order, each starting aligned and holding a multiple of `quantum` rows (except the last); one
 * chunk, `t` itself, when the whole tensor fits. Throws LimitError when no aligned piece fits.
 */
export function rowChunks(op: string, t: Tensor, quantum = 1): RowChunk[] {
  const max = t.ctx.limit('maxStorageBufferBindingSize');
  const rows = t.shape.length === 0 ? 1 : t.shape[0];
  if (t.bindingBytes <= max || rows === 0) return [{ first: 0, count: rows, view: t }];
  const rowBytes = (t.size / rows) * DTYPE_BYTES[t.dtype];
  const per = flatChunkElems(rows, rowBytes, max, t.ctx.limit('minStorageBufferOffsetAlignment'), quantum);
  if (per < 1) {
    throw new LimitError(op, `${t} is ${t.byteLength} bytes, over the device's maxStorageBufferBindingSize of ${max}, and no aligned range of ${quantum} of its rows (${rowBytes} bytes each) fits one binding`);
  }
  return splitRange(rows, per).map(([first, count]) => ({ first, count, view: t.rows(first, count) }));
}

/**
 * `t` as flat views that each fit one binding (see rowChunks; `quantum` elements), or `[t]` when
 * the whole tensor fits. Elementwise passes over a tensor larger than a binding run once per view.
 */
export function flatChunks(op: string, t: Tensor, quantum = 1): Tensor[] {
  if (t.bindingBytes <= t.ctx.limit('maxStorageBufferBindingSize')) return [t];
  return rowChunks(op, t.view([t.size]), quantum).map((c) => c.view);
}

/**
 * A view of `t` (from an aligned byte of its buffer) that holds its elements [first, first +
 * count), and where they start in it: `offset` elements in. The whole tensor (offset = first)
 * when it fits one binding, or `maxBytes` when given (a smaller window is wanted).
 */
export function windowOf(t: Tensor, first: number, count: number, maxBytes = t.ctx.limit('maxStorageBufferBindingSize')): { view: Tensor; offset: number } {
  const max = Math.min(maxBytes, t.ctx.limit('maxStorageBufferBindingSize'));
  if (Math.ceil(t.size / 4) * 4 * DTYPE_BYTES[t.dtype] <= max) return { view: t, offset: first };
  const w = alignedWindow(first, count, DTYPE_BYTES[t.dtype], t.ctx.limit('minStorageBufferOffsetAlignment'));
  const flat = t.view([t.size]);
  const elems = Math.min(w.elems, t.size - w.startElem);
  return { view: flat.rows(w.startElem, elems, `${t.label}[${first}:${first + count}]`), offset: w.offset };
}
