// add.wgsl — elementwise sum of two f32 tensors of the same shape.
//
//   out[i] = a[i] + b[i]            for i in [0, n)
//
// The grid may be two-dimensional when n / WG exceeds maxComputeWorkgroupsPerDimension; the
// linear index is rebuilt from gid.y with `row_threads` = threads in one grid row.

override WG: u32 = 256;

struct Params {
  n: u32,            // number of elements
  row_threads: u32,  // workgroups along x * WG
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  out[i] = a[i] + b[i];
}
