/**
 * Row softmax, forward and backward (host wrappers of kernels/softmax.wgsl). The softmax runs
 * over the last dimension C; the others are flattened into N rows.
 *   softmaxForward(y, x):        y = softmax(x)                       (writes, =)
 *   softmaxBackward(dx, dy, y):  dx = y ⊙ (dy − Σ_c dy·y)             (writes, =)
 */
import type { BindingValue, Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectShape, rowGrid, rowsCols } from '../gpu/checks.ts';

const KERNEL = 'softmax';

function threads(rec: Recorder): number {
  return rec.ctx.tunings.reductionWidth;
}

function dispatchRows(rec: Recorder, entryPoint: string, bindings: Record<string, BindingValue>, n: number, c: number): void {
  if (n === 0 || c === 0) return;
  const { workgroups, nx } = rowGrid(rec.ctx, n);
  rec.dispatch({ kernel: KERNEL, entryPoint, constants: { WG: threads(rec) }, bindings, params: { n, c, rows_x: nx }, workgroups });
}

/** y = softmax(x) over the last dimension. Writes (=) `y`, same shape as `x`, f32, not aliasing it. */
export function softmaxForward(rec: Recorder, y: Tensor, x: Tensor): void {
  expectDtype(KERNEL, 'x', x, 'f32');
  expectDtype(KERNEL, 'y', y, 'f32');
  expectShape(KERNEL, 'y', y, x.shape);
  expectDistinct(KERNEL, [['y', y, 'x', x]]);
  expectBindable(KERNEL, rec.ctx, [['x', x], ['y', y]]);
  const [n, c] = rowsCols(KERNEL, 'x', x);
  dispatchRows(rec, 'forward', { x, out: y }, n, c);
}

/** dx = y ⊙ (dy − rowsum(dy ⊙ y)), the softmax's backward from its output y. Writes (=) `dx`. */
export function softmaxBackward(rec: Recorder, dx: Tensor, dy: Tensor, y: Tensor): void {
  for (const [name, t] of [['dx', dx], ['dy', dy], ['y', y]] as const) expectDtype(KERNEL, name, t, 'f32');
  expectShape(KERNEL, 'dy', dy, y.shape);
  expectShape(KERNEL, 'dx', dx, y.shape);
  expectDistinct(KERNEL, [['dx', dx, 'dy', dy], ['dx', dx, 'y', y]]);
  expectBindable(KERNEL, rec.ctx, [['dx', dx], ['dy', dy], ['y', y]]);
  const [n, c] = rowsCols(KERNEL, 'y', y);
  dispatchRows(rec, 'backward', { x: dy, y_in: y, out: dx }, n, c);
}
