// attention_fwd.wgsl — causal multi-head attention forward, flash style (online softmax).
//
//   O[b,t,h,:] = Σ_j softmax_j(scale · q[b,t,h,:]·k[b,j,hk,:]) · v[b,j,hk,:]   over allowed keys j
//   LSE[b,h,t] = log Σ_j exp(scale · q·k)                                    (natural log)
//
// Shapes (row-major, the layout a fused QKV projection produces, no transposes):
//   q, O  [B, T, Hq, D]     k, v  [B, T, Hkv, D]     LSE [B, Hq, T]
//   grouped-query attention: query head h reads kv head hk = h / (Hq / Hkv).
// Legend: B batch, T time, Hq query heads, Hkv key/value heads, D head dim (D4 = D / 4 vec4s,
// NM = ceil(D / 16) mat4x4 chunks; a partial last chunk is zero-padded on load).
//
// Allowed keys for query row t (mask_mode), always also t − W < j (the sliding window of W keys,
// t itself included; W = p.window in [1, T], T meaning unlimited):
//   0 causal           j ≤ t
//   1 padded batch     j ≤ t, and rows t ≥ lengths[b] are padding         (mask = lengths i32 [B])
//   2 packed batch     j ≤ t and seg[b,j] == seg[b,t]; seg < 0 is padding (mask = segment ids i32 [B, T])
// Segments are contiguous runs, so index distance is position distance inside a segment and the
// window needs no per-segment positions. A padding row writes O = 0 and LSE = 0. Every other row
// sees at least itself, so l > 0.
//
// Departures from the textbook (FlashAttention-2):
//   - Register tiles: one invocation owns ROWS (1..8) consecutive query rows and keeps their q
//     and output accumulators as mat4x4 chunks, so every k/v element it loads feeds ROWS rows.
//     Chunks are indexed by constants only (one explicit call per row and per chunk, no loops),
//     so compilers keep them in registers; on llvmpipe a storage load costs ~10 FMAs and a private
//     array indexed at run time costs as much, which this layout avoids.
//   - Online softmax one key at a time, four rows side by side in the lanes of a vec4; scores in
//     base 2 (q is pre-multiplied by scale·log2 e, exp2 everywhere); LSE written as natural log.
//   - TILED = false (software adapters): each invocation walks its own keys t0 − W + 1 .. t
//     straight from storage, no shared memory, no barriers. TILED = true (real GPUs): the
//     workgroup walks key blocks of BC from its first row's window start to its last row,
//     staging each K/V block in workgroup memory. Keys before every row's window are skipped.
//   - Masked probabilities are selected to 0 and the running max starts at a finite −3e38, so
//     no inf − inf can appear even under fast-math.
// Grid: x = ceil(T / (WG · ROWS)) row blocks, y = Hq, z = B.

override D4: u32 = 16u;      // head dim / 4 (D ≤ 256)
override WG: u32 = 16u;      // invocations per workgroup
override ROWS: u32 = 4u;     // query rows per invocation (1..8)
override BC: u32 = 16u;      // TILED only: keys per staged block
override TILED: bool = false;
override NM: u32 = (D4 + 3u) / 4u;   // mat4x4 chunks per row (≤ MC)

// Chunk slots per row: D ≤ 256. Chunks 8..15 serve D > 128 only; below, they fold away once NM
// is set, though llvmpipe still spends some compile time on them (~10–25% more here at D = 64).
const MC: u32 = 16u;
const NEG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;

struct Params {
  T: u32,
  Hq: u32,
  Hkv: u32,
  mask_mode: u32,   // 0 causal, 1 lengths, 2 segments
  scale: f32,
  window: u32,      // W: keys per query row, itself included; in [1, T] (T = unlimited)
}

@group(0) @binding(0) var<storage, read> q: array<vec4f>;      // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<vec4f>;      // [B, T, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<vec4f>;      // [B, T, Hkv, D]
@group(0) @binding(3) var<storage, read> mask: array<i32>;     // lengths [B] | segment ids [B, T] | unused
@group(0) @binding(4) var<storage, read_write> out: array<vec4f>; // [B, T, Hq, D]
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;   // [B, Hq, T]
@group(0) @binding(6) var<uniform> p: Params;

