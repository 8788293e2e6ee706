// swiglu.wgsl — SwiGLU gate of a Llama-style MLP, forward and backward, elementwise.
//
// Legend: N rows, F hidden features; gate and up are TWO tensors [N, F] (the outputs of the
// separate gate and up projections, each with its own LoRA adapter), not one fused [N, 2F].
//   gate [N·F], up [N·F], out [N·F], dout [N·F], dgate [N·F], dup [N·F]
// forward:   out = silu(g)·u,  silu(g) = g·σ(g)
// backward:  dup = dout·silu(g);  dgate = dout·u·σ(g)·(1 + g·(1 − σ(g)))           (both write =)
//
// σ(g) = 1 / (1 + exp(−g)) is safe at both ends in f32: exp(−g) → inf gives σ → 0, → 0 gives 1.
// The grid may be two-dimensional; the linear index is rebuilt with `row_threads`.

override WG: u32 = 256;

struct Params {
  n: u32,           // N·F elements
  row_threads: u32, // workgroups along x · WG
}

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(5) var<storage, read_write> dup: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

fn sigmoid(g: f32) -> f32 {
  return 1.0 / (1.0 + exp(-g));
}

@compute @workgroup_size(WG)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let g = gate[i];
  out[i] = g * sigmoid(g) * up[i];
}

@compute @workgroup_size(WG)
fn backward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let g = gate[i];
  let s = sigmoid(g);
  let d = dout[i];
  dup[i] = d * g * s;
  dgate[i] = d * up[i] * s * (1.0 + g * (1.0 - s));
}
