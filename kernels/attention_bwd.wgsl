// attention_bwd.wgsl — causal multi-head attention backward, flash style, without atomics.
//
// With s_ij = scale·q_i·k_j, p_ij = exp(s_ij − LSE_i) (recomputed from q, k and the forward's LSE),
// Δ_i = Σ_d dO_i·O_i and ds_ij = p_ij (dO_i·v_j − Δ_i):
//   dQ_i = scale · Σ_j ds_ij k_j        dK_j = scale · Σ_{h in group} Σ_i ds_ij q_i
//   dV_j = Σ_{h in group} Σ_i p_ij dO_i
// Shapes: q, O, dO, dQ [B, T, Hq, D]; k, v, dK, dV [B, T, Hkv, D]; LSE [B, Hq, T];
//         ws [B, Hq, T] of vec2 (LSE · log2 e, Δ) — a workspace written by `prep`.
// Legend: B batch, T time, Hq query heads, Hkv kv heads (G = Hq / Hkv per group), D head dim
// (D4 = D / 4, NM = ceil(D / 16) mat4x4 chunks). Masks (mask_mode) as in attention_fwd.wgsl:
// 0 causal, 1 lengths [B], 2 segment ids [B, T], each with the sliding window i − W < j ≤ i;
// padding rows get dQ = 0, and keys no live row sees (padding, or outside every window) dK = dV = 0.
//
// Three entry points, in order:
//   prep       one invocation per (b, h, t): ws = (LSE · log2 e, Δ).               grid1d over B·Hq·T
//   dq_main    ROWS query rows per invocation, walking keys t − W + 1 .. t (FlashAttention-2's dQ loop).
//                                                 grid x = ceil(T / (WG · ROWS)), y = Hq, z = B
//   dkdv_main  ROWS key rows of kv head hk per invocation, walking the G query heads of its group
//              in order and, for each, the query rows j ≤ t < j + W: every sum has one owner and a fixed
//              order, so no atomics and bitwise-reproducible results.
//                                                 grid x = ceil(T / (WG · ROWS)), y = Hkv, z = B
// Departures from the textbook: dQ is its own pass (recomputing s and dO·v) instead of being
// accumulated atomically by the dK/dV pass; scores in base 2. Register tiles as in the forward:
// an invocation's own rows live in mat4x4 chunks indexed by constants (rows and chunks called
// out one by one, never looped over), so each loaded row of the other side feeds ROWS rows. TILED stages blocks of BC rows of
// the other side (K/V for dq, Q/dO/ws for dkdv) in workgroup memory for real GPUs; software
// adapters (TILED = false) read storage directly with no barriers. At most 8 storage buffers per
// entry point (the WebGPU default limit), hence LSE and Δ share the ws buffer.

override D4: u32 = 16u;      // head dim / 4 (D ≤ 256)
override WG: u32 = 16u;      // invocations per workgroup (also prep's workgroup size)
override ROWS: u32 = 4u;     // own rows per invocation (1..8)
override BC: u32 = 16u;      // TILED only: rows of the other side per staged block
override TILED: bool = false;
override NM: u32 = (D4 + 3u) / 4u;   // mat4x4 chunks per row (≤ MC)

const MC: u32 = 16u;         // chunk slots per row: D ≤ 256
const LOG2E: f32 = 1.4426950408889634;

struct Params {
  T: u32,
  Hq: u32,
  Hkv: u32,
  mask_mode: u32,   // 0 causal, 1 lengths, 2 segments
  scale: f32,
  row_threads: u32, // prep only: threads per grid row (grid1d)
  window: u32,      // W: keys per query row, itself included; in [1, T] (T = unlimited)
}

@group(0) @binding(0) var<storage, read> q: array<vec4f>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<vec4f>;          // [B, T, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<vec4f>;          // [B, T, Hkv, D]
@group(0) @binding(3) var<storage, read> mask: array<i32>;         // lengths [B] | segments [B, T] | unused
@group(0) @binding(4) var<storage, read> out: array<vec4f>;        // [B, T, Hq, D] forward output
@group(0) @binding(5) var<storage, read> dout: array<vec4f>;       // [B, T, Hq, D]
@group(0) @binding(6) var<storage, read> lse: array<f32>;          // [B, Hq, T]
@group(0) @binding(7) var<storage, read_write> ws: array<vec2f>;   // [B, Hq, T] (LSE·log2 e, Δ)
@group(0) @binding(8) var<storage, read_write> dq: array<vec4f>;   // [B, T, Hq, D]
@group(0) @binding(9) var<storage, read_write> dk: array<vec4f>;   // [B, T, Hkv, D]
@group(0) @binding(10) var<storage, read_write> dv: array<vec4f>;  // [B, T, Hkv, D]
@group(0) @binding(11) var<uniform> p: Params;

