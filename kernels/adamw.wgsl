// adamw.wgsl — fused AdamW step in place (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", 2019), and the gradient-clipping scale computed from a norm on the GPU.
//
// Legend: n parameters of one tensor (any shape, flattened).
//   main / main_unscaled, per element (PyTorch's AdamW order and formula):
//     g  = grad · gscale                      gscale = gscale_buf[0] (main) or 1 (main_unscaled)
//     p  = p · (1 − lr·wd)                    decoupled weight decay
//     m  = β1·m + (1 − β1)·g
//     v  = β2·v + (1 − β2)·g²
//     p  = p − step_size · m / (sqrt(v) / bc2_sqrt + eps)
//   with step_size = lr / (1 − β1^t) and bc2_sqrt = sqrt(1 − β2^t), the bias corrections of step t,
//   computed on the host in f64 and passed as f32 (β^t in f32 inside the kernel would lose
//   precision for large t, and they are the same for every element); so are 1 − β1 and 1 − β2,
//   as PyTorch does (its scalars are Python floats).
//   clip_scale: scale[0] = min(1, max_norm / (norm[0] + 1e-6)) — torch.nn.utils.clip_grad_norm_'s
//     coefficient — so clipping needs no readback: globalL2Norm → clip_scale → main.
// The non-finite guard (an update that would make a weight or a moment NaN or ±Inf is never
// applied, with no readback between the check and the update):
//   flag_reset:                    flag[0] = 0
//   check / check_unscaled:        flag[0] |= 1 when any new p, m or v of this tensor would not be
//                                  finite (computed by `next`, as the update computes them; nothing
//                                  is written but the flag)
//   main_guarded / …_unscaled_guarded: the update, skipped entirely when flag[0] ≠ 0
//   recorded as flag_reset → check (every tensor) → main_guarded (every tensor), so a step is
//   applied to all tensors or to none. The flag is an integer OR: the same result in any order.
//   Finiteness is tested on the bits (exponent all ones), which no fast-math rewrite can drop.
// The grid is 1-D, continued along y past the x limit (`row_threads` threads per grid row).

override WG: u32 = 256;

struct Params {
  n: u32,
  row_threads: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  one_minus_beta1: f32,  // 1 − β1 and 1 − β2 from the host in f64: in f32, 1 − 0.999 is off by 1e-5
  one_minus_beta2: f32,
  eps: f32,
  wd: f32,
  step_size: f32,
  bc2_sqrt: f32,
  max_norm: f32,  // clip_scale only
}

@group(0) @binding(0) var<storage, read_write> param: array<f32>;  // [n] p
@group(0) @binding(1) var<storage, read_write> m1: array<f32>;     // [n] first moment m
@group(0) @binding(2) var<storage, read_write> m2: array<f32>;     // [n] second moment v
@group(0) @binding(3) var<storage, read> grad: array<f32>;         // [n] g; clip_scale: norm [1]
@group(0) @binding(4) var<storage, read_write> gscale: array<f32>; // [1] gradient scale
@group(0) @binding(5) var<storage, read_write> flag: array<atomic<u32>>; // [1] non-finite guard
@group(0) @binding(6) var<uniform> p: Params;

// The new (p, m, v) of element i, gradient scaled by s.
fn next(i: u32, s: f32) -> vec3f {
  let g = grad[i] * s;
  let m = p.beta1 * m1[i] + p.one_minus_beta1 * g;
  let v = p.beta2 * m2[i] + p.one_minus_beta2 * g * g;
  let decayed = param[i] * (1.0 - p.lr * p.wd);
  return vec3f(decayed - p.step_size * m / (sqrt(v) / p.bc2_sqrt + p.eps), m, v);
}

fn update(i: u32, s: f32) {
  let n = next(i, s);
  param[i] = n.x;
  m1[i] = n.y;
  m2[i] = n.z;
}

fn finite(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn check_one(i: u32, s: f32) {
  let n = next(i, s);
  if (!(finite(n.x) && finite(n.y) && finite(n.z))) {
    atomicOr(&flag[0], 1u);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n) {
    update(i, gscale[0]);
  }
}

@compute @workgroup_size(WG)
fn main_unscaled(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n) {
    update(i, 1.0);
  }
}

@compute @workgroup_size(WG)
fn main_guarded(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n && atomicLoad(&flag[0]) == 0u) {
    update(i, gscale[0]);
  }
}

@compute @workgroup_size(WG)
fn main_unscaled_guarded(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n && atomicLoad(&flag[0]) == 0u) {
    update(i, 1.0);
  }
}

@compute @workgroup_size(WG)
fn check(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n) {
    check_one(i, gscale[0]);
  }
}

@compute @workgroup_size(WG)
fn check_unscaled(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i < p.n) {
    check_one(i, 1.0);
  }
}

@compute @workgroup_size(1)
fn flag_reset() {
  atomicStore(&flag[0], 0u);
}

@compute @workgroup_size(1)
fn clip_scale() {
  gscale[0] = min(1.0, p.max_norm / (grad[0] + 1e-6));
}
