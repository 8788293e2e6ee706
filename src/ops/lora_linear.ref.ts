/**
 * CPU reference of the LoRA linear layer (src/ops/lora_linear.ts): plain loops, sums in f64,
 * results rounded to f32. W is given as f32 values (for an f16 W, its f16-rounded values).
 *
 *   forward:  u = x·Aᵀ, y = x·Wᵀ (+ b) + s·u·Bᵀ, s = α/R
 *   backward: v = dy·B, dx = dy·W + s·v·A, dA = s·vᵀ·x, dB = s·dyᵀ·u, dW = dyᵀ·x, db = Σ_rows dy
 * Shapes: x [N, In], W [Out, In], b [Out], A [R, In], B [Out, R], u [N, R], y and dy [N, Out].
 */

export interface LoraRefDims {
  N: number;
  In: number;
  Out: number;
  R: number;
}

export function loraLinearForwardRef(y: Float32Array, u: Float32Array, x: Float32Array, w: Float32Array, a: Float32Array,
  b: Float32Array, bias: Float32Array | null, d: LoraRefDims, alpha: number): void {
  const { N, In, Out, R } = d;
  const s = alpha / R;
  for (let n = 0; n < N; n++) {
    for (let r = 0; r < R; r++) {
      let t = 0;
      for (let i = 0; i < In; i++) t += x[n * In + i] * a[r * In + i];
      u[n * R + r] = Math.fround(t);
    }
    for (let o = 0; o < Out; o++) {
      let t = 0;
      for (let i = 0; i < In; i++) t += x[n * In + i] * w[o * In + i];
      let lr = 0;
      for (let r = 0; r < R; r++) lr += u[n * R + r] * b[o * R + r];
      y[n * Out + o] = Math.fround(t + (bias ? bias[o] : 0) + s * lr);
    }
  }
}

export interface LoraRefGrads {
  dx: Float32Array;
  dA: Float32Array;
  dB: Float32Array;
  dW: Float32Array;
  db: Float32Array;
}

/** Writes (=) every gradient. */
export function loraLinearBackwardRef(g: LoraRefGrads, dy: Float32Array, x: Float32Array, u: Float32Array, w: Float32Array,
  a: Float32Array, b: Float32Array, d: LoraRefDims, alpha: number): void {
  const { N, In, Out, R } = d;
  const s = alpha / R;
  const v = new Float32Array(N * R);
  for (let n = 0; n < N; n++) {
    for (let r = 0; r < R; r++) {
      let t = 0;
      for (let o = 0; o < Out; o++) t += dy[n * Out + o] * b[o * R + r];
      v[n * R + r] = Math.fround(t);
    }
    for (let i = 0; i < In; i++) {
      let t = 0;
      for (let o = 0; o < Out; o++) t += dy[n * Out + o] * w[o * In + i];
      let lr = 0;
      for (let r = 0; r < R; r++) lr += v[n * R + r] * a[r * In + i];
      g.dx[n * In + i] = Math.fround(t + s * lr);
    }
  }
  for (let r = 0; r < R; r++) {
    for (let i = 0; i < In; i++) {
      let t = 0;
      for (let n = 0; n < N; n++) t += v[n * R + r] * x[n * In + i];
      g.dA[r * In + i] = Math.fround(s * t);
    }
  }
  for (let o = 0; o < Out; o++) {
    for (let r = 0; r < R; r++) {
      let t = 0;
      for (let n = 0; n < N; n++) t += dy[n * Out + o] * u[n * R + r];
      g.dB[o * R + r] = Math.fround(s * t);
    }
    for (let i = 0; i < In; i++) {
      let t = 0;
      for (let n = 0; n < N; n++) t += dy[n * Out + o] * x[n * In + i];
      g.dW[o * In + i] = Math.fround(t);
    }
    let t = 0;
    for (let n = 0; n < N; n++) t += dy[n * Out + o];
    g.db[o] = Math.fround(t);
  }
}
