/**
 * RoPE — rotary position embedding, forward and backward (host wrapper of kernels/rope.wgsl).
 *
 * Convention: half-split pairs (d, d + D/2), i.e. Llama / Qwen2 `rotate_half`:
 *   y = x · cos θ + rotate_half(x) · sin θ,  rotate_half(x) = [−x[D/2:], x[:D/2]],
 *   θ[b, t, d] = positions[b, t] · base^(−2d/D)   (the same angle for d and d + D/2).
 * Applies to the q layout [B, T, Hq, D] and the k layout [B, T, Hkv, D] alike. Positions are
 * per token (i32 [B, T]), so packed sequences restart at 0. The backward pass is the rotation by
 * −θ. `base` (θ base) defaults to 10000; Qwen2 uses 1e6. Writes (=) its output; the output may
 * be the input itself (rotated in place).
 */
import { LimitError, ShapeError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';

const KERNEL = 'rope';
const WG = 64;
const MAX_D = 256;

export interface RopeOptions {
  /** θ base; default 10000. Ignored when `invFreq` is given. */
  base?: number;
  /**
   * The D/2 inverse frequencies themselves (f32), when a scaling rule (Llama 3's, linear) has
   * changed them from base^(−2d/D): src/model/rope.ts computes them as transformers does.
   */
  invFreq?: Float32Array;
}

/**
 * inv_freq[d] = 1 / base^(2d/D) for d < D/2, rounded to f32 at each step as PyTorch computes it
 * in f32 (`1.0 / (base ** (torch.arange(0, D, 2).float() / D))`).
 */
export function ropeInvFreq(D: number, base = 10000): Float32Array {
  const out = new Float32Array(D / 2);
  for (let d = 0; d < D / 2; d++) out[d] = Math.fround(1 / Math.fround(Math.pow(base, Math.fround((2 * d) / D))));
  return out;
}

function rope(rec: Recorder, op: string, out: Tensor, x: Tensor, positions: Tensor, opts: RopeOptions, sign: 1 | -1, names: [string, string]): void {
  const base = opts.base ?? 10000;
  const [outName, xName] = names;
  for (const [n, t] of [[outName, out], [xName, x]] as const) {
    if (t.dtype !== 'f32') throw new ShapeError(op, `${n} (${t}) must be f32, got ${t.dtype}`);
  }
  if (positions.dtype !== 'i32') throw new ShapeError(op, `positions (${positions}) must be i32, got ${positions.dtype}`);
  if (x.shape.length !== 4) throw new ShapeError(op, `${xName} [${x.shape.join(', ')}] must be [B, T, H, D]`);
  const [B, T, H, D] = x.shape;
  if (D % 2 !== 0 || D < 2 || D > MAX_D) {
    throw new ShapeError(op, `unsupported head size D=${D} (${xName} [${x.shape.join(', ')}]): D must be even and at most ${MAX_D}`);
  }
  if (out.shape.length !== 4 || out.shape.some((d, i) => d !== x.shape[i])) {
    throw new ShapeError(op, `${outName} [${out.shape.join(', ')}] must have the shape of ${xName} [${x.shape.join(', ')}]`);
  }
  if (positions.shape.length !== 2 || positions.shape[0] !== B || positions.shape[1] !== T) {
    throw new ShapeError(op, `positions [${positions.shape.join(', ')}] must be [B, T] = [${B}, ${T}] for ${xName} [${x.shape.join(', ')}]`);
  }
  if (!(Number.isFinite(base) && base > 0)) throw new ShapeError(op, `base must be a positive number, got ${base}`);
  const maxBinding = rec.ctx.limit('maxStorageBufferBindingSize');
  for (const t of [x, out, positions]) {
    if (t.bindingBytes > maxBinding) throw new LimitError(op, `${t} is ${t.bindingBytes} bytes, over maxStorageBufferBindingSize ${maxBinding}`);
  }
  const half = D / 2;
  const nPairs = B * T * H * half;
  if (nPairs === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, nPairs, WG);
  if (opts.invFreq !== undefined && (opts.invFreq.length !== half || !opts.invFreq.every(Number.isFinite))) {
    throw new ShapeError(op, `invFreq must hold D/2 = ${half} finite values, got ${opts.invFreq.length}`);
  }
  const invFreq = opts.invFreq ?? ropeInvFreq(D, base);
  const inPlace = out.buffer === x.buffer;
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: inPlace ? 'main_inplace' : 'main',
    constants: { WG },
    bindings: { x: inPlace ? null : x, positions, y: out },
    // inv_freq holds 128 values; those past D/2 are zero.
    params: { n_pairs: nPairs, row_threads: rowThreads, H, half, sign, inv_freq: invFreq },
    workgroups,
  });
}

/** Forward (=): out = RoPE(x, positions). out may be x (in place). */
export function ropeForward(rec: Recorder, out: Tensor, x: Tensor, positions: Tensor, opts: RopeOptions = {}): void {
  rope(rec, KERNEL, out, x, positions, opts, 1, ['out', 'x']);
}

/** Backward (=): dx = RoPE⁻¹(dout) — the rotation by −θ. dx may be dout (in place). */
export function ropeBackward(rec: Recorder, dx: Tensor, dout: Tensor, positions: Tensor, opts: RopeOptions = {}): void {
  rope(rec, KERNEL, dx, dout, positions, opts, -1, ['dx', 'dout']);
}
