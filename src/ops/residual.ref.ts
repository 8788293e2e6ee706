/** CPU reference of kernels/residual.wgsl, in f32 (s·b rounded, then the add rounded). */

/** out = a + s·b. */
export function residualAddRef(out: Float32Array, a: Float32Array, b: Float32Array, s = 1): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.fround(a[i] + Math.fround(Math.fround(s) * b[i]));
}

/** acc += s·b. */
export function residualAddInPlaceRef(acc: Float32Array, b: Float32Array, s = 1): void {
  for (let i = 0; i < acc.length; i++) acc[i] = Math.fround(acc[i] + Math.fround(Math.fround(s) * b[i]));
}

/** x *= s. */
export function scaleInPlaceRef(x: Float32Array, s: number): void {
  for (let i = 0; i < x.length; i++) x[i] = Math.fround(x[i] * Math.fround(s));
}
