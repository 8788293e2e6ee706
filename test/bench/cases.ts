/**
 * The kernel benchmarks: their shapes, their work (FLOP counts) and their inputs.
 *
 * Pure data and plain loops (no GPU, no Deno), shared by our implementation and the peers so that
 * every implementation gets the same inputs and computes the same outputs. Layouts follow ours:
 * attention tensors are [B, T, H, D] (what a fused QKV projection produces), linear weights are
 * [out, in] (PyTorch's nn.Linear), LoRA A is [R, Cin] and B is [Cout, R].
 *
 * Legend: M, K, N matmul dims (C[M,N] = A[M,K]·B[K,N]); N rows (tokens); Cin/Cout channels in and
 * out; R LoRA rank; B batch; T time; H heads; D head dim; V vocabulary.
 */
import { Rng } from '../../src/util/rng.ts';

export type BenchName = 'matmul' | 'lora_linear_fwd_bwd' | 'attention_fwd_bwd' | 'policy_loss_fwd_bwd';
export const BENCH_NAMES: readonly BenchName[] = ['matmul', 'lora_linear_fwd_bwd', 'attention_fwd_bwd', 'policy_loss_fwd_bwd'];

export interface MatmulDims { M: number; K: number; N: number }
export interface LoraDims { N: number; Cin: number; Cout: number; R: number; alpha: number }
export interface AttentionDims { B: number; T: number; H: number; D: number }
/** PPO clipped surrogate with clip range [1 − eps, 1 + eps], token mean over all N rows. */
export interface PolicyDims { N: number; V: number; eps: number }

export type BenchCase =
  | { name: 'matmul'; dims: MatmulDims }
  | { name: 'lora_linear_fwd_bwd'; dims: LoraDims }
  | { name: 'attention_fwd_bwd'; dims: AttentionDims }
  | { name: 'policy_loss_fwd_bwd'; dims: PolicyDims };

/** A case to time: which model size it stands for, and whether `--quick` runs it. */
export type TimedCase = BenchCase & { model: string; quick: boolean };

/** Host inputs of a case, by name; int32 arrays hold token ids. */
export type Inputs = Record<string, Float32Array | Int32Array>;
/** Host outputs of a case, by name (all f32). */
export type Outputs = Record<string, Float32Array>;

/** The outputs every implementation returns for a case, in this order. */
export const OUTPUT_NAMES: Readonly<Record<BenchName, readonly string[]>> = {
  matmul: ['c'],
  lora_linear_fwd_bwd: ['y', 'dx', 'dA', 'dB'],
  attention_fwd_bwd: ['out', 'dq', 'dk', 'dv'],
  policy_loss_fwd_bwd: ['loss', 'dlogits'],
};

/** Shapes timed. ~10M model: C=256, H=4, T=256, V=4096; ~125M model: C=768, H=12, T=1024, V=32768. */
export const TIMED_CASES: readonly TimedCase[] = [
  { name: 'matmul', model: '10M', quick: true, dims: { M: 256, K: 256, N: 1024 } },
  { name: 'matmul', model: '10M', quick: false, dims: { M: 1024, K: 256, N: 1024 } },
  { name: 'matmul', model: '125M', quick: false, dims: { M: 1024, K: 768, N: 3072 } },
  { name: 'lora_linear_fwd_bwd', model: '10M', quick: true, dims: { N: 256, Cin: 256, Cout: 1024, R: 16, alpha: 32 } },
  { name: 'lora_linear_fwd_bwd', model: '10M', quick: false, dims: { N: 1024, Cin: 256, Cout: 1024, R: 16, alpha: 32 } },
  { name: 'lora_linear_fwd_bwd', model: '125M', quick: false, dims: { N: 1024, Cin: 768, Cout: 3072, R: 16, alpha: 32 } },
  { name: 'attention_fwd_bwd', model: '10M', quick: true, dims: { B: 4, T: 256, H: 4, D: 64 } },
  // Same B, H, D at two T: the peak-bytes column shows how memory grows with T.
  { name: 'attention_fwd_bwd', model: '125M', quick: false, dims: { B: 1, T: 512, H: 12, D: 64 } },
  { name: 'attention_fwd_bwd', model: '125M', quick: false, dims: { B: 1, T: 1024, H: 12, D: 64 } },
  { name: 'policy_loss_fwd_bwd', model: '10M', quick: true, dims: { N: 1024, V: 4096, eps: 0.2 } },
  // N = 512 keeps the [N, V] logits (64 MiB) and every peer's [N, V] temporaries well inside the
  // 128 MiB binding limit of the software adapters and this machine's memory.
  { name: 'policy_loss_fwd_bwd', model: '125M', quick: false, dims: { N: 512, V: 32768, eps: 0.2 } },
];

