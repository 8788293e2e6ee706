// softmax.wgsl — row softmax, forward and backward.
//
// Legend: N rows, C columns (the softmax axis, e.g. V for logits).
//   forward   y[r, :] = exp(x[r, :] − max) / Σ exp(x[r, :] − max)
//   backward  dx[r, :] = y[r, :] ⊙ (dy[r, :] − Σ_c dy[r, c]·y[r, c])        (writes, =)
//
// One workgroup per row, WG threads striding over the row; the row's max and sum-exp are carried
// together online (one read for both, one more read to write y), then merged by a tree in
// workgroup memory. Rows past the x limit of the grid continue along y (`rows_x`).

override WG: u32 = 64;  // threads per row (power of two)

const FLT_LOWEST: f32 = -3.4028234663852886e38;

struct Params {
  n: u32,       // rows
  c: u32,       // columns
  rows_x: u32,  // workgroups along x
}

@group(0) @binding(0) var<storage, read> x: array<f32>;         // forward: x [N, C]; backward: dy [N, C]
@group(0) @binding(1) var<storage, read> y_in: array<f32>;      // backward: y [N, C]
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // forward: y; backward: dx
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> red_a: array<f32, WG>;
var<workgroup> red_b: array<f32, WG>;

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wid.x + wid.y * p.rows_x;
  if (row >= p.n) {
    return;  // uniform per workgroup
  }
  let base = row * p.c;
  var m = FLT_LOWEST;  // (m, s) = (max, Σ exp(z − m)) of this thread's elements; s = 0: none
  var s = 0.0;
  if (tid < p.c) {
    m = x[base + tid];
    s = 1.0;
  }
  for (var j = tid + WG; j < p.c; j += WG) {
    let z = x[base + j];
    if (z > m) {
      s = s * exp(m - z) + 1.0;
      m = z;
    } else {
      s += exp(z - m);
    }
  }
  red_a[tid] = m;
  red_b[tid] = s;
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k && red_b[tid + k] > 0.0) {  // empty threads are the last ones, so tid is not empty
      let m1 = red_a[tid];
      let m2 = red_a[tid + k];
      let mm = max(m1, m2);
      red_b[tid] = red_b[tid] * exp(m1 - mm) + red_b[tid + k] * exp(m2 - mm);
      red_a[tid] = mm;
    }
  }
  workgroupBarrier();
  let mx = red_a[0];
  let inv = 1.0 / red_b[0];
  for (var j = tid; j < p.c; j += WG) {
    out[base + j] = exp(x[base + j] - mx) * inv;
  }
}

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wid.x + wid.y * p.rows_x;
  if (row >= p.n) {
    return;
  }
  let base = row * p.c;
  var d = 0.0;
  for (var j = tid; j < p.c; j += WG) {
    d += x[base + j] * y_in[base + j];
  }
  red_a[tid] = d;
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red_a[tid] += red_a[tid + k];
    }
  }
  workgroupBarrier();
  let dot = red_a[0];
  for (var j = tid; j < p.c; j += WG) {
    out[base + j] = y_in[base + j] * (x[base + j] - dot);
  }
}
