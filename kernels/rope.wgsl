// rope.wgsl — rotary position embedding (RoPE), forward and backward, half-split convention.
//
// For each token (b, t), head h and pair index d < D/2 (Llama / Qwen2 `rotate_half`: the pair is
// (d, d + D/2), not adjacent elements):
//   θ = pos[b,t] · inv_freq[d],   inv_freq[d] = base^(−2d/D)   (from the host, f32, as HF computes it)
//   y[d]       = x[d] cos θ − x[d + D/2] sin θ
//   y[d + D/2] = x[d + D/2] cos θ + x[d] sin θ
// The backward pass is the rotation by −θ (the transpose): the same kernel with sign = −1.
// Shapes: x, y [B, T, H, D] (q or k layout); positions i32 [B, T] (restart per packed sequence).
// Legend: B batch, T time, H heads, D head dim (even, ≤ 256).
//
// Departures: cos and sin are computed in the kernel (Cody–Waite reduction to [−π/4, π/4], minimax
// polynomials), not by the WGSL builtins, whose accuracy is loose and varies by adapter — so
// every adapter gets f32 accuracy, also at large positions (|θ| up to ~1e5). `main` writes a separate output; `main_inplace` rotates x in place.
// Grid: grid1d over B·T·H·D/2 pairs.

override WG: u32 = 64u;

struct Params {
  n_pairs: u32,       // B · T · H · D/2
  row_threads: u32,   // threads per grid row (grid1d)
  H: u32,
  half: u32,          // D / 2
  sign: f32,          // +1 forward, −1 backward
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
  inv_freq: array<vec4f, 32>,   // [D/2] (≤ 128), packed four per vec4
}

@group(0) @binding(0) var<storage, read> x: array<f32>;            // [B, T, H, D]
@group(0) @binding(1) var<storage, read> positions: array<i32>;    // [B, T]
@group(0) @binding(2) var<storage, read_write> y: array<f32>;      // [B, T, H, D]; in place: x itself
@group(0) @binding(3) var<uniform> p: Params;

// Cody–Waite split of π/2 (Cephes): k·PIO2_A is exact for k < 2^16, i.e. |θ| < ~1e5.
const TWO_OVER_PI: f32 = 0.6366197723675814;
const PIO2_A: f32 = 1.5703125;
const PIO2_B: f32 = 4.837512969970703125e-4;
const PIO2_C: f32 = 7.54978995489188216e-8;

// (cos θ, sin θ) to ~1 ulp: reduce θ to y in [−π/4, π/4] and a quadrant, then the Cephes
// minimax polynomials. WGSL's builtin sin / cos are only specified to 2^-11 absolute on [−π, π]
// (SwiftShader's are ~1e-4 off), so the kernel does not rely on them.
fn cos_sin(theta: f32) -> vec2f {
  let kf = round(theta * TWO_OVER_PI);
  let y = ((theta - kf * PIO2_A) - kf * PIO2_B) - kf * PIO2_C;
  let z = y * y;
  let s = y + y * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  switch (u32(i32(kf) & 3)) {
    case 0u: { return vec2f(c, s); }
    case 1u: { return vec2f(-s, c); }
    case 2u: { return vec2f(-c, -s); }
    default: { return vec2f(s, -c); }
  }
}

// (cos θ, sign · sin θ) for pair `pair`.
fn rotation(pair: u32) -> vec2f {
  let d = pair % p.half;
  let bt = pair / (p.half * p.H);
  let cs = cos_sin(f32(positions[bt]) * p.inv_freq[d / 4u][d % 4u]);
  return vec2f(cs.x, cs.y * p.sign);
}

// Offset of element d of pair `pair` (the second element is at + half).
fn first_elem(pair: u32) -> u32 {
  return (pair / p.half) * (2u * p.half) + pair % p.half;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let pair = gid.x + gid.y * p.row_threads;
  if (pair >= p.n_pairs) {
    return;
  }
  let cs = rotation(pair);
  let i = first_elem(pair);
  let x1 = x[i];
  let x2 = x[i + p.half];
  y[i] = x1 * cs.x - x2 * cs.y;
  y[i + p.half] = x2 * cs.x + x1 * cs.y;
}

@compute @workgroup_size(WG)
fn main_inplace(@builtin(global_invocation_id) gid: vec3u) {
  let pair = gid.x + gid.y * p.row_threads;
  if (pair >= p.n_pairs) {
    return;
  }
  let cs = rotation(pair);
  let i = first_elem(pair);
  let x1 = y[i];
  let x2 = y[i + p.half];
  y[i] = x1 * cs.x - x2 * cs.y;
  y[i + p.half] = x2 * cs.x + x1 * cs.y;
}