// [BC, D] key and value blocks; one row when not TILED, so the untiled kernel reserves nothing.
var<workgroup> k_tile: array<vec4f, select(1u, BC, TILED) * D4>;
var<workgroup> v_tile: array<vec4f, select(1u, BC, TILED) * D4>;

var<private> q_reg: array<mat4x4f, 8 * MC>;   // [row][chunk]: q · scale · log2 e
var<private> acc: array<mat4x4f, 8 * MC>;     // [row][chunk]: Σ_j p_j v_j (unnormalized)
var<private> kc: array<mat4x4f, MC>;          // the current key, by chunk
var<private> vc: array<mat4x4f, MC>;          // the current value, by chunk
// Per-row scalars, rows 4g .. 4g + 3 in the lanes of entry g.
var<private> m_run: array<vec4f, 2>;          // running max of the scores (base 2)
var<private> l_run: array<vec4f, 2>;          // running Σ exp2(s − m_run)
var<private> seg_row: array<vec4i, 2>;        // segment id; −2 for a dead row (past T, padding)
var<private> alpha: array<vec4f, 2>;          // this key's rescale of the accumulators
var<private> prob: array<vec4f, 2>;           // this key's probability

fn kv_base(b: u32, j: u32, hk: u32) -> u32 {
  return ((b * p.T + j) * p.Hkv + hk) * D4;
}

fn seg_of(b: u32, t: u32) -> i32 {
  if (p.mask_mode == 2u) {
    return mask[b * p.T + t];
  }
  return 0;
}

// Column c (a vec4 of head dims) of a k or v row at vec4 offset `base`, or of tile slot `slot`;
// zero past D.
fn col_k(base: u32, slot: u32, c: u32) -> vec4f {
  let cc = min(c, D4 - 1u);
  var x: vec4f;
  if (TILED) {
    x = k_tile[slot * D4 + cc];
  } else {
    x = k[base + cc];
  }
  return select(vec4f(0.0), x, c < D4);
}

fn col_v(base: u32, slot: u32, c: u32) -> vec4f {
  let cc = min(c, D4 - 1u);
  var x: vec4f;
  if (TILED) {
    x = v_tile[slot * D4 + cc];
  } else {
    x = v[base + cc];
  }
  return select(vec4f(0.0), x, c < D4);
}

// Chunk m of the current key and value; no-op for m ≥ NM.
fn load_kv_chunk(m: u32, base: u32, slot: u32) {
  if (m >= NM) {
    return;
  }
  kc[m] = mat4x4f(col_k(base, slot, 4u * m), col_k(base, slot, 4u * m + 1u), col_k(base, slot, 4u * m + 2u), col_k(base, slot, 4u * m + 3u));
  vc[m] = mat4x4f(col_v(base, slot, 4u * m), col_v(base, slot, 4u * m + 1u), col_v(base, slot, 4u * m + 2u), col_v(base, slot, 4u * m + 3u));
}

// Chunks are called out one by one like rows, never looped over: whether a compiler unrolls a
// loop over them depends on its heuristics (llvmpipe's differ with ROWS and D and, when they
// decline, index the register arrays at run time or take minutes to compile).
fn load_kv(base: u32, slot: u32) {
  load_kv_chunk(0u, base, slot); load_kv_chunk(1u, base, slot); load_kv_chunk(2u, base, slot); load_kv_chunk(3u, base, slot);
  load_kv_chunk(4u, base, slot); load_kv_chunk(5u, base, slot); load_kv_chunk(6u, base, slot); load_kv_chunk(7u, base, slot);
  load_kv_chunk(8u, base, slot); load_kv_chunk(9u, base, slot); load_kv_chunk(10u, base, slot); load_kv_chunk(11u, base, slot);
  load_kv_chunk(12u, base, slot); load_kv_chunk(13u, base, slot); load_kv_chunk(14u, base, slot); load_kv_chunk(15u, base, slot);
}

