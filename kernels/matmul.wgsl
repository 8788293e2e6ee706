// matmul.wgsl — batched, transposable matrix product with a fused epilogue (f32 storage; B may
// be f16 in the generated variant matmul_f16, see BStore below).
//
//   C[b] = act((accumulate ? C[b] : 0) + alpha · (op(A[b]) · op(B[b]) + lora_scale · U · op(V)) + bias)
//   act: identity, or GELU (tanh approximation) with ACT = 1
//
// Shapes (row-major storage): op(A) is M×K (A stored [M, K], or [K, M] transposed), op(B) is K×N
// (B stored [K, N], or [N, K] transposed), C is [M, N], bias is [N]. A, B and C may be blocks of
// larger matrices: an element offset and a leading dimension each (the strides and c_off, c_ld). The optional low-rank term
// (LoRA, rank R) has U stored [M, R] and op(V) R×N (V stored [R, N] or [N, R]); it needs a batch
// of one. Transposes are strides in Params; a batch stride of 0 broadcasts an operand (shared
// weights). Each output element is owned by one invocation and sums k = 0, 1, ..., K-1 (then
// r = 0, ..., R-1) in order with fma in f32: deterministic, and the same for every tile shape.
//
// Two entry points, chosen per adapter by the host (src/ops/matmul.ts, matmulConfigFor):
//   main       — register tiles, no shared memory, no barriers. Each invocation computes TM×TN
//                contiguous outputs, 4 consecutive k per step, with 4-wide loads where the storage
//                allows (MODE_*). On CPU rasterizers such as llvmpipe every load instruction is a
//                loop over the SIMD lanes costing tens of cycles whatever its width, while
//                arithmetic is nearly free, so loads per multiply-add is what counts; the textbook
//                shared-memory kernel loses there (its barriers are coroutine switches).
//   main_tex   — main reading A and B through texture copies (where the adapter wants texture
//                reads: llvmpipe), generated from main (see @copy-begin below).
//   main_tiled — the textbook kernel for real GPUs: the workgroup stages a BK-deep slice of op(A)
//                and op(B) in workgroup memory; each invocation then computes TM×TN outputs strided
//                by the workgroup size (coalesced loads and stores).
// Loops over the override constants TM, TN unroll at pipeline creation, so the register arrays
// below are indexed with constants only.

override TM: u32 = 4u;          // rows of C per invocation, ≤ MAX_T
override TN: u32 = 4u;          // columns of C per invocation, ≤ MAX_T
override WG_X: u32 = 8u;        // invocations along N
override WG_Y: u32 = 8u;        // invocations along M
override BK: u32 = 16u;         // main_tiled: depth of the K slice kept in workgroup memory
// How main loads an operand: 0 = scalar loads through the strides (any layout); 1 = 4-wide along
// k (A stored [M, K], B stored [N, K], V stored [N, R]; that dimension a multiple of 4);
// 2 = 4-wide across rows or columns (A stored [K, M], B stored [K, N], V stored [R, N]; M or N a
// multiple of 4, as TM or TN). The 4-wide loads read the *4 views of the same buffers.
override MODE_A: u32 = 0u;
override MODE_B: u32 = 0u;
override MODE_V: u32 = 0u;
override HAS_LOWRANK: bool = false;
// 1: GELU of every output, last (inference's up projection). An override, not a flag: on llvmpipe
// a uniform branch around tanh in the unrolled store still cost every product ~10% (measured).
override ACT: u32 = 0u;
// main_tex: log2 of the texels per row of A_tex and B_tex (Recorder.tempTexture: 8192 = 2^13).
override TEX_SHIFT: u32 = 13u;

const MAX_T: u32 = 16u;

