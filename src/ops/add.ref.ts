/** CPU reference of kernels/add.wgsl: out[i] = a[i] + b[i], in f32 (Math.fround per element). */
export function addRef(out: Float32Array, a: Float32Array, b: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.fround(a[i] + b[i]);
}
