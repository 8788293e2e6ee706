/**
 * The model's RoPE: q and k rotated in place by the RoPE kernel (src/ops/rope.ts, rotate_half
 * convention) with the layer's inverse frequencies (arch.ts layerPlan: the checkpoint's base and
 * scaling, or a sliding layer's own base), at per-token positions. One helper for every path, so
 * training, prefill and decode rotate with the same cos/sin:
 *   training forward   positions restart per packed segment (batch.ts)        sign +1
 *   training backward  dq, dk un-rotated in place (the rotation by −θ)        sign −1
 *   prefill            positions t of the right-padded prompts [B, T]        sign +1
 *   decode             the fed token's row per sequence, [B, 1]              sign +1
 * Nothing is saved for the backward pass: attention's backward needs only the rotated q and k,
 * and the linear layers' backward reads their input, not their output.
 *
 * Legend: B rows, T positions, Hq/Hkv heads, D head dim.
 */
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { ropeBackward, ropeForward } from '../ops/rope.ts';

/**
 * q [B, T, Hq, D] and k [B, T, Hkv, D] rotated in place (=) at positions i32 [B, T] with inverse
 * frequencies invFreq [D/2]; sign −1 applies the inverse rotation (the backward pass of sign +1).
 */
export function ropeQK(rec: Recorder, invFreq: Float32Array, q: Tensor, k: Tensor, positions: Tensor, sign: 1 | -1 = 1): void {
  const rope = sign === 1 ? ropeForward : ropeBackward;
  rope(rec, q, q, positions, { invFreq });
  rope(rec, k, k, positions, { invFreq });
}
