/** CPU references of kernels/reduce.wgsl: plain sums in f64, stored as f32. */

export function sumRowsRef(out: Float32Array, x: Float32Array, c: number): void {
  for (let r = 0; r < out.length; r++) {
    let s = 0;
    for (let j = 0; j < c; j++) s += x[r * c + j];
    out[r] = s;
  }
}

export function sumAllRef(x: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i];
  return Math.fround(s);
}

export function globalL2NormRef(tensors: readonly Float32Array[]): number {
  let s = 0;
  for (const t of tensors) for (let i = 0; i < t.length; i++) s += t[i] * t[i];
  return Math.fround(Math.sqrt(s));
}
