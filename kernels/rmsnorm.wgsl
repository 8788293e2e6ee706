// rmsnorm.wgsl — RMSNorm over the last dimension, forward and backward (Llama / Qwen form, and
// Gemma's (1 + w) form through the OFFSET constant).
//
// Legend: N rows (B·T flattened), C channels; any C ≥ 1.
//   inp [N, C], weight [C], out [N, C], rstd [N], dout [N, C], dinp [N, C],
//   part [NBLK, C] scratch (column partials), dweight [C].
//
// forward          one workgroup per row:
//                    rstd = 1 / sqrt(Σx² / C + eps);  out = x·rstd·(weight + OFFSET)
// backward_dinp    one workgroup per block of RB consecutive rows, rows in order:
//                    norm = x·rstd,  dnorm = dout·(weight + OFFSET)
//                    dinp = rstd·(dnorm − norm·mean_c(dnorm·norm))                        (writes =)
//                    part[blk][c] = Σ_{rows of blk} dout·norm
// backward_params  one thread per channel: dweight[c] (= or +=) Σ_blk part[blk][c] in block order.
//
// No mean is subtracted and there is no bias: only rstd is saved. The column sum for dweight is
// the same deterministic two-stage scheme as layernorm.wgsl (one writer per partial, fixed order,
// no atomics); the row reduction is a shared-memory tree over WG threads.

override WG: u32 = 128; // threads per workgroup; a power of two (tree reduction)
// Added to every weight as it is read: 0 for Llama's x·rstd·w, 1 for Gemma's x·rstd·(1 + w), whose
// checkpoints store w around 0. dweight is the same either way (d(w + 1)/dw = 1).
override OFFSET: f32 = 0.0;

struct Params {
  n: u32,          // rows N
  c: u32,          // channels C
  eps: f32,        // added to the mean square
  nx: u32,         // workgroups along x (forward, backward_dinp) or threads per grid row (backward_params)
  rb: u32,         // rows per block (backward)
  nblk: u32,       // blocks = ceil(N / rb) (backward)
  accumulate: u32, // backward_params: 1 → dweight += ...; 0 → =
}

@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read_write> dinp: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
@group(0) @binding(7) var<storage, read_write> dweight: array<f32>;
@group(0) @binding(8) var<uniform> p: Params;

var<workgroup> red: array<f32, WG>;

// Sum of v over the workgroup, the same value in every thread. Call in uniform control flow.
fn reduce(tid: u32, v: f32) -> f32 {
  red[tid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      red[tid] += red[tid + s];
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier(); // red is overwritten by the next call
  return r;
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wid.x + wid.y * p.nx;
  if (row >= p.n) {
    return;
  }
  let base = row * p.c;
  var s = 0.0;
  for (var c = tid; c < p.c; c += WG) {
    let x = inp[base + c];
    s += x * x;
  }
  let rs = 1.0 / sqrt(reduce(tid, s) / f32(p.c) + p.eps);
  for (var c = tid; c < p.c; c += WG) {
    out[base + c] = inp[base + c] * rs * (weight[c] + OFFSET);
  }
  if (tid == 0u) {
    rstd[row] = rs;
  }
}

@compute @workgroup_size(WG)
fn backward_dinp(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let blk = wid.x + wid.y * p.nx;
  if (blk >= p.nblk) {
    return;
  }
  let r0 = blk * p.rb;
  let r1 = min(r0 + p.rb, p.n);
  let pw = blk * p.c; // part[blk][0]
  for (var row = r0; row < r1; row++) {
    let base = row * p.c;
    let rs = rstd[row];
    var acc = 0.0;
    for (var c = tid; c < p.c; c += WG) {
      acc += (weight[c] + OFFSET) * dout[base + c] * inp[base + c] * rs;
    }
    let m = reduce(tid, acc) / f32(p.c); // mean dnorm·norm
    for (var c = tid; c < p.c; c += WG) {
      let g = dout[base + c];
      let norm = inp[base + c] * rs;
      dinp[base + c] = ((weight[c] + OFFSET) * g - norm * m) * rs;
      // This thread is the only writer of these channels of this block: no race, fixed order.
      if (row == r0) {
        part[pw + c] = g * norm;
      } else {
        part[pw + c] += g * norm;
      }
    }
  }
}

@compute @workgroup_size(WG)
fn backward_params(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x + gid.y * p.nx;
  if (c >= p.c) {
    return;
  }
  var sw = 0.0;
  for (var b = 0u; b < p.nblk; b++) {
    sw += part[b * p.c + c];
  }
  if (p.accumulate != 0u) {
    dweight[c] += sw;
  } else {
    dweight[c] = sw;
  }
}
