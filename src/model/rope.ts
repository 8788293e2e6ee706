/**
 * RoPE for the training passes, at arbitrary per-token positions (packed segments restart at 0),
 * forward and backward, as a batched product with one rotation matrix per token.
 *
 * Convention: rotate_half (Hugging Face Llama): for i < D/2, angle = pos·θ^(−2i/D),
 *   out_i       = x_i·cos − x_{i+D/2}·sin
 *   out_{i+D/2} = x_{i+D/2}·cos + x_i·sin
 * Written as a row vector times a matrix, out = x·M(pos) with M [D, D] holding cos on the
 * diagonal, −sin at (i + D/2, i) and sin at (i, i + D/2). The forward is then
 * matmul(out [N, H, D], x [N, H, D], M [N, D, D]) batched over the N tokens, and the backward
 * (a rotation's inverse is its transpose) dx = dout·Mᵀ, the same product with transB.
 *
 * Why a product and not an elementwise kernel: the kernel suite's RoPE is fused into the KV-cache
 * append (positions start + t per sequence), which cannot express packed rows; the product needs
 * no new kernel and is exact — each output sums the same two f32 products as the elementwise
 * form, plus exact zeros. Cost: N·H·D² multiply-adds (D/C of the q projection's) and an
 * [N, D, D] table per batch, built on the host with angles in f64 as the tfjs reference does.
 */
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { matmul } from '../ops/matmul.ts';
import { view } from './layers.ts';

/** M(pos) for every token: [N, D, D] row-major, f32 values of f64 cos/sin. */
export function ropeRotations(positions: Int32Array, D: number, theta: number): Float32Array {
  const half = D / 2;
  const out = new Float32Array(positions.length * D * D);
  for (let n = 0; n < positions.length; n++) {
    const base = n * D * D;
    for (let i = 0; i < half; i++) {
      const angle = positions[n] * Math.pow(theta, (-2 * i) / D);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      out[base + i * D + i] = c;
      out[base + (i + half) * D + (i + half)] = c;
      out[base + (i + half) * D + i] = -s;
      out[base + i * D + (i + half)] = s;
    }
  }
  return out;
}

/** [N, H, D] view of a [B, T, H, D] (or [N, H·D]) tensor with H heads of D. */
function tokens(t: Tensor, D: number): Tensor {
  const N = t.shape.length === 4 ? t.shape[0] * t.shape[1] : t.shape[0];
  return view(t, [N, t.size / (N * D), D]);
}

/** out = rope(inp) per token; writes (=). out, inp [B, T, H, D]; rot [N, D, D] from ropeRotations. */
export function ropeForward(rec: Recorder, out: Tensor, inp: Tensor, rot: Tensor): void {
  const D = rot.shape[2];
  matmul(rec, tokens(out, D), tokens(inp, D), rot, { opName: 'rope.forward' });
}

/** dinp = dout·Mᵀ per token (the inverse rotation); writes (=). */
export function ropeBackward(rec: Recorder, dinp: Tensor, dout: Tensor, rot: Tensor): void {
  const D = rot.shape[2];
  matmul(rec, tokens(dinp, D), tokens(dout, D), rot, { transB: true, opName: 'rope.backward' });
}
