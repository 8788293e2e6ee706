/** CPU reference of kernels/swiglu.wgsl, plain loops in f64, f32 results. act: 'silu' (SwiGLU) or 'gelu' (GeGLU, tanh). */
import { geluTanh } from './gelu.ref.ts';
import type { GateActivation } from './swiglu.ts';

function sigmoid(g: number): number {
  return 1 / (1 + Math.exp(-g));
}

function act(g: number, a: GateActivation): number {
  return a === 'gelu' ? geluTanh(g) : g * sigmoid(g);
}

/** d act(g) / dg. */
function actGrad(g: number, a: GateActivation): number {
  if (a === 'gelu') {
    const S = Math.sqrt(2 / Math.PI), K = 0.044715;
    const t = Math.tanh(S * (g + K * g * g * g));
    return 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * S * (1 + 3 * K * g * g);
  }
  const s = sigmoid(g);
  return s * (1 + g * (1 - s));
}

/** out = act(gate)·up. */
export function swigluForwardRef(out: Float32Array, gate: Float32Array, up: Float32Array, a: GateActivation = 'silu'): void {
  for (let i = 0; i < gate.length; i++) out[i] = act(gate[i], a) * up[i];
}

/** dgate = dout·up·act'(g), dup = dout·act(g). */
export function swigluBackwardRef(dgate: Float32Array, dup: Float32Array, dout: Float32Array, gate: Float32Array, up: Float32Array, a: GateActivation = 'silu'): void {
  for (let i = 0; i < gate.length; i++) {
    dup[i] = dout[i] * act(gate[i], a);
    dgate[i] = dout[i] * up[i] * actGrad(gate[i], a);
  }
}