struct Params {
  M: u32, N: u32, K: u32, R: u32,
  a_sm: u32, a_sk: u32,   // A(m, k) = A[a_base + m·a_sm + k·a_sk]
  b_sk: u32, b_sn: u32,   // B(k, n) = B[b_base + k·b_sk + n·b_sn]
  v_sr: u32, v_sn: u32,   // V(r, n) = V[r·v_sr + n·v_sn];  U(m, r) = U[m·R + r]
  a_bstride: u32,         // elements between batches (0: broadcast)
  b_bstride: u32,
  c_bstride: u32,
  alpha: f32,
  lora_scale: f32,
  flags: u32,             // bit 0: add bias; bit 1: accumulate into C (uniform flags, not
                          // overrides: they touch only the epilogue and would double the variants)
  wg_off_x: u32,          // workgroup offsets of this dispatch, for grids split over several
  wg_off_y: u32,
  wg_off_z: u32,
  a_off: u32,             // element offsets of A(0, 0), B(0, 0), C(0, 0) in their bindings (a block
  b_off: u32,             // of a larger matrix, or a window of a tensor over the binding limit)
  c_off: u32,
  c_ld: u32,              // C(m, n) = C[c_off + m·c_ld + n]
  bias_off: u32,          // bias(n) = bias[bias_off + n]
}

// B's storage type. `matmul` is this file as written (f32); scripts/gen-kernels.mjs also bundles
// `matmul_f16` from it, with B in f16 (frozen base weights; the host picks it only where the
// device has shader-f16). The @variant line names the substitutions — they are the only
// differences. B's values are widened to f32 as they are loaded (f32(·), vec4f(·): identities
// here), so products and sums are f32 in both kernels.
// @variant matmul_f16: enable f16; BStore = f16; BStore4 = vec4<f16>
alias BStore = f32;
alias BStore4 = vec4<f32>;

@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> A4: array<vec4f>;   // the same buffer as A
@group(0) @binding(2) var<storage, read> B: array<BStore>;
@group(0) @binding(3) var<storage, read> B4: array<BStore4>; // the same buffer as B
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> U: array<f32>;
@group(0) @binding(6) var<storage, read> V: array<f32>;
@group(0) @binding(7) var<storage, read> V4: array<vec4f>;   // the same buffer as V
@group(0) @binding(8) var<storage, read_write> C: array<f32>;
// main_tex: A and B as texels of 4 consecutive elements, texel t at (t % 2^TEX_SHIFT, t >> TEX_SHIFT)
// (rgba32float; B rgba16float when stored in f16: the fetch widens exactly, as f32(·) does).
@group(0) @binding(9) var A_tex: texture_2d<f32>;
@group(0) @binding(10) var B_tex: texture_2d<f32>;
@group(0) @binding(11) var<uniform> p: Params;

fn a_at(base: u32, m: u32, k: u32) -> f32 { return A[base + m * p.a_sm + k * p.a_sk]; }
fn b_at(base: u32, k: u32, n: u32) -> f32 { return f32(B[base + k * p.b_sk + n * p.b_sn]); }
fn u_at(m: u32, r: u32) -> f32 { return U[m * p.R + r]; }
fn v_at(r: u32, n: u32) -> f32 { return V[r * p.v_sr + n * p.v_sn]; }
// 4-wide loads of A and B (MODE_A, MODE_B 1 and 2) through the vec4 views of their buffers.
fn a4_at(i: u32) -> vec4f { return A4[i]; }
fn b4_at(i: u32) -> vec4f { return vec4f(B4[i]); }

// The same four loads through texture copies of A and B, for main_tex. On Mesa's llvmpipe a
// storage-buffer load runs a loop over the SIMD lanes with a bounds check per component, while a
// texel fetch is a plain gather: several times cheaper per element (measured). Each A4/B4 element
// is a texel and each scalar A/B element a component of one; the indices, clamps, zeros past K and
// the fma order are main's (main_tex is generated from it), so the results are bitwise main's.
fn texel(t: texture_2d<f32>, i: u32) -> vec4f {
  return textureLoad(t, vec2u(i & ((1u << TEX_SHIFT) - 1u), i >> TEX_SHIFT), 0);
}

fn a_tex_at(base: u32, m: u32, k: u32) -> f32 {
  let e = base + m * p.a_sm + k * p.a_sk;
  return texel(A_tex, e / 4u)[e % 4u];
}

fn b_tex_at(base: u32, k: u32, n: u32) -> f32 {
  let e = base + k * p.b_sk + n * p.b_sn;
  return texel(B_tex, e / 4u)[e % 4u];
}

fn a4_tex_at(i: u32) -> vec4f { return texel(A_tex, i); }
fn b4_tex_at(i: u32) -> vec4f { return texel(B_tex, i); }

