/** CPU reference of kernels/softmax.wgsl: row softmax over the last dimension (f64 loops, f32 out). */

export function softmaxForwardRef(y: Float32Array, x: Float32Array, c: number): void {
  for (let base = 0; base < x.length; base += c) {
    let m = -Infinity;
    for (let j = 0; j < c; j++) m = Math.max(m, x[base + j]);
    let s = 0;
    for (let j = 0; j < c; j++) s += Math.exp(x[base + j] - m);
    for (let j = 0; j < c; j++) y[base + j] = Math.exp(x[base + j] - m) / s;
  }
}

export function softmaxBackwardRef(dx: Float32Array, dy: Float32Array, y: Float32Array, c: number): void {
  for (let base = 0; base < y.length; base += c) {
    let dot = 0;
    for (let j = 0; j < c; j++) dot += dy[base + j] * y[base + j];
    for (let j = 0; j < c; j++) dx[base + j] = y[base + j] * (dy[base + j] - dot);
  }
}
