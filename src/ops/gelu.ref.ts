/** CPU reference of kernels/gelu.wgsl (tanh GELU), plain loops in f64, f32 results. */
const S = Math.sqrt(2 / Math.PI);
const K = 0.044715;

/** 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))), in f64. */
export function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(S * (x + K * x * x * x)));
}

/** out = geluTanh(inp), elementwise. */
export function geluForwardRef(out: Float32Array, inp: Float32Array): void {
  for (let i = 0; i < inp.length; i++) out[i] = geluTanh(inp[i]);
}

/** dinp = dout·gelu'(x). */
export function geluBackwardRef(dinp: Float32Array, inp: Float32Array, dout: Float32Array): void {
  for (let i = 0; i < inp.length; i++) {
    const x = inp[i];
    const t = Math.tanh(S * (x + K * x * x * x));
    dinp[i] = dout[i] * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * S * (1 + 3 * K * x * x));
  }
}
