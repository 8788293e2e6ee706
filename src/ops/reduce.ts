/**
 * Deterministic reductions (host wrappers of kernels/reduce.wgsl):
 *   sumRows(out, x)                     out[r] = Σ_c x[r, c] over the last dimension  (=)
 *   sumAll(out, x, scratch)             out[0] = Σ x                                  (=)
 *   globalL2Norm(norm, tensors, scratch) norm[0] = sqrt(Σ_k Σ tensors[k]²)           (=)
 * The whole-tensor sums are two-level: one partial sum per CHUNK elements into `scratch` (sized
 * by `reduceScratchSize`), then one workgroup adds the partials. The order of every addition is
 * fixed by the sizes alone, so a result is bitwise reproducible on an adapter. A tensor larger
 * than one storage binding is read a range of whole chunks at a time: the same partials.
 */
import { ShapeError } from '../errors.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { dims, expectBindable, expectDistinct, expectDtype, expectScratch, expectShape, rowGrid, rowsCols } from '../gpu/checks.ts';
import { flatChunks } from '../gpu/chunks.ts';

const KERNEL = 'reduce';

/** Elements summed by one workgroup of the first level (the same on every adapter). */
export const REDUCE_CHUNK = 4096;

/** Partial sums of the first level for tensors of these element counts (≥ 1). */
export function reduceScratchSize(...sizes: number[]): number {
  return Math.max(1, sizes.reduce((a, n) => a + Math.ceil(n / REDUCE_CHUNK), 0));
}

/** Threads per workgroup (the tunings': few lanes and many items per lane on the software adapters). */
function threads(rec: Recorder): number {
  return rec.ctx.tunings.reductionWidth;
}

/** out[r] = Σ_c x[r, c] (last dimension). Writes (=) `out`, whose shape is x's without the last dim. */
export function sumRows(rec: Recorder, out: Tensor, x: Tensor): void {
  expectDtype(KERNEL, 'x', x, 'f32');
  expectDtype(KERNEL, 'out', out, 'f32');
  const c = rowsCols(KERNEL, 'x', x)[1];
  expectShape(KERNEL, 'out', out, x.shape.length === 1 ? [1] : x.shape.slice(0, -1));
  const n = out.size; // rows, also when c = 0 (their sums are 0)
  expectDistinct(KERNEL, [['out', out, 'x', x]]);
  expectBindable(KERNEL, rec.ctx, [['x', x], ['out', out]]);
  if (n === 0) return;
  const wg = threads(rec);
  const { workgroups, nx } = rowGrid(rec.ctx, n);
  rec.dispatch({ kernel: KERNEL, entryPoint: 'sum_rows', constants: { WG: wg }, bindings: { src: x, dst: out }, params: { n, c, base: 0, groups_x: nx }, workgroups });
}

function checkTotal(name: string, out: Tensor, tensors: readonly Tensor[], scratch: Tensor): void {
  expectDtype(KERNEL, name, out, 'f32');
  expectShape(KERNEL, name, out, [1]);
  tensors.forEach((t, i) => expectDtype(KERNEL, `tensors[${i}]`, t, 'f32'));
  expectScratch(KERNEL, scratch, reduceScratchSize(...tensors.map((t) => t.size)), 'f32');
  expectDistinct(KERNEL, [[name, out, 'scratch', scratch],
    ...tensors.flatMap((t, i) => [[name, out, `tensors[${i}]`, t] as const, ['scratch', scratch, `tensors[${i}]`, t] as const])]);
  expectBindable(KERNEL, out.ctx, [[name, out], ['scratch', scratch]]);
  for (const t of tensors) flatChunks(KERNEL, t, REDUCE_CHUNK); // refuses what cannot be split
}

/** Level 1 into scratch for every tensor, then level 2 into out[0]. */
function twoLevel(rec: Recorder, out: Tensor, tensors: readonly Tensor[], scratch: Tensor, square: boolean): void {
  const wg = threads(rec);
  const constants = { WG: wg, ITEMS: REDUCE_CHUNK / wg, SQUARE: square ? 1 : 0 };
  let base = 0;
  // Ranges of whole chunks of a tensor over the binding limit give the same partials in order.
  for (const t of tensors.flatMap((x) => (x.size === 0 ? [] : flatChunks(KERNEL, x, REDUCE_CHUNK)))) {
    const groups = Math.ceil(t.size / REDUCE_CHUNK);
    const { workgroups, nx } = rowGrid(rec.ctx, groups);
    rec.dispatch({ kernel: KERNEL, entryPoint: 'partial', constants, bindings: { src: t, dst: scratch }, params: { n: t.size, c: 0, base, groups_x: nx }, workgroups });
    base += groups;
  }
  // Empty inputs leave no partials and the level-2 sum is 0.
  const finalize = { WG: wg, SQRT: square ? 1 : 0 };
  rec.dispatch({ kernel: KERNEL, entryPoint: 'finalize', constants: finalize, bindings: { src: scratch, dst: out }, params: { n: base, c: 0, base: 0, groups_x: 0 }, workgroups: [1] });
}

/** out[0] = Σ x over every element. Writes (=) `out` [1] and `scratch` (≥ reduceScratchSize(x.size)). */
export function sumAll(rec: Recorder, out: Tensor, x: Tensor, scratch: Tensor): void {
  checkTotal('out', out, [x], scratch);
  twoLevel(rec, out, [x], scratch, false);
}

/**
 * norm[0] = ‖(tensors concatenated)‖₂, the global gradient norm of gradient clipping. Writes (=)
 * `norm` [1] and `scratch` (≥ reduceScratchSize(...sizes)). Turn it into a clip scale on the GPU
 * with `clipScale` (src/ops/adamw.ts), no readback needed.
 */
export function globalL2Norm(rec: Recorder, norm: Tensor, tensors: readonly Tensor[], scratch: Tensor): void {
  if (tensors.length === 0) throw new ShapeError(KERNEL, `globalL2Norm needs at least one tensor (norm ${dims(norm)})`);
  checkTotal('norm', norm, tensors, scratch);
  twoLevel(rec, norm, tensors, scratch, true);
}
