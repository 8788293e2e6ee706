/**
 * CPU reference of a split matmul (src/ops/matmul_split.ts): the sub-products of a plan run one
 * after another as matmul.ref.ts runs one product — each output's sum over the sub-product's k
 * range in f64, rounded to f32 — the first sub-product over an output writes it, later ones (the
 * next ranges of K) add their rounded partial sums to it in f32, as the kernel's accumulate flag
 * does. For a plan that splits only M and N this is matmulRef exactly; K ranges give the kernel's
 * order of rounding, so tests can tell a split's sum order from an error in its windows.
 *
 * Layouts as matmulRef with batch 1: a [M, K] ([K, M] with transA), b [K, N] ([N, K] with
 * transB), c [M, N]; sub-products address them by their global m0, n0, k0 (the bound windows
 * are the GPU's business).
 */
import type { SubRange } from './matmul_split.ts';

export function matmulSplitRef(c: Float32Array, a: Float32Array, b: Float32Array, d: { M: number; N: number; K: number; transA?: boolean; transB?: boolean },
  parts: readonly SubRange[]): void {
  const { M, N, K } = d;
  const written = new Uint8Array(M * N);
  for (const p of parts) {
    for (let m = p.m0; m < p.m0 + p.M; m++) {
      for (let n = p.n0; n < p.n0 + p.N; n++) {
        let s = 0;
        for (let k = p.k0; k < p.k0 + p.K; k++) {
          s += (d.transA ? a[k * M + m] : a[m * K + k]) * (d.transB ? b[n * K + k] : b[k * N + n]);
        }
        const o = m * N + n;
        c[o] = written[o] ? Math.fround(c[o] + Math.fround(s)) : Math.fround(s);
        written[o] = 1;
      }
    }
  }
}
