/**
 * Matmul operands as the kernel addresses them, and the split of a product whose operands do not
 * fit one storage binding (used by src/ops/matmul.ts).
 *
 * Operands: a whole tensor, or a block of a 2-D tensor (rows × columns of a row-major [R, ld]
 * matrix): the kernel reads and writes element (r, c) at off + r·ld + c of the bound buffer range,
 * so a product can read or write a column slice of logits [N, V] in place.
 *
 * Split: A is stored [M, K] (or [K, M] transposed), B [K, N] (or [N, K]), C [M, N]. Binding a
 * range of rows is the only way to bind part of a tensor, so an operand over the binding limit
 * bounds its stored-row dimension (A: M or K, B: K or N, C: M) to the rows one aligned window
 * holds (src/gpu/chunks.ts). The product then runs as sub-products over ranges of M, N and K, each
 * binding windows of the big operands and whole tensors for the rest:
 *   logits = x·Wᵀ with W [V, C] too big        → ranges of N, column slices of C
 *   dx = dlogits·W                              → ranges of K, summed into C in order
 *   dW = dlogitsᵀ·x with dW [V, C] too big      → ranges of M, row windows of C
 * Ranges of M or N change no sum: bitwise the unsplit product. Ranges of K add the partial
 * products to C one after another: the same terms, summed in a different order. Where the adapter
 * has a loop budget (llvmpipe) K is also split into ranges an invocation can loop over (see
 * matmul.ts, registerMaxK).
 */
