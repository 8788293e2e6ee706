/**
 * residual — residual add with a scale (out = a + s·b), its in-place form (acc += s·b), and an
 * in-place scale (x *= s), elementwise over f32 tensors of one shape (host wrappers of
 * kernels/residual.wgsl). A written tensor may not alias a read one.
 */
import { type BindingValue, grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectSameShapes } from '../gpu/checks.ts';

const KERNEL = 'residual';
const WG = 256;

function dispatch(rec: Recorder, entryPoint: string, n: number, s: number, bindings: Record<string, BindingValue>): void {
  if (n === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
  rec.dispatch({ kernel: KERNEL, entryPoint, constants: { WG }, bindings, params: { n, row_threads: rowThreads, s }, workgroups });
}

/** out = a + s·b; writes (=) out. */
export function residualAdd(rec: Recorder, out: Tensor, a: Tensor, b: Tensor, s = 1): void {
  const op = `${KERNEL}.add`;
  expectSameShapes(op, [['out', out], ['a', a], ['b', b]]);
  expectDistinct(op, [['out', out, 'a', a], ['out', out, 'b', b]]);
  expectBindable(op, rec.ctx, [['a', a], ['b', b], ['out', out]]);
  dispatch(rec, 'add', out.size, s, { a, b, out });
}

/** acc += s·b, in place (accumulates into acc). */
export function residualAddInPlace(rec: Recorder, acc: Tensor, b: Tensor, s = 1): void {
  const op = `${KERNEL}.accumulate`;
  expectSameShapes(op, [['acc', acc], ['b', b]]);
  expectDistinct(op, [['acc', acc, 'b', b]]);
  expectBindable(op, rec.ctx, [['acc', acc], ['b', b]]);
  dispatch(rec, 'accumulate', acc.size, s, { b, out: acc });
}

/** x *= s, in place. */
export function scaleInPlace(rec: Recorder, x: Tensor, s: number): void {
  const op = `${KERNEL}.scale`;
  expectSameShapes(op, [['x', x]]);
  expectBindable(op, rec.ctx, [['x', x]]);
  dispatch(rec, 'scale', x.size, s, { out: x });
}
