// gelu.wgsl — GELU, tanh approximation (GPT-2), forward and backward, elementwise.
//
// Legend: n elements of any shape (e.g. N rows × 4C of an MLP).
//   inp [n], out [n], dout [n], dinp [n]
// forward:   out = 0.5·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
// backward:  dinp = dout·(0.5·(1 + tanh u) + 0.5·x·(1 − tanh² u)·√(2/π)·(1 + 3·0.044715·x²))   (writes =)
//
// Departure: u is clamped to ±10 before tanh. tanh(10) rounds to 1 in f32, so the result is
// unchanged, but some tanh implementations return NaN for large arguments (exp overflow).
// The grid may be two-dimensional past maxComputeWorkgroupsPerDimension; the linear index is
// rebuilt from gid.y with `row_threads` = threads in one grid row.

override WG: u32 = 256;

const S: f32 = 0.7978845608028654; // √(2/π)
const K: f32 = 0.044715;

struct Params {
  n: u32,           // number of elements
  row_threads: u32, // workgroups along x · WG
}

@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> dinp: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

fn tanh_u(x: f32) -> f32 {
  return tanh(clamp(S * (x + K * x * x * x), -10.0, 10.0));
}

@compute @workgroup_size(WG)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let x = inp[i];
  out[i] = 0.5 * x * (1.0 + tanh_u(x));
}

@compute @workgroup_size(WG)
fn backward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let x = inp[i];
  let t = tanh_u(x);
  let du = S * (1.0 + 3.0 * K * x * x);
  dinp[i] = dout[i] * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
}
