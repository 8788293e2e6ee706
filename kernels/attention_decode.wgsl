// attention_decode.wgsl — one new query per sequence against a KV cache with ragged lengths.
//
//   out[b,h,:] = Σ_{n_b − W ≤ j < n_b} softmax_j(scale · q[b,h,:]·k[b,j,hk,:]) · v[b,j,hk,:],  n_b = lengths[b]
//
// Shapes: q, out [B, Hq, D]; k_cache, v_cache [B, Tmax, Hkv, D]; lengths i32 [B] (clamped to
// [0, Tmax]; the new token's key and value are expected already written at row n_b − 1, so the
// query sits at position n_b − 1 and its sliding window of W keys, itself included, is rows
// n_b − W .. n_b − 1; W = p.window in [1, Tmax], Tmax meaning unlimited).
// Legend: B batch, Tmax cache rows, Hq query heads, Hkv kv heads (hk = h / (Hq / Hkv)), D head dim
// (D4 = D / 4, NM = ceil(D / 16) mat4x4 chunks, zero-padded past D).
//
// Split-K in one pass (flash-decoding without a second launch): one workgroup per (b, h); lane s
// takes the contiguous key range [j_lo + s·chunk, j_lo + (s+1)·chunk) of the window (j_lo =
// n_b − W, or 0) and runs the online softmax over it one key at a time, keeping q and its
// accumulator as mat4x4 chunks in registers (indexed by constants only, chunks called out one by
// one as in attention_fwd.wgsl). The WG partial states (m_s, l_s, acc_s) are merged in workgroup
// memory after a single barrier, in lane order — a fixed order, so the result is bitwise
// reproducible. A sequence with n_b = 0 gets zeros. WG · (D + 2) floats of workgroup memory: the
// host picks WG to fit the device (attentionDecodeSplits).
// Grid: x = Hq, y = B.

override D4: u32 = 16u;      // head dim / 4 (D ≤ 256)
override WG: u32 = 16u;      // key splits per (b, h), one per invocation
override NM: u32 = (D4 + 3u) / 4u;

const MC: u32 = 16u;         // chunk slots: D ≤ 256
const NEG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

struct Params {
  Tmax: u32,
  Hq: u32,
  Hkv: u32,
  scale: f32,
  window: u32,      // W: keys the query sees, itself included; in [1, Tmax] (Tmax = unlimited)
}

@group(0) @binding(0) var<storage, read> q: array<vec4f>;         // [B, Hq, D]
@group(0) @binding(1) var<storage, read> k_cache: array<vec4f>;   // [B, Tmax, Hkv, D]
@group(0) @binding(2) var<storage, read> v_cache: array<vec4f>;   // [B, Tmax, Hkv, D]
@group(0) @binding(3) var<storage, read> lengths: array<i32>;     // [B]
@group(0) @binding(4) var<storage, read_write> out: array<vec4f>; // [B, Hq, D]
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> part_ml: array<vec2f, WG>;        // (m_s, l_s) per split
var<workgroup> part_acc: array<vec4f, WG * D4>;  // acc_s per split, [WG, D]

var<private> q_reg: array<mat4x4f, MC>;   // q · scale · log2 e, by chunk
var<private> acc: array<mat4x4f, MC>;     // Σ_j p_j v_j (unnormalized), by chunk

fn col(buf: u32, base: u32, c: u32) -> vec4f {
  let i = base + min(c, D4 - 1u);
  var x: vec4f;
  switch (buf) {
    case 0u: { x = q[i]; }
    case 1u: { x = k_cache[i]; }
    default: { x = v_cache[i]; }
  }
  return select(vec4f(0.0), x, c < D4);
}

// Chunk m (columns 4m .. 4m + 3) of the row at vec4 offset `base` of q (0), k (1) or v (2).
fn chunk(buf: u32, base: u32, m: u32) -> mat4x4f {
  return mat4x4f(col(buf, base, 4u * m), col(buf, base, 4u * m + 1u), col(buf, base, 4u * m + 2u), col(buf, base, 4u * m + 3u));
}

// Per-chunk steps, called out chunk by chunk (never looped over) so that q_reg and acc are only
// indexed by constants and stay in registers; each is a no-op for m ≥ NM.
fn init_chunk(m: u32, qb: u32) {
  if (m < NM) {
    q_reg[m] = chunk(0u, qb, m) * (p.scale * LOG2E);
    acc[m] = mat4x4f();
  }
}

fn score_chunk(m: u32, base: u32, sv: vec4f) -> vec4f {
  if (m >= NM) {
    return sv;
  }
  let a = q_reg[m];
  let kk = chunk(1u, base, m);
  return fma(a[0], kk[0], fma(a[1], kk[1], fma(a[2], kk[2], fma(a[3], kk[3], sv))));
}

fn acc_chunk(m: u32, base: u32, alpha: f32, pr: f32) {
  if (m < NM) {
    acc[m] = acc[m] * alpha + chunk(2u, base, m) * pr;
  }
}