// Score of row r against the current key (base 2); 0 for r ≥ ROWS (folded away: ROWS is constant).
fn score(r: u32) -> f32 {
  if (r >= ROWS) {
    return 0.0;
  }
  var sv = score_chunk(r, 0u, vec4f(0.0));
  sv = score_chunk(r, 1u, sv); sv = score_chunk(r, 2u, sv); sv = score_chunk(r, 3u, sv);
  sv = score_chunk(r, 4u, sv); sv = score_chunk(r, 5u, sv); sv = score_chunk(r, 6u, sv); sv = score_chunk(r, 7u, sv);
  sv = score_chunk(r, 8u, sv); sv = score_chunk(r, 9u, sv); sv = score_chunk(r, 10u, sv); sv = score_chunk(r, 11u, sv);
  sv = score_chunk(r, 12u, sv); sv = score_chunk(r, 13u, sv); sv = score_chunk(r, 14u, sv); sv = score_chunk(r, 15u, sv);
  return sv.x + sv.y + sv.z + sv.w;
}

fn score_chunk(r: u32, m: u32, sv: vec4f) -> vec4f {
  if (m >= NM) {
    return sv;
  }
  let a = q_reg[r * MC + m];
  let b = kc[m];
  return fma(a[0], b[0], fma(a[1], b[1], fma(a[2], b[2], fma(a[3], b[3], sv))));
}

fn accumulate(r: u32) {
  if (r >= ROWS) {
    return;
  }
  let a = alpha[r / 4u][r % 4u];
  let pr = prob[r / 4u][r % 4u];
  acc_chunk(r, 0u, a, pr); acc_chunk(r, 1u, a, pr); acc_chunk(r, 2u, a, pr); acc_chunk(r, 3u, a, pr);
  acc_chunk(r, 4u, a, pr); acc_chunk(r, 5u, a, pr); acc_chunk(r, 6u, a, pr); acc_chunk(r, 7u, a, pr);
  acc_chunk(r, 8u, a, pr); acc_chunk(r, 9u, a, pr); acc_chunk(r, 10u, a, pr); acc_chunk(r, 11u, a, pr);
  acc_chunk(r, 12u, a, pr); acc_chunk(r, 13u, a, pr); acc_chunk(r, 14u, a, pr); acc_chunk(r, 15u, a, pr);
}

fn acc_chunk(r: u32, m: u32, a: f32, pr: f32) {
  if (m < NM) {
    acc[r * MC + m] = acc[r * MC + m] * a + vc[m] * pr;
  }
}

// Online-softmax update of row group g (rows 4g .. 4g + 3) for the current key's scores s.
fn softmax_step(g: u32, s: vec4f, ok: vec4<bool>) {
  let m_new = max(m_run[g], select(vec4f(NEG), s, ok));
  alpha[g] = exp2(m_run[g] - m_new);
  prob[g] = select(vec4f(0.0), exp2(s - m_new), ok);
  l_run[g] = l_run[g] * alpha[g] + prob[g];
  m_run[g] = m_new;
}

// Causal and sliding window: row − W < j ≤ row (j + W cannot overflow: j < T + BC, W ≤ T).
fn in_window(j: u32, row: vec4u) -> vec4<bool> {
  return (vec4u(j) <= row) & (vec4u(j + p.window) > row);
}

// First key row `row` may see: max(row + 1 − W, 0).
fn window_start(row: u32) -> u32 {
  return max(row + 1u, p.window) - p.window;
}

// One online-softmax step for key j (tile slot `slot`) and rows i0 .. i0 + ROWS − 1. The rows
// are called out one by one (not looped over) so that every chunk index is a constant.
fn attend_key(b: u32, hk: u32, i0: u32, j: u32, slot: u32, in_range: bool) {
  let jc = min(j, p.T - 1u);
  load_kv(kv_base(b, jc, hk), slot);
  let seg_j = vec4i(seg_of(b, jc));
  let lo = vec4f(score(0u), score(1u), score(2u), score(3u));
  let row = vec4u(i0) + vec4u(0u, 1u, 2u, 3u);
  softmax_step(0u, lo, vec4<bool>(in_range) & in_window(j, row) & (seg_j == seg_row[0]));
  if (ROWS > 4u) {
    let hi = vec4f(score(4u), score(5u), score(6u), score(7u));
    softmax_step(1u, hi, vec4<bool>(in_range) & in_window(j, row + 4u) & (seg_j == seg_row[1]));
  }
  accumulate(0u);
  accumulate(1u);
  accumulate(2u);
  accumulate(3u);
  accumulate(4u);
  accumulate(5u);
  accumulate(6u);
  accumulate(7u);
}