// ---- main: register tiles over 4 consecutive k (main_tex: the same through textures) ----
// Per step, pb[j] = op(B)(k .. k+3, n0 + j) for the TN columns, then the rows of op(A) one at a
// time, so that only the accumulators, pb and one row are live while a load runs (values live
// across a load, itself a loop on llvmpipe, spill). Rows and columns past the edge are clamped to
// the last one: the loads stay in bounds and their results are never stored. Entries past K (or R)
// are zero, so a sum's last step adds exact zeros (fma(0, 0, s) = s): no tail loop is compiled.

// pb[j] = op(V)(r .. r+3, n0 + j), as panel_b.
fn panel_v(pb: ptr<function, array<vec4f, MAX_T>>, n0: u32, r: u32) {
  if (MODE_V == 1u) {               // V stored [N, R]
    for (var j = 0u; j < TN; j++) {
      (*pb)[j] = V4[(min(n0 + j, p.N - 1u) * p.v_sn + r) / 4u];
    }
  } else if (MODE_V == 2u) {        // V stored [R, N]
    for (var q = 0u; q < TN / 4u; q++) {
      let n = min(n0 + 4u * q, p.N - 4u);
      for (var kk = 0u; kk < 4u; kk++) {
        let t = select(vec4f(0.0), V4[(min(r + kk, p.R - 1u) * p.v_sr + n) / 4u], r + kk < p.R);
        (*pb)[4u * q][kk] = t.x;
        (*pb)[4u * q + 1u][kk] = t.y;
        (*pb)[4u * q + 2u][kk] = t.z;
        (*pb)[4u * q + 3u][kk] = t.w;
      }
    }
  } else {
    for (var j = 0u; j < TN; j++) {
      let n = min(n0 + j, p.N - 1u);
      for (var kk = 0u; kk < 4u; kk++) {
        (*pb)[j][kk] = select(0.0, v_at(min(r + kk, p.R - 1u), n), r + kk < p.R);
      }
    }
  }
}

// lora_scale · U(m, r .. r+3). Scalar loads: a 4-wide load of U ran ~30× slower than these on
// llvmpipe (Mesa 22.3), for reasons not understood; R ≤ 64 keeps this loop short anyway.
fn row_u(m: u32, r: u32) -> vec4f {
  let mr = min(m, p.M - 1u);
  var u: vec4f;
  for (var kk = 0u; kk < 4u; kk++) {
    u[kk] = select(0.0, u_at(mr, min(r + kk, p.R - 1u)), r + kk < p.R);
  }
  return p.lora_scale * u;
}

// acc[i][j] += Σ_kk a[kk] · pb[j][kk], kk in order.
fn fma_row(acc: ptr<function, array<array<f32, MAX_T>, MAX_T>>, a: vec4f, pb: ptr<function, array<vec4f, MAX_T>>, i: u32) {
  for (var j = 0u; j < TN; j++) {
    let b = (*pb)[j];
    var s = (*acc)[i][j];
    s = fma(a.x, b.x, s);
    s = fma(a.y, b.y, s);
    s = fma(a.z, b.z, s);
    s = fma(a.w, b.w, s);
    (*acc)[i][j] = s;
  }
}

// GELU, tanh approximation, exactly as gelu.wgsl's forward computes it (same expression, f32).
const GELU_S: f32 = 0.7978845608028654; // √(2/π)
const GELU_K: f32 = 0.044715;
fn gelu_tanh(x: f32) -> f32 {
  return 0.5 * x * (1.0 + tanh(clamp(GELU_S * (x + GELU_K * x * x * x), -10.0, 10.0)));
}

// C = (accumulate ? C : 0) + alpha·acc + bias at rows m0 + i·m_step, columns n0 + j·n_step, then
// GELU of that with ACT = 1 (inference's up projection: one dispatch, not two).
fn store_tile(acc: ptr<function, array<array<f32, MAX_T>, MAX_T>>, cbase: u32, m0: u32, m_step: u32, n0: u32, n_step: u32) {
  for (var i = 0u; i < TM; i++) {
    let m = m0 + i * m_step;
    for (var j = 0u; j < TN; j++) {
      let n = n0 + j * n_step;
      if (m < p.M && n < p.N) {
        var v = p.alpha * (*acc)[i][j];
        if ((p.flags & 1u) != 0u) { v = v + bias[p.bias_off + n]; }
        let o = cbase + m * p.c_ld + n;
        if ((p.flags & 2u) != 0u) { v = C[o] + v; }
        if (ACT == 1u) { v = gelu_tanh(v); }
        C[o] = v;
      }
    }
  }
}