import { LimitError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { splitRange, windowOf, windowRows } from '../gpu/chunks.ts';
import { DTYPE_BYTES, Tensor } from '../gpu/tensor.ts';

/** Rows [row, row + rows) × columns [col, col + cols) of a 2-D tensor, read or written in place. */
export interface MatrixBlock {
  readonly tensor: Tensor;
  readonly row: number;
  readonly col: number;
  readonly rows: number;
  readonly cols: number;
}

export type MatmulOperand = Tensor | MatrixBlock;

/** A block of 2-D `t`: rows [first, first + count) and columns likewise (all of a dimension when absent). */
export function matrixBlock(t: Tensor, rows?: readonly [number, number], cols?: readonly [number, number]): MatrixBlock {
  if (t.shape.length !== 2) throw new ShapeError('matmul', `a block needs a 2-D tensor, got ${t}`);
  const [R, C] = t.shape;
  const [row, nr] = rows ?? [0, R];
  const [col, nc] = cols ?? [0, C];
  const inside = (a: number, n: number, d: number) => Number.isInteger(a) && Number.isInteger(n) && a >= 0 && n >= 0 && a + n <= d;
  if (!inside(row, nr, R) || !inside(col, nc, C)) {
    throw new ShapeError('matmul', `block rows [${row}, ${row + nr}) × columns [${col}, ${col + nc}) lie outside ${t}`);
  }
  return { tensor: t, row, col, rows: nr, cols: nc };
}

/** An operand as stored: batch × rows × cols, element (b, r, c) at off + b·rows·ld + r·ld + c. */
export interface Mat {
  readonly t: Tensor;
  readonly batch: number;
  readonly rows: number;
  readonly cols: number;
  readonly off: number;
  readonly ld: number;
  /** For messages: the shape, and the block's ranges. */
  readonly desc: string;
}

export const fmt = (t: Tensor) => `[${t.shape.join(', ')}]`;

/** Normalizes an operand; a plain tensor must be 2-D or 3-D (batched). */
export function mat(op: string, name: string, x: MatmulOperand): Mat {
  if (x instanceof Tensor) {
    x.assertLive();
    if (x.shape.length !== 2 && x.shape.length !== 3) throw new ShapeError(op, `${name} ${fmt(x)} must be 2-D or 3-D (batched)`);
    const [b, r, c] = x.shape.length === 3 ? x.shape : [1, ...x.shape];
    return { t: x, batch: b, rows: r, cols: c, off: 0, ld: c, desc: fmt(x) };
  }
  x.tensor.assertLive();
  const ld = x.tensor.shape[1];
  const desc = `${fmt(x.tensor)}[${x.row}:${x.row + x.rows}, ${x.col}:${x.col + x.cols}]`;
  return { t: x.tensor, batch: 1, rows: x.rows, cols: x.cols, off: x.row * ld + x.col, ld, desc };
}

/** A view of `t` as whole vec4 elements (pool buffers are 256-byte multiples). */
export function vec4View(t: Tensor): Tensor {
  return t.view([Math.max(4, Math.ceil(t.size / 4) * 4)], `${t.label}/vec4`);
}

/** Whether the whole of `t` (as vec4s) fits one binding. */
export function bindsWhole(ctx: GpuContext, t: Tensor): boolean {
  return vec4View(t).bindingBytes <= ctx.limit('maxStorageBufferBindingSize');
}

/** The tensor a sub-product binds for an operand, and where the operand's element (0, 0) is in it. */
export interface Bound {
  readonly t: Tensor;
  readonly off: number;
}

/** The ranges of M, N and K one sub-product covers, from global (m0, n0, k0). */
export interface SubRange {
  readonly m0: number;
  readonly n0: number;
  readonly k0: number;
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

export interface SubProduct extends SubRange {
  readonly a: Bound;
  readonly b: Bound;
  readonly c: Bound;
}

type Dim = 'M' | 'N' | 'K';

/**
 * The sub-products of C (M×N) = op(A)·op(B) (inner K): one when every operand fits its binding
 * (the operands bound whole), else ranges of M, N and K as the file header says; K ranges are at
 * most `maxK` deep as well (the adapter's loop budget, see matmul.ts), and ranges of N bind at most
 * `maxCopyBytes` of a transposed B (the texture copies of texture reads). Throws LimitError when an
 * operand cannot be split (batched products; a single row over the limit).
 */
export function splitProduct(op: string, ctx: GpuContext, dims: { batch: number; M: number; N: number; K: number }, a: Mat, b: Mat, c: Mat,
  transA: boolean, transB: boolean, maxK = Number.POSITIVE_INFINITY, maxCopyBytes = Number.POSITIVE_INFINITY): SubProduct[] {
  const { M, N, K } = dims;
  const max = ctx.limit('maxStorageBufferBindingSize');
  // A batched product is never split: its K stays whole (planMatmul refuses it if it must not).
  const per: Record<Dim, number> = { M, N, K: dims.batch === 1 ? Math.min(K, maxK) : K };
  const operands: [string, Mat, Dim][] = [['a', a, transA ? 'K' : 'M'], ['b', b, transB ? 'N' : 'K'], ['c', c, 'M']];
  // B copied into a texture (maxCopyBytes finite): bound over at most that many bytes (less the
  // window's alignment) where its stored rows run along N — ranges that change no sum. Only B:
  // the model's products have their weights there; an A split over M would copy every K range
  // of B once per M range (dlnf = dlogits·W at many rows).
  let copyCapped: Mat | null = null;
  if (dims.batch === 1 && Number.isFinite(maxCopyBytes) && transB && b.t.size * DTYPE_BYTES[b.t.dtype] > maxCopyBytes) {
    copyCapped = b;
    const rows = Math.floor((maxCopyBytes - ctx.limit('minStorageBufferOffsetAlignment')) / (b.ld * DTYPE_BYTES[b.t.dtype]));
    per.N = Math.min(per.N, Math.max(1, rows));
  }
  for (const [name, m, dim] of operands) {
    if (bindsWhole(ctx, m.t)) continue;
    const over = `${name} (${m.t}) is ${m.t.byteLength} bytes, over the device's maxStorageBufferBindingSize of ${max}`;
    if (dims.batch !== 1) throw new LimitError(op, `${over}; a batched product is not split (split the batch)`);
    const rows = windowRows(m.ld, m.cols, DTYPE_BYTES[m.t.dtype], max, ctx.limit('minStorageBufferOffsetAlignment'));
    if (rows < 1) throw new LimitError(op, `${over}, and a single row of it does not fit one binding`);
    per[dim] = Math.min(per[dim], rows);
  }
  // Element (r0, c0) of an operand for rows × cols of it: the whole tensor when it fits, else a window.
  const bind = (m: Mat, [r0, nr]: [number, number], [c0, nc]: [number, number]): Bound => {
    const first = m.off + r0 * m.ld + c0;
    const { view, offset } = windowOf(m.t, first, Math.max(0, nr - 1) * m.ld + nc, m === copyCapped ? maxCopyBytes : max);
    return { t: view, off: offset };
  };
  const subs: SubProduct[] = [];
  const ranges = (d: Dim, n: number) => (n === 0 ? [[0, 0] as [number, number]] : splitRange(n, per[d]));
  for (const mr of ranges('M', M)) {
    for (const nr of ranges('N', N)) {
      for (const kr of ranges('K', K)) {
        subs.push({
          m0: mr[0], n0: nr[0], k0: kr[0], M: mr[1], N: nr[1], K: kr[1],
          a: bind(a, transA ? kr : mr, transA ? mr : kr),
          b: bind(b, transB ? nr : kr, transB ? kr : nr),
          c: bind(c, mr, nr),
        });
      }
    }
  }
  return subs;
}