// Staged blocks of the other side (one row each when not TILED, so nothing is reserved).
var<workgroup> a_tile: array<vec4f, select(1u, BC, TILED) * D4>;   // dq: k     dkdv: q
var<workgroup> b_tile: array<vec4f, select(1u, BC, TILED) * D4>;   // dq: v     dkdv: dO
var<workgroup> w_tile: array<vec2f, select(1u, BC, TILED)>;        // dkdv: ws

// Own rows, [row][chunk].
var<private> x_reg: array<mat4x4f, 8 * MC>;   // dq: q · scale · log2 e    dkdv: k · scale · log2 e
var<private> y_reg: array<mat4x4f, 8 * MC>;   // dq: dO                    dkdv: v
var<private> g1: array<mat4x4f, 8 * MC>;      // dq: Σ ds k               dkdv: Σ ds q
var<private> g2: array<mat4x4f, 8 * MC>;      // dkdv: Σ p dO
// The other side's current row, by chunk.
var<private> a_cur: array<mat4x4f, MC>;       // dq: k    dkdv: q
var<private> b_cur: array<mat4x4f, MC>;       // dq: v    dkdv: dO
// Per-row scalars, rows 4g .. 4g + 3 in the lanes of entry g.
var<private> seg_row: array<vec4i, 2>;        // segment id; −2 for a dead row
var<private> st_lse: array<vec4f, 2>;         // dq: LSE · log2 e per own row
var<private> st_dlt: array<vec4f, 2>;         // dq: Δ per own row
var<private> c_ds: array<vec4f, 2>;           // this step's ds per own row
var<private> c_p: array<vec4f, 2>;            // this step's p per own row

fn qo_base(b: u32, t: u32, h: u32) -> u32 {
  return ((b * p.T + t) * p.Hq + h) * D4;
}

fn kv_base(b: u32, t: u32, hk: u32) -> u32 {
  return ((b * p.T + t) * p.Hkv + hk) * D4;
}

fn hsum(x: vec4f) -> f32 {
  return x.x + x.y + x.z + x.w;
}

// Segment id of token t (mask_mode 2), else 0, so that every comparison of live rows passes.
fn seg_of(b: u32, t: u32) -> i32 {
  if (p.mask_mode == 2u) {
    return mask[b * p.T + t];
  }
  return 0;
}

// First key query row `row` may see (window W): max(row + 1 − W, 0).
fn window_start(row: u32) -> u32 {
  return max(row + 1u, p.window) - p.window;
}

// Tokens [0, n) of a sequence that are not padding in mask_mode 1; all T otherwise.
fn seq_len(b: u32) -> u32 {
  if (p.mask_mode == 1u) {
    return u32(clamp(mask[b], 0, i32(p.T)));
  }
  return p.T;
}

@compute @workgroup_size(WG)
fn prep(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.x + gid.y * p.row_threads;   // = (b · Hq + h) · T + t
  if (r >= arrayLength(&ws)) {
    return;
  }
  let t = r % p.T;
  let bh = r / p.T;
  let o = qo_base(bh / p.Hq, t, bh % p.Hq);
  var dl = vec4f(0.0);
  for (var d = 0u; d < D4; d++) {
    dl = fma(dout[o + d], out[o + d], dl);
  }
  ws[r] = vec2f(lse[r] * LOG2E, hsum(dl));
}

// ---- shared helpers ---------------------------------------------------------------------------

