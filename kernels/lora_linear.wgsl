// lora_linear.wgsl — the one LoRA-linear step that is not a matrix product: the bias gradient.
//
//   out[o] (=, or += when ACCUMULATE) = Σ_n dy[n, o]      dy [N, Out] (N rows), out [Out]
//
// The products of the LoRA linear layer (forward y = x·Wᵀ + b + (α/R)·(x·Aᵀ)·Bᵀ, and dx, dA, dB,
// dW) run on kernels/matmul.wgsl, whose epilogue fuses the low-rank term into the base product
// (see src/ops/lora_linear.ts). Here one invocation owns one column and adds the rows in order
// 0, 1, ..., N-1 in f32: no atomics, no tree, bitwise-identical results run to run. Columns are
// spread over the grid's x and y so that Out may exceed 65535 · WG.

override WG: u32 = 64u;
override ACCUMULATE: bool = false;

struct Params {
  rows: u32,         // N
  cols: u32,         // Out
  row_threads: u32,  // threads in one grid row (workgroups along x · WG)
}

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn column_sum(@builtin(global_invocation_id) gid: vec3u) {
  let o = gid.x + gid.y * p.row_threads;
  if (o >= p.cols) {
    return;
  }
  var s = 0.0;
  for (var n = 0u; n < p.rows; n++) {
    s = s + dy[n * p.cols + o];
  }
  if (ACCUMULATE) {
    s = out[o] + s;
  }
  out[o] = s;
}
