/**
 * Checks and launch sizes shared by the kernels' host wrappers (src/ops/*.ts): dtype and shape
 * checks that throw ShapeError naming the kernel before anything is recorded, the binding-size
 * and scratch checks, the row grid (one workgroup per row), the row kernels' workgroup size per
 * tuning, and the guard against an adapter's per-invocation loop limit (expectLoopBudget).
 * Adapter-dependent choices read `ctx.quirks` and `ctx.tunings` (src/gpu/quirks/), never the
 * adapter's kind or strings.
 */
import { LimitError, ShapeError } from '../errors.ts';
import type { GpuContext } from './device.ts';
import { LOOP_BUDGET_MARGIN } from './quirks/quirks.ts';
import { grid1d } from './recorder.ts';
import type { DType, Tensor } from './tensor.ts';

/** `[a, b]` for messages. */
export function dims(t: Tensor | readonly number[]): string {
  const shape = Array.isArray(t) ? t : (t as Tensor).shape;
  return `[${shape.join(', ')}]`;
}

/** Throws unless `t` has the dtype. */
export function expectDtype(op: string, name: string, t: Tensor, dtype: DType): void {
  if (t.dtype !== dtype) throw new ShapeError(op, `${name} (${t}) must be ${dtype}, got ${t.dtype}`);
}

/** Throws unless `t` has exactly this shape. */
export function expectShape(op: string, name: string, t: Tensor, shape: readonly number[]): void {
  const ok = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
  if (!ok) throw new ShapeError(op, `${name} must have shape ${dims(shape)}, got ${t}`);
}

/** Throws unless every tensor is f32 with the shape of the first. */
export function expectSameShapes(op: string, tensors: readonly (readonly [string, Tensor])[]): void {
  const t0 = tensors[0][1];
  for (const [name, t] of tensors) {
    expectDtype(op, name, t, 'f32');
    if (t.shape.length !== t0.shape.length || t.shape.some((d, i) => d !== t0.shape[i])) {
      throw new ShapeError(op, `shapes differ: ${tensors.map(([m, u]) => `${m} ${dims(u)}`).join(', ')}`);
    }
  }
}

/** [N, C] of a tensor of rank ≥ 1: the last dimension is C, the others are flattened into N. */
export function rowsCols(op: string, name: string, t: Tensor): [number, number] {
  if (t.shape.length < 1) throw new ShapeError(op, `${name} (${t}) needs at least one dimension`);
  const c = t.shape[t.shape.length - 1];
  return [c === 0 ? 0 : t.size / c, c];
}

/** Throws when two tensors share a buffer (WebGPU forbids read + write bindings of one buffer). */
export function expectDistinct(op: string, pairs: readonly (readonly [string, Tensor | null, string, Tensor | null])[]): void {
  for (const [na, a, nb, b] of pairs) {
    if (a && b && a.buffer === b.buffer) throw new ShapeError(op, `${na} (${a}) must not alias ${nb} (${b})`);
  }
}

/** Throws unless `scratch` is an f32/u32 tensor with at least `elems` elements. */
export function expectScratch(op: string, scratch: Tensor, elems: number, dtype: DType): void {
  if (scratch.dtype !== dtype) throw new ShapeError(op, `scratch (${scratch}) must be ${dtype}, got ${scratch.dtype}`);
  if (scratch.size < elems) {
    throw new ShapeError(op, `scratch (${scratch}) holds ${scratch.size} elements, needs at least ${elems}`);
  }
}

/** LimitError when a tensor is over the device's binding size (checked before recording). */
export function expectBindable(op: string, ctx: GpuContext, tensors: readonly (readonly [string, Tensor | null])[]): void {
  const max = ctx.limit('maxStorageBufferBindingSize');
  for (const [name, t] of tensors) {
    if (t && t.bindingBytes > max) {
      throw new LimitError(op, `${name} (${t}) is ${t.bindingBytes} bytes, over the device's maxStorageBufferBindingSize of ${max}`);
    }
  }
}

/**
 * Workgroups for `rows` independent workgroups (one per row): [x, y] with x·y ≥ rows, x within
 * maxComputeWorkgroupsPerDimension; the kernel's row is wid.x + wid.y·nx.
 */
export function rowGrid(ctx: GpuContext, rows: number): { workgroups: [number, number, number]; nx: number } {
  const { workgroups, rowThreads } = grid1d(ctx, rows, 1);
  return { workgroups, nx: rowThreads };
}

/**
 * Threads per workgroup of the row kernels for rows of C channels (a power of two: they reduce
 * with a tree), by the context's tunings (many threads per row on real GPUs to hide latency, few
 * on the software adapters where each barrier is expensive).
 */
export function rowWorkgroupSize(ctx: GpuContext, c: number): number {
  return ctx.tunings.rowWorkgroupSize(c);
}

/**
 * Kernels whose per-thread loops could go past the adapter's loop budget (`ctx.quirks.loopBudget`:
 * llvmpipe ends an invocation's loops silently past it) give wrong results there without any
 * error, so their wrappers estimate the per-thread iteration count and refuse such shapes with a
 * LimitError. No limit on real GPUs.
 */
export function expectLoopBudget(op: string, ctx: GpuContext, iterations: number, what: string): void {
  const { kind, loopBudget } = ctx.quirks;
  if (iterations > loopBudget - LOOP_BUDGET_MARGIN) {
    throw new LimitError(op, `${what} needs about ${Math.round(iterations)} loop iterations per GPU thread, over ${kind}'s ` +
      `limit of ${loopBudget} per invocation (it stops the loops silently past it); use smaller shapes or a hardware adapter`);
  }
}