// Column c (a vec4 of head dims, zero past D) of the row at vec4 offset `base`, and chunk m
// (columns 4m .. 4m + 3). One function per buffer: a helper touching every buffer would bind
// them all in every entry point.
fn col_q(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), q[base + min(c, D4 - 1u)], c < D4); }
fn col_k(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), k[base + min(c, D4 - 1u)], c < D4); }
fn col_v(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), v[base + min(c, D4 - 1u)], c < D4); }
fn col_do(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), dout[base + min(c, D4 - 1u)], c < D4); }
fn col_at(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), a_tile[base + min(c, D4 - 1u)], c < D4); }
fn col_bt(base: u32, c: u32) -> vec4f { return select(vec4f(0.0), b_tile[base + min(c, D4 - 1u)], c < D4); }
fn chunk_q(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_q(b, 4u * m), col_q(b, 4u * m + 1u), col_q(b, 4u * m + 2u), col_q(b, 4u * m + 3u)); }
fn chunk_k(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_k(b, 4u * m), col_k(b, 4u * m + 1u), col_k(b, 4u * m + 2u), col_k(b, 4u * m + 3u)); }
fn chunk_v(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_v(b, 4u * m), col_v(b, 4u * m + 1u), col_v(b, 4u * m + 2u), col_v(b, 4u * m + 3u)); }
fn chunk_do(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_do(b, 4u * m), col_do(b, 4u * m + 1u), col_do(b, 4u * m + 2u), col_do(b, 4u * m + 3u)); }
fn chunk_at(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_at(b, 4u * m), col_at(b, 4u * m + 1u), col_at(b, 4u * m + 2u), col_at(b, 4u * m + 3u)); }
fn chunk_bt(b: u32, m: u32) -> mat4x4f { return mat4x4f(col_bt(b, 4u * m), col_bt(b, 4u * m + 1u), col_bt(b, 4u * m + 2u), col_bt(b, 4u * m + 3u)); }

// Vec4 offset of row t (clamped to T − 1) of head `head` in a [B, T, H, D] tensor.
fn row_base(b: u32, t: u32, H: u32, head: u32) -> u32 {
  return ((b * p.T + min(t, p.T - 1u)) * H + head) * D4;
}

// Own row r (= row0 + r) — dq pass: x = q · scale · log2 e, y = dO; dkdv pass: x = k · scale ·
// log2 e, y = v — with its gradients cleared. No-op for r ≥ ROWS. The callers name rows one by
// one, never in a loop, so that every chunk index is a constant.
fn load_own(r: u32, is_dq: bool, b: u32, row0: u32, head: u32) {
  if (r >= ROWS) {
    return;
  }
  let base = row_base(b, row0 + r, select(p.Hkv, p.Hq, is_dq), head);
  own_chunk(r, 0u, is_dq, base); own_chunk(r, 1u, is_dq, base); own_chunk(r, 2u, is_dq, base); own_chunk(r, 3u, is_dq, base);
  own_chunk(r, 4u, is_dq, base); own_chunk(r, 5u, is_dq, base); own_chunk(r, 6u, is_dq, base); own_chunk(r, 7u, is_dq, base);
  own_chunk(r, 8u, is_dq, base); own_chunk(r, 9u, is_dq, base); own_chunk(r, 10u, is_dq, base); own_chunk(r, 11u, is_dq, base);
  own_chunk(r, 12u, is_dq, base); own_chunk(r, 13u, is_dq, base); own_chunk(r, 14u, is_dq, base); own_chunk(r, 15u, is_dq, base);
}

fn own_chunk(r: u32, m: u32, is_dq: bool, base: u32) {
  if (m >= NM) {
    return;
  }
  let xs = p.scale * LOG2E;
  if (is_dq) {
    x_reg[r * MC + m] = chunk_q(base, m) * xs;
    y_reg[r * MC + m] = chunk_do(base, m);
  } else {
    x_reg[r * MC + m] = chunk_k(base, m) * xs;
    y_reg[r * MC + m] = chunk_v(base, m);
  }
  g1[r * MC + m] = mat4x4f();
  g2[r * MC + m] = mat4x4f();
}

fn load_own_all(is_dq: bool, b: u32, row0: u32, head: u32) {
  load_own(0u, is_dq, b, row0, head); load_own(1u, is_dq, b, row0, head); load_own(2u, is_dq, b, row0, head); load_own(3u, is_dq, b, row0, head);
  load_own(4u, is_dq, b, row0, head); load_own(5u, is_dq, b, row0, head); load_own(6u, is_dq, b, row0, head); load_own(7u, is_dq, b, row0, head);
}

