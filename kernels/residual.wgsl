// residual.wgsl — residual add with a scale, its in-place form, and an in-place scale.
//
// Legend: n elements of any shape (e.g. N rows × C channels of the residual stream).
//   a [n], b [n], out [n]
// add:         out = a + s·b              (writes =)
// accumulate:  out += s·b                 (out is the running residual stream; in place)
// scale:       out *= s                   (in place; e.g. a gradient times a clipping factor)
//
// s·b is rounded before the add (no fused multiply-add is requested), so with s = 1 the result
// is the plain f32 sum. The grid may be two-dimensional; the linear index is rebuilt with
// `row_threads` = threads in one grid row.

override WG: u32 = 256;

struct Params {
  n: u32,           // number of elements
  row_threads: u32, // workgroups along x · WG
  s: f32,           // the scale
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  out[i] = a[i] + p.s * b[i];
}

@compute @workgroup_size(WG)
fn accumulate(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  out[i] += p.s * b[i];
}

@compute @workgroup_size(WG)
fn scale(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  out[i] *= p.s;
}
