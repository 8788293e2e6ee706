/** CPU reference of kernels/swiglu.wgsl, plain loops in f64, f32 results. */

function sigmoid(g: number): number {
  return 1 / (1 + Math.exp(-g));
}

/** out = silu(gate)·up. */
export function swigluForwardRef(out: Float32Array, gate: Float32Array, up: Float32Array): void {
  for (let i = 0; i < gate.length; i++) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

/** dgate = dout·up·σ(g)(1 + g(1 − σ(g))), dup = dout·silu(g). */
export function swigluBackwardRef(dgate: Float32Array, dup: Float32Array, dout: Float32Array, gate: Float32Array, up: Float32Array): void {
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i];
    const s = sigmoid(g);
    dup[i] = dout[i] * g * s;
    dgate[i] = dout[i] * up[i] * s * (1 + g * (1 - s));
  }
}