// Own rows 4g .. 4g + 3 (from row0): segment ids (−2 when dead: past ROWS, T or the length,
// or padding), and in the dq pass (LSE·log2 e, Δ) of query head h. Returns one past the last
// live row (0 if none).
fn init_group(g: u32, b: u32, row0: u32, len: u32, h: u32, is_dq: bool) -> u32 {
  let rows = vec4u(row0 + 4u * g) + vec4u(0u, 1u, 2u, 3u);
  let rc = min(rows, vec4u(p.T - 1u));
  let seg = vec4i(seg_of(b, rc.x), seg_of(b, rc.y), seg_of(b, rc.z), seg_of(b, rc.w));
  let live = (vec4u(4u * g) + vec4u(0u, 1u, 2u, 3u) < vec4u(ROWS)) & (rows < vec4u(len)) & (seg >= vec4i(0));
  seg_row[g] = select(vec4i(-2), seg, live);
  if (is_dq) {
    let wb = (b * p.Hq + h) * p.T;
    let st = mat4x2f(ws[wb + rc.x], ws[wb + rc.y], ws[wb + rc.z], ws[wb + rc.w]);
    st_lse[g] = transpose(st)[0];
    st_dlt[g] = transpose(st)[1];
  }
  let ends = select(vec4u(0u), rows + 1u, live);
  return max(max(ends.x, ends.y), max(ends.z, ends.w));
}

// Chunk m of the other side's current row: k, v (dq pass) or q, dO (dkdv pass), from storage
// at `base` or from tile slot `slot`.
fn other_chunk(m: u32, is_dq: bool, base: u32, slot: u32) {
  if (m >= NM) {
    return;
  }
  if (TILED) {
    a_cur[m] = chunk_at(slot * D4, m);
    b_cur[m] = chunk_bt(slot * D4, m);
  } else if (is_dq) {
    a_cur[m] = chunk_k(base, m);
    b_cur[m] = chunk_v(base, m);
  } else {
    a_cur[m] = chunk_q(base, m);
    b_cur[m] = chunk_do(base, m);
  }
}

// (x_r · a_cur, y_r · b_cur) for own row r; zeros for r ≥ ROWS.
fn dots(r: u32) -> vec2f {
  if (r >= ROWS) {
    return vec2f(0.0);
  }
  var sd = mat2x4f();   // running (x·a, y·b) partial sums
  sd = dots_chunk(r, 0u, sd); sd = dots_chunk(r, 1u, sd); sd = dots_chunk(r, 2u, sd); sd = dots_chunk(r, 3u, sd);
  sd = dots_chunk(r, 4u, sd); sd = dots_chunk(r, 5u, sd); sd = dots_chunk(r, 6u, sd); sd = dots_chunk(r, 7u, sd);
  sd = dots_chunk(r, 8u, sd); sd = dots_chunk(r, 9u, sd); sd = dots_chunk(r, 10u, sd); sd = dots_chunk(r, 11u, sd);
  sd = dots_chunk(r, 12u, sd); sd = dots_chunk(r, 13u, sd); sd = dots_chunk(r, 14u, sd); sd = dots_chunk(r, 15u, sd);
  return vec2f(hsum(sd[0]), hsum(sd[1]));
}

fn dots_chunk(r: u32, m: u32, sd: mat2x4f) -> mat2x4f {
  if (m >= NM) {
    return sd;
  }
  let x = x_reg[r * MC + m];
  let y = y_reg[r * MC + m];
  let a = a_cur[m];
  let bb = b_cur[m];
  return mat2x4f(fma(x[0], a[0], fma(x[1], a[1], fma(x[2], a[2], fma(x[3], a[3], sd[0])))),
                 fma(y[0], bb[0], fma(y[1], bb[1], fma(y[2], bb[2], fma(y[3], bb[3], sd[1])))));
}

// The dots of own rows 4g .. 4g + 3: scores in the first column, dO·v in the second.
fn dots4(g: u32) -> mat4x2f {
  return mat4x2f(dots(4u * g), dots(4u * g + 1u), dots(4u * g + 2u), dots(4u * g + 3u));
}

