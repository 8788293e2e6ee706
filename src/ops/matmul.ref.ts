/**
 * CPU reference of kernels/matmul.wgsl: plain loops, each output's sum over k in f64, rounded to
 * f32 once (a more exact twin than the GPU's f32 sum, so tests measure the GPU's error).
 *
 * c[b] (=, or += with accumulate) = alpha·(op(a[b])·op(b[b]) + scale·u·op(v)) + bias. Layouts as in
 * src/ops/matmul.ts: a stored [aBatch, M, K] ([aBatch, K, M] with transA), b [bBatch, K, N]
 * ([bBatch, N, K] with transB), c [batch, M, N]; an operand batch of 1 is broadcast. With
 * `activation: 'gelu'` the result then goes through GELU (tanh approximation).
 */
import { geluTanh } from './gelu.ref.ts';

export interface MatmulRefDims {
  batch: number;
  M: number;
  N: number;
  K: number;
  aBatch?: number;
  bBatch?: number;
  transA?: boolean;
  transB?: boolean;
}

export interface MatmulRefOptions {
  alpha?: number;
  bias?: Float32Array;
  accumulate?: boolean;
  /** u [M, R], v [R, N] (or [N, R] with transV); batch 1 only. */
  lowRank?: { u: Float32Array; v: Float32Array; R: number; transV?: boolean; scale: number };
  /** Applied last, after bias and accumulate (the kernel's ACT = 1). */
  activation?: 'gelu';
}

export function matmulRef(c: Float32Array, a: Float32Array, b: Float32Array, d: MatmulRefDims, opts: MatmulRefOptions = {}): void {
  const { batch, M, N, K } = d;
  const aStride = (d.aBatch ?? batch) === 1 ? 0 : M * K;
  const bStride = (d.bBatch ?? batch) === 1 ? 0 : K * N;
  const alpha = opts.alpha ?? 1;
  const lr = opts.lowRank;
  for (let z = 0; z < batch; z++) {
    const ao = z * aStride;
    const bo = z * bStride;
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) {
          const av = d.transA ? a[ao + k * M + m] : a[ao + m * K + k];
          const bv = d.transB ? b[bo + n * K + k] : b[bo + k * N + n];
          s += av * bv;
        }
        if (lr) {
          let t = 0;
          for (let r = 0; r < lr.R; r++) t += lr.u[m * lr.R + r] * (lr.transV ? lr.v[n * lr.R + r] : lr.v[r * N + n]);
          s += lr.scale * t;
        }
        let v = alpha * s;
        if (opts.bias) v += opts.bias[n];
        const o = z * M * N + m * N + n;
        const y = opts.accumulate ? c[o] + v : v;
        c[o] = Math.fround(opts.activation === 'gelu' ? geluTanh(y) : y);
      }
    }
  }
}
