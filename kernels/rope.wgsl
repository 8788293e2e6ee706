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
// Departures: the angle is reduced to [−π, π] with a two-constant Cody–Waite step before
// sin / cos, whose WGSL accuracy is only specified on that interval — so large positions keep
// full f32 accuracy. `main` writes a separate output; `main_inplace` rotates x in place.
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

const INV_2PI: f32 = 0.15915494309189535;
const TWO_PI_HI: f32 = 6.28125;                 // 2π = HI + LO, HI with 8 significant bits so k·HI is exact
const TWO_PI_LO: f32 = 0.0019353071795864769;

// (cos θ, sign · sin θ) for pair `pair`.
fn rotation(pair: u32) -> vec2f {
  let d = pair % p.half;
  let bt = pair / (p.half * p.H);
  let theta = f32(positions[bt]) * p.inv_freq[d / 4u][d % 4u];
  let kq = round(theta * INV_2PI);
  let r = (theta - kq * TWO_PI_HI) - kq * TWO_PI_LO;
  return vec2f(cos(r), sin(r) * p.sign);
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