// g1_r += ds_r · a_cur, and (with_p) g2_r += p_r · b_cur.
fn update(r: u32, with_p: bool) {
  if (r >= ROWS) {
    return;
  }
  let ds = c_ds[r / 4u][r % 4u];
  let pr = c_p[r / 4u][r % 4u];
  update_chunk(r, 0u, ds, pr, with_p); update_chunk(r, 1u, ds, pr, with_p); update_chunk(r, 2u, ds, pr, with_p); update_chunk(r, 3u, ds, pr, with_p);
  update_chunk(r, 4u, ds, pr, with_p); update_chunk(r, 5u, ds, pr, with_p); update_chunk(r, 6u, ds, pr, with_p); update_chunk(r, 7u, ds, pr, with_p);
  update_chunk(r, 8u, ds, pr, with_p); update_chunk(r, 9u, ds, pr, with_p); update_chunk(r, 10u, ds, pr, with_p); update_chunk(r, 11u, ds, pr, with_p);
  update_chunk(r, 12u, ds, pr, with_p); update_chunk(r, 13u, ds, pr, with_p); update_chunk(r, 14u, ds, pr, with_p); update_chunk(r, 15u, ds, pr, with_p);
}

fn update_chunk(r: u32, m: u32, ds: f32, pr: f32, with_p: bool) {
  if (m >= NM) {
    return;
  }
  g1[r * MC + m] = g1[r * MC + m] + a_cur[m] * ds;
  if (with_p) {
    g2[r * MC + m] = g2[r * MC + m] + b_cur[m] * pr;
  }
}

fn update_all(with_p: bool) {
  update(0u, with_p); update(1u, with_p); update(2u, with_p); update(3u, with_p);
  update(4u, with_p); update(5u, with_p); update(6u, with_p); update(7u, with_p);
}

// ---- dQ ---------------------------------------------------------------------------------------

// Key j (tile slot `slot`) against own query rows i0 .. i0 + ROWS − 1.
fn dq_key(b: u32, hk: u32, i0: u32, j: u32, slot: u32, in_range: bool) {
  let jc = min(j, p.T - 1u);
  let kb = kv_base(b, jc, hk);
  other_chunk(0u, true, kb, slot); other_chunk(1u, true, kb, slot); other_chunk(2u, true, kb, slot); other_chunk(3u, true, kb, slot);
  other_chunk(4u, true, kb, slot); other_chunk(5u, true, kb, slot); other_chunk(6u, true, kb, slot); other_chunk(7u, true, kb, slot);
  other_chunk(8u, true, kb, slot); other_chunk(9u, true, kb, slot); other_chunk(10u, true, kb, slot); other_chunk(11u, true, kb, slot);
  other_chunk(12u, true, kb, slot); other_chunk(13u, true, kb, slot); other_chunk(14u, true, kb, slot); other_chunk(15u, true, kb, slot);
  let seg_j = seg_of(b, jc);
  dq_group(0u, i0, j, seg_j, in_range);
  if (ROWS > 4u) {
    dq_group(1u, i0, j, seg_j, in_range);
  }
  update_all(false);
}

// ds for own query rows 4g .. 4g + 3 against key j.
fn dq_group(g: u32, i0: u32, j: u32, seg_j: i32, in_range: bool) {
  let sd = transpose(dots4(g));   // [0] scores, [1] dO·v
  let row = vec4u(i0 + 4u * g) + vec4u(0u, 1u, 2u, 3u);
  let ok = vec4<bool>(in_range) & (vec4u(j) <= row) & (vec4u(j + p.window) > row) & (vec4i(seg_j) == seg_row[g]);
  let pr = select(vec4f(0.0), exp2(sd[0] - st_lse[g]), ok);
  c_ds[g] = pr * (sd[1] - st_dlt[g]);
}

// Store own row r (= row0 + r, if < T) of dq = g1 · scale.
fn store_dq(r: u32, b: u32, row0: u32, h: u32) {
  if (r >= ROWS || row0 + r >= p.T) {
    return;
  }
  let base = row_base(b, row0 + r, p.Hq, h);
  dq_chunk(r, 0u, base); dq_chunk(r, 1u, base); dq_chunk(r, 2u, base); dq_chunk(r, 3u, base);
  dq_chunk(r, 4u, base); dq_chunk(r, 5u, base); dq_chunk(r, 6u, base); dq_chunk(r, 7u, base);
  dq_chunk(r, 8u, base); dq_chunk(r, 9u, base); dq_chunk(r, 10u, base); dq_chunk(r, 11u, base);
  dq_chunk(r, 12u, base); dq_chunk(r, 13u, base); dq_chunk(r, 14u, base); dq_chunk(r, 15u, base);
}

