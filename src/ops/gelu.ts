/**
 * gelu — GELU with the tanh approximation (GPT-2), forward and backward, elementwise over f32
 * tensors of any shape (host wrappers of kernels/gelu.wgsl). Outputs may not alias inputs
 * (WebGPU forbids binding one buffer read-only and writable in one dispatch).
 */
import { type BindingValue, grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectSameShapes } from '../gpu/checks.ts';

const KERNEL = 'gelu';
const WG = 256;

function dispatch(rec: Recorder, entryPoint: string, n: number, bindings: Record<string, BindingValue>): void {
  if (n === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
  rec.dispatch({ kernel: KERNEL, entryPoint, constants: { WG }, bindings, params: { n, row_threads: rowThreads }, workgroups });
}

/** out = 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))); writes (=) out. */
export function geluForward(rec: Recorder, out: Tensor, inp: Tensor): void {
  const op = `${KERNEL}.forward`;
  expectSameShapes(op, [['out', out], ['inp', inp]]);
  expectDistinct(op, [['out', out, 'inp', inp]]);
  expectBindable(op, rec.ctx, [['inp', inp], ['out', out]]);
  dispatch(rec, 'forward', inp.size, { inp, out });
}

/** dinp = dout·gelu'(inp); writes (=) dinp. */
export function geluBackward(rec: Recorder, dinp: Tensor, inp: Tensor, dout: Tensor): void {
  const op = `${KERNEL}.backward`;
  expectSameShapes(op, [['dinp', dinp], ['inp', inp], ['dout', dout]]);
  expectDistinct(op, [['dinp', dinp, 'inp', inp], ['dinp', dinp, 'dout', dout]]);
  expectBindable(op, rec.ctx, [['inp', inp], ['dinp', dinp]]);
  dispatch(rec, 'backward', inp.size, { inp, dout, dinp });
}
