// swiglu.wgsl — the gate of a gated MLP, forward and backward, elementwise: SwiGLU (Llama, Qwen;
// ACT = 0) or GeGLU with GELU's tanh approximation (Gemma 3's gelu_pytorch_tanh; ACT = 1).
//
// Legend: N rows, F hidden features; gate and up are TWO tensors [N, F] (the outputs of the
// separate gate and up projections, each with its own LoRA adapter), not one fused [N, 2F].
//   gate [N·F], up [N·F], out [N·F], dout [N·F], dgate [N·F], dup [N·F]
// forward:   out = act(g)·u,   ACT 0: act(g) = silu(g) = g·σ(g)
//                               ACT 1: act(g) = gelu(g) = 0.5·g·(1 + tanh(√(2/π)·(g + 0.044715·g³)))
// backward:  dup = dout·act(g);  dgate = dout·u·act'(g)                            (both write =)
//            silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
//            gelu'(g) = 0.5·(1 + tanh v) + 0.5·g·(1 − tanh² v)·√(2/π)·(1 + 3·0.044715·g²)
// (GELU as gelu.wgsl computes it, argument of tanh clamped to ±10.)
//
// σ(g) = 1 / (1 + exp(−g)) is safe at both ends in f32: exp(−g) → inf gives σ → 0, → 0 gives 1.
// The grid may be two-dimensional; the linear index is rebuilt with `row_threads`.

override WG: u32 = 256;
override ACT: u32 = 0u; // 0 silu (SwiGLU), 1 gelu tanh (GeGLU)

const S: f32 = 0.7978845608028654; // √(2/π)
const K: f32 = 0.044715;

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

fn act(g: f32) -> f32 {
  if (ACT == 1u) {
    return 0.5 * g * (1.0 + tanh(clamp(S * (g + K * g * g * g), -10.0, 10.0)));
  }
  return g * sigmoid(g);
}

fn act_grad(g: f32) -> f32 {
  if (ACT == 1u) {
    let t = tanh(clamp(S * (g + K * g * g * g), -10.0, 10.0));
    return 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * S * (1.0 + 3.0 * K * g * g);
  }
  let s = sigmoid(g);
  return s * (1.0 + g * (1.0 - s));
}

@compute @workgroup_size(WG)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  out[i] = act(gate[i]) * up[i];
}

@compute @workgroup_size(WG)
fn backward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let g = gate[i];
  let d = dout[i];
  dup[i] = d * act(g);
  dgate[i] = d * up[i] * act_grad(g);
}