// Rows 4g .. 4g + 3 of this invocation (starting at i0): segment ids (−2 when dead), the
// running max and sum; returns one past the last live row (0 if none).
fn init_group(g: u32, b: u32, i0: u32, len: u32) -> u32 {
  let rows = vec4u(i0 + 4u * g) + vec4u(0u, 1u, 2u, 3u);
  let rc = min(rows, vec4u(p.T - 1u));
  let seg = vec4i(seg_of(b, rc.x), seg_of(b, rc.y), seg_of(b, rc.z), seg_of(b, rc.w));
  let live = (vec4u(4u * g) + vec4u(0u, 1u, 2u, 3u) < vec4u(ROWS)) & (rows < vec4u(len)) & (seg >= vec4i(0));
  seg_row[g] = select(vec4i(-2), seg, live);
  m_run[g] = vec4f(NEG);
  l_run[g] = vec4f(0.0);
  let ends = select(vec4u(0u), rows + 1u, live);
  return max(max(ends.x, ends.y), max(ends.z, ends.w));
}

// LSE of rows 4g .. 4g + 3 (natural log; 0 for a dead row), those below T.
fn store_lse(g: u32, b: u32, h: u32, i0: u32) {
  let l = select(vec4f(0.0), (m_run[g] + log2(l_run[g])) * LN2, seg_row[g] != vec4i(-2));
  for (var c = 0u; c < 4u; c++) {
    let r = 4u * g + c;
    if (r < ROWS && i0 + r < p.T) {
      lse[(b * p.Hq + h) * p.T + i0 + r] = l[c];
    }
  }
}

// Load row i0 + r of q (scaled) into registers and clear its accumulators; no-op for r ≥ ROWS.
fn load_row(r: u32, b: u32, h: u32, i0: u32, qs: f32) {
  if (r >= ROWS) {
    return;
  }
  let qb = ((b * p.T + min(i0 + r, p.T - 1u)) * p.Hq + h) * D4;
  load_q_chunk(r, 0u, qb, qs); load_q_chunk(r, 1u, qb, qs); load_q_chunk(r, 2u, qb, qs); load_q_chunk(r, 3u, qb, qs);
  load_q_chunk(r, 4u, qb, qs); load_q_chunk(r, 5u, qb, qs); load_q_chunk(r, 6u, qb, qs); load_q_chunk(r, 7u, qb, qs);
  load_q_chunk(r, 8u, qb, qs); load_q_chunk(r, 9u, qb, qs); load_q_chunk(r, 10u, qb, qs); load_q_chunk(r, 11u, qb, qs);
  load_q_chunk(r, 12u, qb, qs); load_q_chunk(r, 13u, qb, qs); load_q_chunk(r, 14u, qb, qs); load_q_chunk(r, 15u, qb, qs);
}

fn col_q(qb: u32, c: u32) -> vec4f {
  return select(vec4f(0.0), q[qb + min(c, D4 - 1u)], c < D4);
}

fn load_q_chunk(r: u32, m: u32, qb: u32, qs: f32) {
  if (m < NM) {
    q_reg[r * MC + m] = mat4x4f(col_q(qb, 4u * m), col_q(qb, 4u * m + 1u), col_q(qb, 4u * m + 2u), col_q(qb, 4u * m + 3u)) * qs;
    acc[r * MC + m] = mat4x4f();
  }
}

