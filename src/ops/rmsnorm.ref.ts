/**
 * CPU reference of kernels/rmsnorm.wgsl: plain loops, f64 accumulation, f32 results.
 * N rows of C channels, flat row-major arrays.
 */

/** out = inp·rstd·(weight + offset) with rstd = 1/sqrt(mean(inp²) + eps); writes out and rstd [N]. */
export function rmsnormForwardRef(
  out: Float32Array, rstd: Float32Array, inp: Float32Array, weight: Float32Array, n: number, c: number, eps = 1e-6, offset = 0,
): void {
  for (let r = 0; r < n; r++) {
    const o = r * c;
    let s = 0;
    for (let i = 0; i < c; i++) s += inp[o + i] * inp[o + i];
    const rs = 1 / Math.sqrt(s / c + eps);
    for (let i = 0; i < c; i++) out[o + i] = inp[o + i] * rs * (weight[i] + offset);
    rstd[r] = rs;
  }
}

/** dinp = rstd·(dout·w' − norm·mean(dout·w'·norm)), w' = w + offset; dweight = (or += when `accumulate`) Σ dout·norm. */
export function rmsnormBackwardRef(
  dinp: Float32Array, dweight: Float32Array, dout: Float32Array, inp: Float32Array, weight: Float32Array,
  rstd: Float32Array, n: number, c: number, accumulate = false, offset = 0,
): void {
  const dw = new Float64Array(c);
  for (let r = 0; r < n; r++) {
    const o = r * c;
    let m = 0;
    for (let i = 0; i < c; i++) m += (weight[i] + offset) * dout[o + i] * inp[o + i] * rstd[r];
    m /= c;
    for (let i = 0; i < c; i++) {
      const norm = inp[o + i] * rstd[r];
      dinp[o + i] = ((weight[i] + offset) * dout[o + i] - norm * m) * rstd[r];
      dw[i] += dout[o + i] * norm;
    }
  }
  for (let i = 0; i < c; i++) dweight[i] = (accumulate ? dweight[i] : 0) + dw[i];
}