// Copy chunk m of this split's accumulator to workgroup memory.
fn park_chunk(m: u32, s_id: u32) {
  for (var c = 0u; c < 4u; c++) {
    if (m < NM && 4u * m + c < D4) {
      part_acc[s_id * D4 + 4u * m + c] = acc[m][c];
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let h = wid.x;
  let b = wid.y;
  let hk = h / (p.Hq / p.Hkv);
  let s_id = lid.x;
  let n = u32(clamp(lengths[b], 0, i32(p.Tmax)));
  let j_lo = n - min(n, p.window);   // the window's first key
  let chunk_len = (n - j_lo + WG - 1u) / WG;
  let j_begin = min(j_lo + s_id * chunk_len, n);
  let j_end = min(j_begin + chunk_len, n);

  let qb = (b * p.Hq + h) * D4;
  init_chunk(0u, qb); init_chunk(1u, qb); init_chunk(2u, qb); init_chunk(3u, qb);
  init_chunk(4u, qb); init_chunk(5u, qb); init_chunk(6u, qb); init_chunk(7u, qb);
  init_chunk(8u, qb); init_chunk(9u, qb); init_chunk(10u, qb); init_chunk(11u, qb);
  init_chunk(12u, qb); init_chunk(13u, qb); init_chunk(14u, qb); init_chunk(15u, qb);
  var m_run = NEG;
  var l_run = 0.0;
  for (var j = j_begin; j < j_end; j++) {
    let base = ((b * p.Tmax + j) * p.Hkv + hk) * D4;
    var sv = vec4f(0.0);
    sv = score_chunk(0u, base, sv); sv = score_chunk(1u, base, sv); sv = score_chunk(2u, base, sv); sv = score_chunk(3u, base, sv);
    sv = score_chunk(4u, base, sv); sv = score_chunk(5u, base, sv); sv = score_chunk(6u, base, sv); sv = score_chunk(7u, base, sv);
    sv = score_chunk(8u, base, sv); sv = score_chunk(9u, base, sv); sv = score_chunk(10u, base, sv); sv = score_chunk(11u, base, sv);
    sv = score_chunk(12u, base, sv); sv = score_chunk(13u, base, sv); sv = score_chunk(14u, base, sv); sv = score_chunk(15u, base, sv);
    let s = sv.x + sv.y + sv.z + sv.w;
    let m_new = max(m_run, s);
    let alpha = exp2(m_run - m_new);
    let pr = exp2(s - m_new);
    l_run = l_run * alpha + pr;
    m_run = m_new;
    acc_chunk(0u, base, alpha, pr); acc_chunk(1u, base, alpha, pr); acc_chunk(2u, base, alpha, pr); acc_chunk(3u, base, alpha, pr);
    acc_chunk(4u, base, alpha, pr); acc_chunk(5u, base, alpha, pr); acc_chunk(6u, base, alpha, pr); acc_chunk(7u, base, alpha, pr);
    acc_chunk(8u, base, alpha, pr); acc_chunk(9u, base, alpha, pr); acc_chunk(10u, base, alpha, pr); acc_chunk(11u, base, alpha, pr);
    acc_chunk(12u, base, alpha, pr); acc_chunk(13u, base, alpha, pr); acc_chunk(14u, base, alpha, pr); acc_chunk(15u, base, alpha, pr);
  }

  // Merge the splits: out = Σ_s w_s acc_s / Σ_s w_s l_s with w_s = exp2(m_s − max_s m_s).
  // An empty split has l_s = 0 and acc_s = 0, so it adds nothing whatever its weight.
  part_ml[s_id] = vec2f(m_run, l_run);
  park_chunk(0u, s_id); park_chunk(1u, s_id); park_chunk(2u, s_id); park_chunk(3u, s_id);
  park_chunk(4u, s_id); park_chunk(5u, s_id); park_chunk(6u, s_id); park_chunk(7u, s_id);
  park_chunk(8u, s_id); park_chunk(9u, s_id); park_chunk(10u, s_id); park_chunk(11u, s_id);
  park_chunk(12u, s_id); park_chunk(13u, s_id); park_chunk(14u, s_id); park_chunk(15u, s_id);
  workgroupBarrier();
  var m_all = NEG;
  for (var s = 0u; s < WG; s++) {
    m_all = max(m_all, part_ml[s].x);
  }
  var l_all = 0.0;
  for (var s = 0u; s < WG; s++) {
    l_all += exp2(part_ml[s].x - m_all) * part_ml[s].y;
  }
  let inv_l = select(0.0, 1.0 / l_all, n > 0u);
  for (var d = s_id; d < D4; d += WG) {
    var o = vec4f(0.0);
    for (var s = 0u; s < WG; s++) {
      o = fma(vec4f(exp2(part_ml[s].x - m_all)), part_acc[s * D4 + d], o);
    }
    out[qb + d] = o * inv_l;
  }
}