/** Small shapes, none a multiple of a tile, on which every implementation is checked first. */
export const CHECK_CASES: readonly BenchCase[] = [
  { name: 'matmul', dims: { M: 67, K: 93, N: 75 } },
  { name: 'lora_linear_fwd_bwd', dims: { N: 33, Cin: 72, Cout: 50, R: 16, alpha: 32 } },
  { name: 'attention_fwd_bwd', dims: { B: 2, T: 37, H: 3, D: 32 } },
  { name: 'policy_loss_fwd_bwd', dims: { N: 37, V: 301, eps: 0.2 } },
];

export function shapeString(c: BenchCase): string {
  switch (c.name) {
    case 'matmul': {
      const { M, K, N } = c.dims;
      return `[${M},${K}]x[${K},${N}]`;
    }
    case 'lora_linear_fwd_bwd': {
      const { N, Cin, Cout, R } = c.dims;
      return `N=${N} Cin=${Cin} Cout=${Cout} R=${R}`;
    }
    case 'attention_fwd_bwd': {
      const { B, T, H, D } = c.dims;
      return `B=${B} T=${T} H=${H} D=${D}`;
    }
    case 'policy_loss_fwd_bwd': {
      const { N, V } = c.dims;
      return `N=${N} V=${V}`;
    }
  }
}

/**
 * Floating-point operations of one iteration, the numerator of every GFLOP/s column.
 * - matmul: 2·M·N·K.
 * - LoRA forward + backward, W frozen (no dW): the base product forward and dx = dy·W (4·N·Cin·Cout)
 *   plus three rank-R products on each side (6·N·R·(Cin + Cout)).
 * - attention: six T×T×D products (forward S = QKᵀ and O = PV; backward dV, dP, dQ, dK) at
 *   2·B·H·T²·D each, halved for the causal mask: 6·B·H·T²·D. A flash backward that recomputes S
 *   does more work than this; the count is of useful work, the same for every implementation.
 * - policy loss: nominal 8·N·V (log-softmax forward: max, subtract, exp, add; gradient: exp,
 *   scale, subtract, plus the one-hot term). It is bandwidth-bound, so read it as a rate, not a peak.
 */
export function flops(c: BenchCase): number {
  switch (c.name) {
    case 'matmul':
      return 2 * c.dims.M * c.dims.N * c.dims.K;
    case 'lora_linear_fwd_bwd': {
      const { N, Cin, Cout, R } = c.dims;
      return 4 * N * Cin * Cout + 6 * N * R * (Cin + Cout);
    }
    case 'attention_fwd_bwd': {
      const { B, T, H, D } = c.dims;
      return 6 * B * H * T * T * D;
    }
    case 'policy_loss_fwd_bwd':
      return 8 * c.dims.N * c.dims.V;
  }
}

/** Deterministic inputs of a case (Philox, seeded by the case), the same for every implementation. */
export function makeInputs(c: BenchCase, seed = 1234): Inputs {
  const rng = new Rng(seed, 0);
  switch (c.name) {
    case 'matmul': {
      const { M, K, N } = c.dims;
      return { a: rng.normalArray(M * K), b: rng.normalArray(K * N) };
    }
    case 'lora_linear_fwd_bwd': {
      const { N, Cin, Cout, R } = c.dims;
      const w = 1 / Math.sqrt(Cin);
      return {
        x: rng.normalArray(N * Cin),
        w: rng.normalArray(Cout * Cin, w), // W [Cout, Cin], frozen
        a: rng.normalArray(R * Cin, w), // A [R, Cin]
        b: rng.normalArray(Cout * R, 0.1), // B [Cout, R] (non-zero so every gradient is exercised)
        dy: rng.normalArray(N * Cout),
      };
    }
    case 'attention_fwd_bwd': {
      const { B, T, H, D } = c.dims;
      const n = B * T * H * D;
      return { q: rng.normalArray(n), k: rng.normalArray(n), v: rng.normalArray(n), dout: rng.normalArray(n) };
    }
    case 'policy_loss_fwd_bwd': {
      const { N, V } = c.dims;
      const logits = rng.normalArray(N * V, 2);
      const targets = new Int32Array(N);
      for (let i = 0; i < N; i++) targets[i] = rng.nextInt(V);
      // Old log-probs near the current ones, so ratios straddle the clip range and both branches run.
      const logp = targetLogprobs(logits, targets, N, V);
      const oldLogprobs = new Float32Array(N);
      const advantages = rng.normalArray(N);
      for (let i = 0; i < N; i++) oldLogprobs[i] = logp[i] + 0.3 * rng.normal();
      return { logits, targets, oldLogprobs, advantages };
    }
  }
}

/** log softmax(logits[i, :])[targets[i]] per row, in f64. */
export function targetLogprobs(logits: Float32Array, targets: Int32Array, N: number, V: number): Float64Array {
  const out = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, logits[i * V + j]);
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(logits[i * V + j] - m);
    out[i] = logits[i * V + targets[i]] - m - Math.log(s);
  }
  return out;
}

/** Upper-triangle additive mask [T, T]: 0 where key j ≤ query t, −1e9 above (peers add it to scores). */
export function causalBias(T: number): Float32Array {
  const m = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let j = t + 1; j < T; j++) m[t * T + j] = -1e9;
  return m;
}