fn dq_chunk(r: u32, m: u32, base: u32) {
  if (m >= NM) {
    return;
  }
  let g = g1[r * MC + m] * p.scale;
  if (4u * m < D4) { dq[base + 4u * m] = g[0]; }
  if (4u * m + 1u < D4) { dq[base + 4u * m + 1u] = g[1]; }
  if (4u * m + 2u < D4) { dq[base + 4u * m + 2u] = g[2]; }
  if (4u * m + 3u < D4) { dq[base + 4u * m + 3u] = g[3]; }
}

@compute @workgroup_size(WG)
fn dq_main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wid.z;
  let h = wid.y;
  let hk = h / (p.Hq / p.Hkv);
  let r0 = wid.x * WG * ROWS;
  let i0 = r0 + lid.x * ROWS;
  let len = seq_len(b);

  // One call per group of four rows: the per-row arrays are only ever indexed by constants.
  let kend = max(init_group(0u, b, i0, len, h, true), init_group(1u, b, i0, len, h, true));
  load_own_all(true, b, i0, h);

  if (TILED) {
    let kend_wg = min(r0 + WG * ROWS, len);   // uniform
    for (var j0 = window_start(r0); j0 < kend_wg; j0 += BC) {
      workgroupBarrier();
      for (var e = lid.x; e < BC * D4; e += WG) {
        let src = kv_base(b, min(j0 + e / D4, p.T - 1u), hk) + e % D4;
        a_tile[e] = k[src];
        b_tile[e] = v[src];
      }
      workgroupBarrier();
      for (var c = 0u; c < BC; c++) {
        dq_key(b, hk, i0, j0 + c, c, j0 + c < kend);
      }
    }
  } else {
    for (var j = window_start(i0); j < kend; j++) {
      dq_key(b, hk, i0, j, 0u, true);
    }
  }

  store_dq(0u, b, i0, h); store_dq(1u, b, i0, h); store_dq(2u, b, i0, h); store_dq(3u, b, i0, h);
  store_dq(4u, b, i0, h); store_dq(5u, b, i0, h); store_dq(6u, b, i0, h); store_dq(7u, b, i0, h);
}

// ---- dK, dV -----------------------------------------------------------------------------------

// Query row i of head h (tile slot `slot`) against own key rows j0 .. j0 + ROWS − 1.
fn dkdv_query(b: u32, h: u32, j0: u32, i: u32, slot: u32, in_range: bool) {
  let ic = min(i, p.T - 1u);
  let qb = qo_base(b, ic, h);
  other_chunk(0u, false, qb, slot); other_chunk(1u, false, qb, slot); other_chunk(2u, false, qb, slot); other_chunk(3u, false, qb, slot);
  other_chunk(4u, false, qb, slot); other_chunk(5u, false, qb, slot); other_chunk(6u, false, qb, slot); other_chunk(7u, false, qb, slot);
  other_chunk(8u, false, qb, slot); other_chunk(9u, false, qb, slot); other_chunk(10u, false, qb, slot); other_chunk(11u, false, qb, slot);
  other_chunk(12u, false, qb, slot); other_chunk(13u, false, qb, slot); other_chunk(14u, false, qb, slot); other_chunk(15u, false, qb, slot);
  var st: vec2f;
  if (TILED) {
    st = w_tile[slot];
  } else {
    st = ws[(b * p.Hq + h) * p.T + ic];
  }
  let seg_i = seg_of(b, ic);
  dkdv_group(0u, j0, i, seg_i, st, in_range);
  if (ROWS > 4u) {
    dkdv_group(1u, j0, i, seg_i, st, in_range);
  }
  update_all(true);
}

