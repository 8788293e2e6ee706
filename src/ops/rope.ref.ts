/**
 * CPU reference of kernels/rope.wgsl: rotary position embedding, half-split (`rotate_half`)
 * convention of Llama / Qwen2. x, out [B, T, H, D]; positions [B, T]; pairs (d, d + D/2).
 */
import { ropeInvFreq } from './rope.ts';

export interface RopeDims {
  B: number;
  T: number;
  H: number;
  D: number;
}

/**
 * out = rotate(x, +θ) (sign 1, forward) or rotate(x, −θ) (sign −1, the backward: dx from dy).
 * θ = f32(pos · invFreq[d]) as on the GPU; cos and sin in f64, results rounded to f32.
 */
export function ropeRef(out: Float32Array, x: Float32Array, positions: Int32Array, dims: RopeDims, base = 10000, sign: 1 | -1 = 1): void {
  const { B, T, H, D } = dims;
  const half = D / 2;
  const invFreq = ropeInvFreq(D, base);
  for (let bt = 0; bt < B * T; bt++) {
    for (let h = 0; h < H; h++) {
      const o = (bt * H + h) * D;
      for (let d = 0; d < half; d++) {
        const theta = Math.fround(positions[bt] * invFreq[d]);
        const c = Math.cos(theta);
        const s = sign * Math.sin(theta);
        const x1 = x[o + d];
        const x2 = x[o + d + half];
        out[o + d] = x1 * c - x2 * s;
        out[o + d + half] = x2 * c + x1 * s;
      }
    }
  }
}
