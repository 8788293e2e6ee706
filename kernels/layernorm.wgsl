// layernorm.wgsl — LayerNorm over the last dimension, forward and backward (GPT-2 / llm.c form).
//
// Legend: N rows (B·T flattened), C channels; any C ≥ 1.
//   inp [N, C], weight [C], bias [C], out [N, C], mean [N], rstd [N], dout [N, C], dinp [N, C],
//   part [2, NBLK, C] scratch (column partials), dweight [C], dbias [C].
//
// forward          one workgroup per row:
//                    mean = Σx / C;  var = Σ(x − mean)² / C  (two passes: no cancellation)
//                    rstd = 1 / sqrt(var + eps);  out = (x − mean)·rstd·weight + bias
// backward_dinp    one workgroup per block of RB consecutive rows, rows in order:
//                    norm = (x − mean)·rstd,  dnorm = dout·weight
//                    dinp = rstd·(dnorm − mean_c(dnorm) − norm·mean_c(dnorm·norm))      (writes =)
//                    part[0][blk][c] = Σ_{rows of blk} dout·norm,  part[1][blk][c] = Σ dout
// backward_params  one thread per channel: dweight[c] (= or +=) Σ_blk part[0][blk][c] in block
//                  order; the same for dbias.
//
// Departures from the textbook: the column sums for dweight/dbias are not done with atomics (as
// llm.c's CUDA does) but in two deterministic stages — each thread owns its channels inside its
// row block, so the partial sums have one writer and a fixed order, then a fixed-order sum over
// blocks. Row reductions are a shared-memory tree over WG threads; the order depends only on WG.

override WG: u32 = 128; // threads per workgroup; a power of two (tree reduction)

struct Params {
  n: u32,          // rows N
  c: u32,          // channels C
  eps: f32,        // added to the variance
  nx: u32,         // workgroups along x (forward, backward_dinp) or threads per grid row (backward_params)
  rb: u32,         // rows per block (backward)
  nblk: u32,       // blocks = ceil(N / rb) (backward)
  accumulate: u32, // backward_params: 1 → dweight += ..., dbias += ...; 0 → =
}

@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> mean: array<f32>;
@group(0) @binding(5) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(6) var<storage, read> dout: array<f32>;
@group(0) @binding(7) var<storage, read_write> dinp: array<f32>;
@group(0) @binding(8) var<storage, read_write> part: array<f32>;
@group(0) @binding(9) var<storage, read_write> dweight: array<f32>;
@group(0) @binding(10) var<storage, read_write> dbias: array<f32>;
@group(0) @binding(11) var<uniform> p: Params;

var<workgroup> red: array<vec2f, WG>;

// Sum of v over the workgroup, the same value in every thread. Call in uniform control flow.
fn reduce2(tid: u32, v: vec2f) -> vec2f {
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
  let cf = f32(p.c);
  var s = 0.0;
  for (var c = tid; c < p.c; c += WG) {
    s += inp[base + c];
  }
  let mu = reduce2(tid, vec2f(s, 0.0)).x / cf;
  var v = 0.0;
  for (var c = tid; c < p.c; c += WG) {
    let d = inp[base + c] - mu;
    v += d * d;
  }
  let rs = 1.0 / sqrt(reduce2(tid, vec2f(v, 0.0)).x / cf + p.eps);
  for (var c = tid; c < p.c; c += WG) {
    out[base + c] = (inp[base + c] - mu) * rs * weight[c] + bias[c];
  }
  if (tid == 0u) {
    mean[row] = mu;
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
  let cf = f32(p.c);
  let pw = blk * p.c;              // part[0][blk][0]
  let pb = (p.nblk + blk) * p.c;   // part[1][blk][0]
  for (var row = r0; row < r1; row++) {
    let base = row * p.c;
    let mu = mean[row];
    let rs = rstd[row];
    var acc = vec2f(0.0);
    for (var c = tid; c < p.c; c += WG) {
      let norm = (inp[base + c] - mu) * rs;
      let dn = weight[c] * dout[base + c];
      acc += vec2f(dn, dn * norm);
    }
    let m = reduce2(tid, acc) / cf; // (mean dnorm, mean dnorm·norm)
    for (var c = tid; c < p.c; c += WG) {
      let g = dout[base + c];
      let norm = (inp[base + c] - mu) * rs;
      let dn = weight[c] * g;
      dinp[base + c] = (dn - m.x - norm * m.y) * rs;
      // This thread is the only writer of these channels of this block: no race, fixed order.
      if (row == r0) {
        part[pw + c] = g * norm;
        part[pb + c] = g;
      } else {
        part[pw + c] += g * norm;
        part[pb + c] += g;
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
  var sb = 0.0;
  for (var b = 0u; b < p.nblk; b++) {
    sw += part[b * p.c + c];
    sb += part[(p.nblk + b) * p.c + c];
  }
  if (p.accumulate != 0u) {
    dweight[c] += sw;
    dbias[c] += sb;
  } else {
    dweight[c] = sw;
    dbias[c] = sb;
  }
}