// Write row i0 + r of O (normalized; zeros for a dead row); no-op for r ≥ ROWS or past T.
fn store_row(r: u32, b: u32, h: u32, i0: u32) {
  let i = i0 + r;
  if (r >= ROWS || i >= p.T) {
    return;
  }
  let inv_l = select(0.0, 1.0 / l_run[r / 4u][r % 4u], seg_row[r / 4u][r % 4u] != -2);
  let ob = ((b * p.T + i) * p.Hq + h) * D4;
  store_chunk(r, 0u, ob, inv_l); store_chunk(r, 1u, ob, inv_l); store_chunk(r, 2u, ob, inv_l); store_chunk(r, 3u, ob, inv_l);
  store_chunk(r, 4u, ob, inv_l); store_chunk(r, 5u, ob, inv_l); store_chunk(r, 6u, ob, inv_l); store_chunk(r, 7u, ob, inv_l);
  store_chunk(r, 8u, ob, inv_l); store_chunk(r, 9u, ob, inv_l); store_chunk(r, 10u, ob, inv_l); store_chunk(r, 11u, ob, inv_l);
  store_chunk(r, 12u, ob, inv_l); store_chunk(r, 13u, ob, inv_l); store_chunk(r, 14u, ob, inv_l); store_chunk(r, 15u, ob, inv_l);
}

fn store_chunk(r: u32, m: u32, ob: u32, inv_l: f32) {
  if (m >= NM) {
    return;
  }
  let a = acc[r * MC + m] * inv_l;
  if (4u * m < D4) { out[ob + 4u * m] = a[0]; }
  if (4u * m + 1u < D4) { out[ob + 4u * m + 1u] = a[1]; }
  if (4u * m + 2u < D4) { out[ob + 4u * m + 2u] = a[2]; }
  if (4u * m + 3u < D4) { out[ob + 4u * m + 3u] = a[3]; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wid.z;
  let h = wid.y;
  let hk = h / (p.Hq / p.Hkv);
  let r0 = wid.x * WG * ROWS;     // first row of the workgroup
  let i0 = r0 + lid.x * ROWS;     // first row of this invocation

  var len = p.T;
  if (p.mask_mode == 1u) {
    len = u32(clamp(mask[b], 0, i32(p.T)));
  }
  // Rows' segments; a dead row (past ROWS or T, padding) gets −2, which no key has. One call per
  // group of four rows: the per-row arrays are only ever indexed by constants.
  let kend = max(init_group(0u, b, i0, len), init_group(1u, b, i0, len));   // one past the last key any row may see
  let qs = p.scale * LOG2E;
  load_row(0u, b, h, i0, qs);
  load_row(1u, b, h, i0, qs);
  load_row(2u, b, h, i0, qs);
  load_row(3u, b, h, i0, qs);
  load_row(4u, b, h, i0, qs);
  load_row(5u, b, h, i0, qs);
  load_row(6u, b, h, i0, qs);
  load_row(7u, b, h, i0, qs);

  if (TILED) {
    let kend_wg = min(r0 + WG * ROWS, len);   // uniform: keys the workgroup can need
    for (var j0 = window_start(r0); j0 < kend_wg; j0 += BC) {
      workgroupBarrier();
      for (var e = lid.x; e < BC * D4; e += WG) {
        let src = kv_base(b, min(j0 + e / D4, p.T - 1u), hk) + e % D4;
        k_tile[e] = k[src];
        v_tile[e] = v[src];
      }
      workgroupBarrier();
      for (var c = 0u; c < BC; c++) {
        attend_key(b, hk, i0, j0 + c, c, j0 + c < kend);
      }
    }
  } else {
    for (var j = window_start(i0); j < kend; j++) {
      attend_key(b, hk, i0, j, 0u, true);
    }
  }

  store_lse(0u, b, h, i0);
  store_lse(1u, b, h, i0);
  store_row(0u, b, h, i0);
  store_row(1u, b, h, i0);
  store_row(2u, b, h, i0);
  store_row(3u, b, h, i0);
  store_row(4u, b, h, i0);
  store_row(5u, b, h, i0);
  store_row(6u, b, h, i0);
  store_row(7u, b, h, i0);
}