// p and ds for own key rows 4g .. 4g + 3 against query row i (st = its LSE·log2 e and Δ).
fn dkdv_group(g: u32, j0: u32, i: u32, seg_i: i32, st: vec2f, in_range: bool) {
  let sd = transpose(dots4(g));   // [0] scores, [1] dO·v
  let key = vec4u(j0 + 4u * g) + vec4u(0u, 1u, 2u, 3u);
  let ok = vec4<bool>(in_range) & (vec4u(i) >= key) & (vec4u(i) < key + p.window) & (vec4i(seg_i) == seg_row[g]);
  let pr = select(vec4f(0.0), exp2(sd[0] - st.x), ok);
  c_p[g] = pr;
  c_ds[g] = pr * (sd[1] - st.y);
}

// Store own row r (= row0 + r, if < T) of dk = g1 · scale and dv = g2.
fn store_dkdv(r: u32, b: u32, row0: u32, hk: u32) {
  if (r >= ROWS || row0 + r >= p.T) {
    return;
  }
  let base = row_base(b, row0 + r, p.Hkv, hk);
  dkdv_chunk(r, 0u, base); dkdv_chunk(r, 1u, base); dkdv_chunk(r, 2u, base); dkdv_chunk(r, 3u, base);
  dkdv_chunk(r, 4u, base); dkdv_chunk(r, 5u, base); dkdv_chunk(r, 6u, base); dkdv_chunk(r, 7u, base);
  dkdv_chunk(r, 8u, base); dkdv_chunk(r, 9u, base); dkdv_chunk(r, 10u, base); dkdv_chunk(r, 11u, base);
  dkdv_chunk(r, 12u, base); dkdv_chunk(r, 13u, base); dkdv_chunk(r, 14u, base); dkdv_chunk(r, 15u, base);
}

fn dkdv_chunk(r: u32, m: u32, base: u32) {
  if (m >= NM) {
    return;
  }
  let gk = g1[r * MC + m] * p.scale;
  let gv = g2[r * MC + m];
  for (var c = 0u; c < 4u; c++) {
    if (4u * m + c < D4) {
      dk[base + 4u * m + c] = gk[c];
      dv[base + 4u * m + c] = gv[c];
    }
  }
}

@compute @workgroup_size(WG)
fn dkdv_main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wid.z;
  let hk = wid.y;
  let G = p.Hq / p.Hkv;
  let r0 = wid.x * WG * ROWS;
  let j0 = r0 + lid.x * ROWS;
  let len = seq_len(b);

  // A padding key is seen by no live row: it gets segment −2, which no row has.
  let any_live = max(init_group(0u, b, j0, len, 0u, false), init_group(1u, b, j0, len, 0u, false)) > 0u;
  load_own_all(false, b, j0, hk);
  // Query rows past the last own key's window (j0 + ROWS − 1 + W) see none of these keys.
  let iend = select(0u, min(len, j0 + ROWS - 1u + p.window), any_live);
  let iend_wg = min(len, r0 + WG * ROWS - 1u + p.window);   // uniform

  // The G query heads of the group in order, each over the query rows that can see these keys.
  for (var hh = 0u; hh < G; hh++) {
    let h = hk * G + hh;
    if (TILED) {
      for (var i0 = r0; i0 < iend_wg; i0 += BC) {   // uniform
        workgroupBarrier();
        for (var e = lid.x; e < BC * D4; e += WG) {
          let src = qo_base(b, min(i0 + e / D4, p.T - 1u), h) + e % D4;
          a_tile[e] = q[src];
          b_tile[e] = dout[src];
        }
        for (var c = lid.x; c < BC; c += WG) {
          w_tile[c] = ws[(b * p.Hq + h) * p.T + min(i0 + c, p.T - 1u)];
        }
        workgroupBarrier();
        for (var c = 0u; c < BC; c++) {
          dkdv_query(b, h, j0, i0 + c, c, i0 + c < iend);
        }
      }
    } else {
      for (var i = j0; i < iend; i++) {
        dkdv_query(b, h, j0, i, 0u, true);
      }
    }
  }

  store_dkdv(0u, b, j0, hk); store_dkdv(1u, b, j0, hk); store_dkdv(2u, b, j0, hk); store_dkdv(3u, b, j0, hk);
  store_dkdv(4u, b, j0, hk); store_dkdv(5u, b, j0, hk); store_dkdv(6u, b, j0, hk); store_dkdv(7u, b, j0, hk);
}