// main's k loop and its loaders of A and B. scripts/gen-kernels.mjs bundles a copy of the lines
// between @copy-begin and @copy-end with every function they declare renamed with the suffix
// (main → main_tex, panel_b → panel_b_tex, ...) and the named loaders replaced by their texture
// twins above: main_tex is main reading A and B through textures, from this one source. U and V
// (rank ≤ 64) are read from their buffers in both.
// @copy-begin _tex: a_at = a_tex_at; b_at = b_tex_at; a4_at = a4_tex_at; b4_at = b4_tex_at
fn panel_b(pb: ptr<function, array<vec4f, MAX_T>>, base: u32, n0: u32, k: u32) {
  if (MODE_B == 1u) {               // B stored [N, K]: each column is contiguous in k
    for (var j = 0u; j < TN; j++) {
      (*pb)[j] = b4_at((base + min(n0 + j, p.N - 1u) * p.b_sn + k) / 4u);
    }
  } else if (MODE_B == 2u) {        // B stored [K, N]: one load gives 4 columns of one k
    for (var q = 0u; q < TN / 4u; q++) {
      let n = min(n0 + 4u * q, p.N - 4u);
      for (var kk = 0u; kk < 4u; kk++) {
        let t = select(vec4f(0.0), b4_at((base + min(k + kk, p.K - 1u) * p.b_sk + n) / 4u), k + kk < p.K);
        (*pb)[4u * q][kk] = t.x;
        (*pb)[4u * q + 1u][kk] = t.y;
        (*pb)[4u * q + 2u][kk] = t.z;
        (*pb)[4u * q + 3u][kk] = t.w;
      }
    }
  } else {
    for (var j = 0u; j < TN; j++) {
      let n = min(n0 + j, p.N - 1u);
      for (var kk = 0u; kk < 4u; kk++) {
        (*pb)[j][kk] = select(0.0, b_at(base, min(k + kk, p.K - 1u), n), k + kk < p.K);
      }
    }
  }
}

// op(A)(m, k .. k+3), for MODE_A 0 and 1 (MODE_A 2 loads 4 rows at once: block_a).
fn row_a(base: u32, m: u32, k: u32) -> vec4f {
  let mr = min(m, p.M - 1u);
  var a: vec4f;
  if (MODE_A == 1u) {               // A stored [M, K]: one load
    a = a4_at((base + mr * p.a_sm + k) / 4u);
  } else {
    for (var kk = 0u; kk < 4u; kk++) {
      a[kk] = select(0.0, a_at(base, mr, min(k + kk, p.K - 1u)), k + kk < p.K);
    }
  }
  return a;
}

