/**
 * CPU reference of kernels/layernorm.wgsl: plain loops, f64 accumulation, f32 results.
 * Same argument order as the GPU wrappers; N rows of C channels, flat row-major arrays.
 */

/** out = (inp − mean)·rstd·weight + bias; writes out, mean [N], rstd [N]. */
export function layernormForwardRef(
  out: Float32Array, mean: Float32Array, rstd: Float32Array, inp: Float32Array, weight: Float32Array, bias: Float32Array,
  n: number, c: number, eps = 1e-5,
): void {
  for (let r = 0; r < n; r++) {
    const o = r * c;
    let s = 0;
    for (let i = 0; i < c; i++) s += inp[o + i];
    const mu = s / c;
    let v = 0;
    for (let i = 0; i < c; i++) v += (inp[o + i] - mu) ** 2;
    const rs = 1 / Math.sqrt(v / c + eps);
    for (let i = 0; i < c; i++) out[o + i] = (inp[o + i] - mu) * rs * weight[i] + bias[i];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

/** dinp = …; dweight, dbias = (or += when `accumulate`) the column sums. */
export function layernormBackwardRef(
  dinp: Float32Array, dweight: Float32Array, dbias: Float32Array, dout: Float32Array, inp: Float32Array,
  weight: Float32Array, mean: Float32Array, rstd: Float32Array, n: number, c: number, accumulate = false,
): void {
  const dw = new Float64Array(c);
  const db = new Float64Array(c);
  for (let r = 0; r < n; r++) {
    const o = r * c;
    let a = 0;
    let b = 0;
    for (let i = 0; i < c; i++) {
      const norm = (inp[o + i] - mean[r]) * rstd[r];
      const dn = weight[i] * dout[o + i];
      a += dn;
      b += dn * norm;
    }
    a /= c;
    b /= c;
    for (let i = 0; i < c; i++) {
      const norm = (inp[o + i] - mean[r]) * rstd[r];
      dinp[o + i] = (weight[i] * dout[o + i] - a - norm * b) * rstd[r];
      dw[i] += dout[o + i] * norm;
      db[i] += dout[o + i];
    }
  }
  for (let i = 0; i < c; i++) {
    dweight[i] = (accumulate ? dweight[i] : 0) + dw[i];
    dbias[i] = (accumulate ? dbias[i] : 0) + db[i];
  }
}
