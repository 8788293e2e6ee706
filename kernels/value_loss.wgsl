// value_loss.wgsl — clipped value loss of a PPO critic and its gradient, masked and mean-aggregated.
//
// Legend: N tokens.
//   ℓ_i  = ½·max((v − R)², (clip(v, v_old − ε, v_old + ε) − R)²)        (unclipped when ε is off)
//   L    = coef · Σ_i w_i ℓ_i / #{i : w_i ≠ 0}                           (w = 0 masks a token)
//   dv_i = coef · w_i / #unmasked · (v − R)   where the unclipped term is the max (ties included),
//          0 where the clipped term is strictly larger (v is then outside the clip range)
//   stats = [L, fraction of unmasked tokens where the clipped term won]
//
// One workgroup does it all — the token count, the gradient, the fixed-order tree for the stats —
// because N (tokens of a batch) is small next to the logits, and a single group needs no second
// dispatch or scratch buffer. Departure from the usual code: masked tokens get an exactly zero
// gradient whatever their inputs (no 0·inf = NaN).

override RWG: u32 = 256;  // threads of the single workgroup (power of two)

struct Params {
  n: u32,
  use_clip: u32,  // 1: clip v to v_old ± eps
  eps: f32,
  coef: f32,
}

@group(0) @binding(0) var<storage, read> values: array<f32>;      // [N] v, the critic's prediction
@group(0) @binding(1) var<storage, read> old_values: array<f32>;  // [N] v_old, at rollout time
@group(0) @binding(2) var<storage, read> returns: array<f32>;     // [N] R, the target
@group(0) @binding(3) var<storage, read> weights: array<f32>;     // [N], 0 = masked
@group(0) @binding(4) var<storage, read_write> dvalues: array<f32>;  // [N]
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;    // [2]
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> red_u: array<u32, RWG>;
var<workgroup> red_f: array<vec2f, RWG>;

@compute @workgroup_size(RWG)
fn main(@builtin(local_invocation_index) tid: u32) {
  var c = 0u;
  for (var i = tid; i < p.n; i += RWG) {
    c += select(0u, 1u, weights[i] != 0.0);
  }
  red_u[tid] = c;
  for (var k = RWG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red_u[tid] += red_u[tid + k];
    }
  }
  workgroupBarrier();
  let count = red_u[0];
  let inv = select(p.coef / f32(count), 0.0, count == 0u);
  var acc = vec2f(0.0);  // Σ scale·ℓ, clipped tokens
  for (var i = tid; i < p.n; i += RWG) {
    let w = weights[i];
    var dv = 0.0;
    if (w != 0.0) {
      let v = values[i];
      let u = v - returns[i];
      var uc = u;
      if (p.use_clip != 0u) {
        let vo = old_values[i];
        uc = clamp(v, vo - p.eps, vo + p.eps) - returns[i];
      }
      let scale = w * inv;
      if (uc * uc > u * u) {
        acc += vec2f(scale * 0.5 * uc * uc, 1.0);
      } else {
        acc.x += scale * 0.5 * u * u;
        dv = scale * u;
      }
    }
    dvalues[i] = dv;
  }
  red_f[tid] = acc;
  for (var k = RWG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red_f[tid] += red_f[tid + k];
    }
  }
  workgroupBarrier();
  if (tid == 0u) {
    stats[0] = red_f[0].x;
    stats[1] = select(red_f[0].y / f32(count), 0.0, count == 0u);
  }
}