// op(A)(m .. m+3, k .. k+3) from A stored [K, M] (MODE_A 2).
fn block_a(blk: ptr<function, array<vec4f, 4>>, base: u32, m: u32, k: u32) {
  let mq = min(m, p.M - 4u);
  for (var kk = 0u; kk < 4u; kk++) {
    let t = select(vec4f(0.0), a4_at((base + min(k + kk, p.K - 1u) * p.a_sk + mq) / 4u), k + kk < p.K);
    (*blk)[0][kk] = t.x;
    (*blk)[1][kk] = t.y;
    (*blk)[2][kk] = t.z;
    (*blk)[3][kk] = t.w;
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  // No early return past the edge: llvmpipe would mask every later instruction with it; those
  // invocations load clamped, in-bounds data and store_tile skips them.
  let batch = wid.z + p.wg_off_z;
  let n0 = ((wid.x + p.wg_off_x) * WG_X + lid.x) * TN;
  let m0 = ((wid.y + p.wg_off_y) * WG_Y + lid.y) * TM;
  let abase = batch * p.a_bstride + p.a_off;
  let bbase = batch * p.b_bstride + p.b_off;

  var acc: array<array<f32, MAX_T>, MAX_T>;
  var pb: array<vec4f, MAX_T>;
  for (var k = 0u; k < p.K; k += 4u) {
    panel_b(&pb, bbase, n0, k);
    if (MODE_A == 2u) {
      for (var i = 0u; i < TM; i += 4u) {
        var blk: array<vec4f, 4>;
        block_a(&blk, abase, m0 + i, k);
        for (var r = 0u; r < 4u; r++) { fma_row(&acc, blk[r], &pb, i + r); }
      }
    } else {
      for (var i = 0u; i < TM; i++) { fma_row(&acc, row_a(abase, m0 + i, k), &pb, i); }
    }
  }
  if (HAS_LOWRANK) {   // a second loop, not a branch in the first: llvmpipe runs both sides of an if
    for (var r = 0u; r < p.R; r += 4u) {
      panel_v(&pb, n0, r);
      for (var i = 0u; i < TM; i++) { fma_row(&acc, row_u(m0 + i, r), &pb, i); }
    }
  }
  store_tile(&acc, batch * p.c_bstride + p.c_off, m0, 1u, n0, 1u);
}
// @copy-end _tex

// ---- main_tiled: shared-memory K slices for real GPUs ----

override TILE_M: u32 = WG_Y * TM;
override TILE_N: u32 = WG_X * TN;
var<workgroup> tile_a: array<f32, BK * TILE_M>;   // [BK][TILE_M]
var<workgroup> tile_b: array<f32, BK * TILE_N>;   // [BK][TILE_N]

@compute @workgroup_size(WG_X, WG_Y, 1)
fn main_tiled(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,
              @builtin(local_invocation_index) li: u32) {
  let batch = wid.z + p.wg_off_z;
  let bm = (wid.y + p.wg_off_y) * TILE_M;   // first row of the block
  let bn = (wid.x + p.wg_off_x) * TILE_N;
  let abase = batch * p.a_bstride + p.a_off;
  let bbase = batch * p.b_bstride + p.b_off;
  let threads = WG_X * WG_Y;

  var acc: array<array<f32, MAX_T>, MAX_T>;
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    // Stage op(A)[bm .., k0 ..] and op(B)[k0 .., bn ..]; zeros past the edges.
    for (var e = li; e < BK * TILE_M; e += threads) {
      let kk = e / TILE_M;
      let mm = e % TILE_M;
      var v = 0.0;
      if (bm + mm < p.M && k0 + kk < p.K) { v = a_at(abase, bm + mm, k0 + kk); }
      tile_a[e] = v;
    }
    for (var e = li; e < BK * TILE_N; e += threads) {
      let kk = e / TILE_N;
      let nn = e % TILE_N;
      var v = 0.0;
      if (bn + nn < p.N && k0 + kk < p.K) { v = b_at(bbase, k0 + kk, bn + nn); }
      tile_b[e] = v;
    }
    workgroupBarrier();
    let kn = min(BK, p.K - k0);
    for (var kk = 0u; kk < kn; kk++) {
      var ra: array<f32, MAX_T>;
      var rb: array<f32, MAX_T>;
      for (var i = 0u; i < TM; i++) { ra[i] = tile_a[kk * TILE_M + lid.y + i * WG_Y]; }
      for (var j = 0u; j < TN; j++) { rb[j] = tile_b[kk * TILE_N + lid.x + j * WG_X]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i][j] = fma(ra[i], rb[j], acc[i][j]); }
      }
    }
    workgroupBarrier();
  }

  if (HAS_LOWRANK) {   // the same sum continues over r with lora_scale·U (R ≤ 64: direct loads)
    for (var r = 0u; r < p.R; r++) {
      var pu: array<f32, MAX_T>;
      var pv: array<f32, MAX_T>;
      for (var i = 0u; i < TM; i++) { pu[i] = p.lora_scale * u_at(min(bm + lid.y + i * WG_Y, p.M - 1u), r); }
      for (var j = 0u; j < TN; j++) { pv[j] = v_at(r, min(bn + lid.x + j * WG_X, p.N - 1u)); }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) { acc[i][j] = fma(pu[i], pv[j], acc[i][j]); }
      }
    }
  }
  store_tile(&acc, batch * p.c_bstride + p.c_off, bm + lid.y, WG_Y, bn + lid.x, WG_X);
}
