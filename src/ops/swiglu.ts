/**
 * swiglu — out = act(gate)·up, forward and backward, elementwise (host wrappers of
 * kernels/swiglu.wgsl): act = silu (SwiGLU, the default) or GELU's tanh approximation (GeGLU,
 * Gemma 3's `gelu_pytorch_tanh`). gate and up are two f32 tensors of one shape [..., F] — the outputs of the
 * separate gate and up projections (each can carry its own LoRA adapter) — not one fused [N, 2F]
 * tensor. Outputs may not alias inputs.
 */
import { ShapeError } from '../errors.ts';
import { type BindingValue, grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectSameShapes } from '../gpu/checks.ts';

const KERNEL = 'swiglu';
const WG = 256;

/** The gate's activation: 'silu' (SwiGLU) or 'gelu' (GeGLU, tanh approximation). */
export type GateActivation = 'silu' | 'gelu';

export interface GatedOptions {
  /** Default 'silu'. */
  act?: GateActivation;
}

function actId(op: string, opts: GatedOptions): number {
  const a = opts.act ?? 'silu';
  if (a !== 'silu' && a !== 'gelu') throw new ShapeError(op, `act must be 'silu' or 'gelu', got ${JSON.stringify(a)}`);
  return a === 'silu' ? 0 : 1;
}

function dispatch(rec: Recorder, entryPoint: string, n: number, act: number, bindings: Record<string, BindingValue>): void {
  if (n === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
  rec.dispatch({ kernel: KERNEL, entryPoint, constants: { WG, ACT: act }, bindings, params: { n, row_threads: rowThreads }, workgroups });
}

/** out = act(gate)·up; writes (=) out. */
export function swigluForward(rec: Recorder, out: Tensor, gate: Tensor, up: Tensor, opts: GatedOptions = {}): void {
  const op = `${KERNEL}.forward`;
  expectSameShapes(op, [['out', out], ['gate', gate], ['up', up]]);
  expectDistinct(op, [['out', out, 'gate', gate], ['out', out, 'up', up]]);
  expectBindable(op, rec.ctx, [['gate', gate], ['up', up], ['out', out]]);
  dispatch(rec, 'forward', gate.size, actId(op, opts), { gate, up, out });
}

/** dgate = dout·up·act'(g), dup = dout·act(g); writes (=) both. */
export function swigluBackward(rec: Recorder, dgate: Tensor, dup: Tensor, dout: Tensor, gate: Tensor, up: Tensor, opts: GatedOptions = {}): void {
  const op = `${KERNEL}.backward`;
  expectSameShapes(op, [['dgate', dgate], ['dup', dup], ['dout', dout], ['gate', gate], ['up', up]]);
  const pairs: [string, Tensor, string, Tensor][] = [['dgate', dgate, 'dup', dup]];
  for (const [nw, w] of [['dgate', dgate], ['dup', dup]] as const) {
    for (const [nr, r] of [['dout', dout], ['gate', gate], ['up', up]] as const) pairs.push([nw, w, nr, r]);
  }
  expectDistinct(op, pairs);
  expectBindable(op, rec.ctx, [['gate', gate], ['up', up], ['dout', dout], ['dgate', dgate], ['dup', dup]]);
  dispatch(rec, 'backward', gate.size, actId(op, opts), { gate, up, dout, dgate, dup });
}
