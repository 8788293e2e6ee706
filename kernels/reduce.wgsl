// reduce.wgsl — deterministic sums: per row, over a whole tensor, and the global L2 norm over a
// list of tensors (for gradient clipping). No atomics: every sum has a fixed order.
//
// Legend: N rows, C columns, n elements, P partial sums.
//   sum_rows   dst[r] = Σ_c src[r, c]                     one workgroup per row
//   partial    dst[base + g] = Σ src[g·CHUNK .. (g+1)·CHUNK)  (of squares when SQUARE)
//                                                         one workgroup per chunk: level 1
//   finalize   dst[0] = Σ_p src[p]  (its sqrt when SQRT)  one workgroup: level 2
// The global norm runs `partial` once per tensor into one partials buffer (each at its own
// base), then `finalize` once: the same inputs always meet in the same order.
// Inside a workgroup each thread sums a strided subset (coalesced reads), then a tree in
// workgroup memory adds the WG thread sums.

override WG: u32 = 256;      // threads per workgroup (power of two)
override ITEMS: u32 = 16;    // elements per thread in `partial`: CHUNK = WG · ITEMS
override SQUARE: bool = false;
override SQRT: bool = false;

struct Params {
  n: u32,         // elements of src (sum_rows: rows)
  c: u32,         // columns (sum_rows)
  base: u32,      // first index of dst written (partial)
  groups_x: u32,  // workgroups along x (the grid continues along y)
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> red: array<f32, WG>;

// The sum of the WG values `v` of the workgroup, returned to every thread.
fn tree_sum(tid: u32, v: f32) -> f32 {
  red[tid] = v;
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red[tid] += red[tid + k];
    }
  }
  workgroupBarrier();
  return red[0];
}

@compute @workgroup_size(WG)
fn sum_rows(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wid.x + wid.y * p.groups_x;
  if (row >= p.n) {
    return;  // uniform per workgroup
  }
  let base = row * p.c;
  var acc = 0.0;
  for (var j = tid; j < p.c; j += WG) {
    acc += src[base + j];
  }
  let total = tree_sum(tid, acc);
  if (tid == 0u) {
    dst[row] = total;
  }
}

@compute @workgroup_size(WG)
fn partial(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let g = wid.x + wid.y * p.groups_x;
  let start = g * WG * ITEMS;
  if (start >= p.n) {
    return;
  }
  let end = min(start + WG * ITEMS, p.n);
  var acc = 0.0;
  for (var i = start + tid; i < end; i += WG) {
    let x = src[i];
    acc += select(x, x * x, SQUARE);
  }
  let total = tree_sum(tid, acc);
  if (tid == 0u) {
    dst[p.base + g] = total;
  }
}

@compute @workgroup_size(WG)
fn finalize(@builtin(local_invocation_index) tid: u32) {
  var acc = 0.0;
  for (var i = tid; i < p.n; i += WG) {
    acc += src[i];
  }
  let total = tree_sum(tid, acc);
  if (tid == 0u) {
    dst[0] = select(total, sqrt(total), SQRT);
  }
}
