// policy_loss.wgsl — fused policy loss over the vocabulary: per-token log-probability of the
// target, entropy, loss, and d(loss)/d(logits), for SFT cross-entropy, importance sampling, PPO
// (optionally dual-clip) and GRPO (PPO + β·k3 KL to a reference policy), with an entropy bonus,
// a token mask and token-mean / sequence-mean / sum aggregation.
//
// Legend: N tokens (rows), V vocabulary, S sequences.
//
// Entry points, dispatched in this order by src/ops/policy_loss.ts:
//   prepare       one workgroup:     per-token gradient scale (mask · 1/normalizer) and the
//                                    per-token inputs packed into scratch (4 floats per token)
//   main          one row per group: pass 1 online max / sum-exp / entropy over V, pass 2 writes
//                                    dlogits; also logprobs, entropy and loss per token
//   main_inplace  the same, writing the gradient over the logits
//   main_rows     one row per invocation, the same two passes over vec4s (V % 4 == 0): for
//   main_rows_inplace                the software adapters (see below)
//   main_rows_any the same for any V: chunks of four logits from the row's start, then the
//   main_rows_any_inplace            last V % 4 one at a time
//   main_tex      main_rows_any reading the logits through a texture (llvmpipe; see below), in
//                                    place or not alike
//   stats         one workgroup:     total loss, clip fraction, approx KL, mean entropy, by a
//                                    fixed-order tree (no atomics, so bitwise reproducible)
//
// Per token i with lp = log softmax(z)[t], r = exp(lp − old), A the advantage, H the entropy:
//   cross_entropy        ℓ = −lp
//   importance_sampling  ℓ = −r·A                       (old is a constant: stop-grad)
//   ppo                  ℓ = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A), and with dual-clip c > 1
//                        ℓ = −max(that min, c·A) where A < 0
//   grpo                 ppo + β·k3,  k3 = exp(ref − lp) − (ref − lp) − 1
//   every mode           ℓ −= ent_coef · H                (entropy bonus)
// Total loss L = Σ_i scale_i · ℓ_i with scale_i = w_i / normalizer: token-mean divides by the
// number of unmasked tokens (w ≠ 0); sequence-mean by (unmasked tokens of i's sequence) × (number
// of sequences with any unmasked token); sum by 1.
// Gradient: dL/dz_j = scale·(g·(δ_jt − p_j) + ent_coef·p_j·(log p_j + H)),  g = dℓ/dlp.
//
// Row blocks: the main pass may run once per block of rows, the logits (and dlogits) holding
// only the block's rows [0, block_rows) for tokens row0 + [0, block_rows): the host then makes
// each block's logits just before, and reads its gradient just after (logits [N, V] need not fit
// one storage binding). prepare and stats run over all N tokens. Per row, the same arithmetic.
//
// Departures from the textbook: the max, sum-exp and the entropy's Σ p·(z − m) are carried
// together online (one read of the row for all three, one more read for the gradient); the
// entropy uses Σ e^(z−m)(z−m) rather than Σ p·z so it does not cancel for large logits.
//
// Accuracy: vocabularies of 10^5 logits per row lose nothing to the tail. A plain running f32
// sum drops it: one row of V = 50257 zeros with a single logit 20 has Σ e^(z−m) = 1 + 50256·e^-20,
// and 1 + e^-20 rounds to 1, so that sum gave log p = 0 (true −1.0358e-4) and an entropy 4.8% low.
// Here (Acc) the logits equal to the running max are counted, not summed (each adds exactly 1),
// the rest are summed with Neumaier compensation (one compensated step per four logits, on the
// sum-exp and the entropy's sum together), and the log of the total is taken by log_sum, whose
// log1p form keeps a peaked row's tiny entropy to f32's relative precision. The order stays fixed
// (no atomics), so results are still bitwise reproducible per layout.
//
// A target outside [0, V) gives NaN log-prob, and NaN loss and gradient row unless the token is masked.
// Masked tokens (w = 0) get loss 0 and an exactly zero gradient row whatever their inputs.

override WG: u32 = 64;    // threads per row in main / main_inplace (power of two); rows per workgroup in main_rows*
override RWG: u32 = 256;  // threads of the single workgroup of prepare / stats (power of two)
override ALIGNED: bool = false;  // main_tex: V % 4 == 0, so every row starts on a texel

const MODE_CE: u32 = 0u;
const MODE_IS: u32 = 1u;
const MODE_PPO: u32 = 2u;
const MODE_GRPO: u32 = 3u;
const AGG_TOKEN_MEAN: u32 = 0u;
const AGG_SEQUENCE_MEAN: u32 = 1u;
const AGG_SUM: u32 = 2u;
const FLT_LOWEST: f32 = -3.4028234663852886e38;

struct Params {
  n: u32,          // tokens
  v: u32,          // vocabulary
  s: u32,          // sequences (sequence-mean), else 1
  mode: u32,       // MODE_*
  agg: u32,        // AGG_*
  rows_x: u32,     // rows along x of the grid of main (workgroups) / main_rows (invocations)
  eps_low: f32,
  eps_high: f32,
  dual_clip: f32,  // c > 1 enables dual-clip; 0 disables
  kl_beta: f32,
  ent_coef: f32,
  nan: f32,        // a quiet NaN: WGSL has no NaN literal and rejects constant bitcasts to one
  tex_w: u32,      // main_tex: texels per row of logits_tex
  row0: u32,       // main*: token of the first row of logits (row blocks, see below)
  block_rows: u32, // main*: rows of logits to process
}

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;    // [N, V]; gradient in place
@group(0) @binding(1) var<storage, read> targets: array<i32>;         // [N]
@group(0) @binding(2) var<storage, read_write> scratch: array<f32>;   // [4N + S]: (scale, old, adv, ref) per token, then counts
@group(0) @binding(3) var<storage, read_write> dlogits: array<f32>;   // [N, V]
@group(0) @binding(4) var<storage, read_write> logprobs: array<f32>;  // [N]
@group(0) @binding(5) var<storage, read_write> entropy: array<f32>;   // [N]
@group(0) @binding(6) var<storage, read_write> loss: array<f32>;      // [N] ℓ_i (0 where masked)
@group(0) @binding(7) var<storage, read_write> stats_out: array<f32>; // [6]
@group(0) @binding(8) var<storage, read> weights: array<f32>;         // [N], 0 = masked
@group(0) @binding(9) var<storage, read> seq_ids: array<i32>;         // [N] in [0, S)
@group(0) @binding(10) var<storage, read> old_lp: array<f32>;         // [N]
@group(0) @binding(11) var<storage, read> adv: array<f32>;            // [N]
@group(0) @binding(12) var<storage, read> ref_lp: array<f32>;         // [N]
// main_rows*: the logits' and dlogits' buffers as [N, V/4] vec4s (bound instead of 0 and 3);
// main_tex: dlogits4 is the dlogits' buffer as [⌈N·V/4⌉] vec4s (any V).
@group(0) @binding(13) var<storage, read_write> logits4: array<vec4f>;
@group(0) @binding(14) var<storage, read_write> dlogits4: array<vec4f>;
// main_tex: the logits as rgba32float texels, texel k = logits[4k .. 4k+3] at (k % tex_w, k / tex_w)
// (the last texel padded past N·V with values never used).
@group(0) @binding(15) var logits_tex: texture_2d<f32>;
@group(0) @binding(16) var<uniform> p: Params;

// ---------------------------------------------------------------------------------------------
// The per-token loss of the mode and its derivative g = dℓ/dlp (without the entropy bonus).

struct Terms {
  loss: f32,
  g: f32,
  clipped: f32,  // 1 where a clip zeroed the surrogate's gradient
  k3: f32,
}

fn token_terms(lp: f32, old: f32, a: f32, ref_l: f32) -> Terms {
  if (p.mode == MODE_CE) {
    return Terms(-lp, -1.0, 0.0, 0.0);
  }
  let r = exp(lp - old);
  let s1 = r * a;  // also d(r·A)/dlp
  if (p.mode == MODE_IS) {
    return Terms(-s1, -s1, 0.0, 0.0);
  }
  let s2 = clamp(r, 1.0 - p.eps_low, 1.0 + p.eps_high) * a;
  var obj = s1;
  var dobj = s1;
  var clipped = 0.0;
  if (s2 < s1) {  // ties take the unclipped branch (as tf.minimum's gradient does)
    obj = s2;
    dobj = 0.0;
    clipped = 1.0;
  }
  if (p.dual_clip > 0.0 && a < 0.0 && p.dual_clip * a > obj) {
    obj = p.dual_clip * a;
    dobj = 0.0;
    clipped = 1.0;
  }
  var t = Terms(-obj, -dobj, clipped, 0.0);
  if (p.mode == MODE_GRPO) {
    let d = ref_l - lp;
    let e = exp(d);
    t.k3 = e - d - 1.0;
    t.loss += p.kl_beta * t.k3;
    t.g += p.kl_beta * (1.0 - e);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// prepare: the normalizer and the per-token scale. Counts are integers, so their order is moot.

var<workgroup> red_u: array<u32, RWG>;
var<workgroup> red_u2: array<u32, RWG>;

@compute @workgroup_size(RWG)
fn prepare(@builtin(local_invocation_index) tid: u32) {
  let n = p.n;
  var unmasked = 0u;  // token-mean: unmasked tokens
  var nonempty = 0u;  // sequence-mean: sequences with an unmasked token
  if (p.agg == AGG_SEQUENCE_MEAN) {
    // One thread per sequence scans every token: O(S·N / RWG) per thread, no atomics.
    for (var s = tid; s < p.s; s += RWG) {
      var c = 0u;
      for (var i = 0u; i < n; i++) {
        c += select(0u, 1u, seq_ids[i] == i32(s) && weights[i] != 0.0);
      }
      scratch[4u * n + s] = f32(c);
      nonempty += select(0u, 1u, c > 0u);
    }
  } else if (p.agg == AGG_TOKEN_MEAN) {
    for (var i = tid; i < n; i += RWG) {
      unmasked += select(0u, 1u, weights[i] != 0.0);
    }
  }
  red_u[tid] = unmasked;
  red_u2[tid] = nonempty;
  for (var k = RWG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red_u[tid] += red_u[tid + k];
      red_u2[tid] += red_u2[tid + k];
    }
  }
  storageBarrier();  // the per-sequence counts above are read by other threads below
  workgroupBarrier();  // and so is the last level of the tree
  let total = f32(red_u[0]);
  let seqs = f32(red_u2[0]);
  for (var i = tid; i < n; i += RWG) {
    let w = weights[i];
    var scale = 0.0;
    if (w != 0.0) {
      if (p.agg == AGG_TOKEN_MEAN) {
        scale = w / total;
      } else if (p.agg == AGG_SEQUENCE_MEAN) {
        let s = seq_ids[i];
        if (s >= 0 && u32(s) < p.s) {  // a token outside every sequence counts as masked
          scale = w / (scratch[4u * n + u32(s)] * seqs);
        }
      } else {
        scale = w;
      }
    }
    // Unused inputs are bound to `weights` by the host; token_terms ignores them per mode.
    scratch[4u * i] = scale;
    scratch[4u * i + 1u] = old_lp[i];
    scratch[4u * i + 2u] = adv[i];
    scratch[4u * i + 3u] = ref_lp[i];
  }
}

// ---------------------------------------------------------------------------------------------
// main: one workgroup per row.

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_c: array<f32, WG>;
var<workgroup> red_sums: array<vec4f, WG>;  // (hi, lo) of each thread's Acc

// A row's running sums, kept so that long vocabularies lose no tail (see "Accuracy" above):
//   m   the largest logit so far
//   c   how many logits equal m (an integer: their e^(z−m) = 1 each, counted, not summed)
//   hi  (u, t) = (Σ e^(z−m), Σ e^(z−m)·(z−m)) over the logits below m, in f32 ...
//   lo  ... and their Neumaier compensations: u + lo.x, t + lo.y are the sums to ~f32 precision
// An empty set is c = 0 (a set with any finite logit counts its max).
struct Acc {
  m: f32,
  c: f32,
  hi: vec2f,
  lo: vec2f,
}

// A function, not a module-scope const: naga's pipeline-constant pass rejects a const of this
// struct type ("depends on [..] which has not been processed yet", wgpu in Deno 2.9).
fn acc_empty() -> Acc {
  return Acc(FLT_LOWEST, 0.0, vec2f(0.0), vec2f(0.0));
}

// hi + lo += x: one Neumaier step on (u, t) together. The error of each f32 addition is recovered
// exactly and carried in lo, so a sum over 10^5 terms errs by ~1 ulp, not ~10^5·ε/2.
fn acc_add(a: Acc, x: vec2f) -> Acc {
  let s = a.hi + x;
  let err = select((x - s) + a.hi, (a.hi - s) + x, abs(a.hi) >= abs(x));
  return Acc(a.m, a.c, s, a.lo + err);
}

// The same set relative to a larger max m2 > a.m: every logit is now below the max, so the count
// joins u (c·e^(m−m2) + u·e^(m−m2)) and t gains (m − m2)·(that), as t' = e^(m−m2)·(t + (m − m2)·s).
fn acc_rescale(a: Acc, m2: f32) -> Acc {
  let e = exp(a.m - m2);
  let d = a.m - m2;
  let cu = a.c + a.hi.x;
  return Acc(m2, 0.0, e * vec2f(cu, a.hi.y + d * cu), e * vec2f(a.lo.x, a.lo.y + d * a.lo.x));
}

// Two disjoint sets, merged (a fixed order: the tree of main).
fn merge(a: Acc, b: Acc) -> Acc {
  if (b.c == 0.0) {
    return a;
  }
  if (a.c == 0.0) {
    return b;
  }
  let m = max(a.m, b.m);
  var x = a;
  var y = b;
  if (x.m < m) {
    x = acc_rescale(x, m);
  }
  if (y.m < m) {
    y = acc_rescale(y, m);
  }
  return acc_add(Acc(m, x.c + y.c, x.hi, x.lo + y.lo), y.hi);
}

// A set extended by four more logits z: one max test (and rarely a rescale, after the first few
// steps) per four, one exp per logit, and one compensated step for the four.
fn online4(acc: Acc, z: vec4f) -> Acc {
  var a = acc;
  let cm = max(max(z.x, z.y), max(z.z, z.w));
  if (cm > a.m) {
    a = acc_rescale(a, cm);
  }
  let d = z - a.m;
  let e = exp(d);
  let top = z == vec4f(a.m);
  let eu = select(e, vec4f(0.0), top);
  a.c += dot(select(vec4f(0.0), vec4f(1.0), top), vec4f(1.0));
  return acc_add(a, vec2f((eu.x + eu.y) + (eu.z + eu.w), dot(e, d)));
}

// A set extended by one more logit z.
fn online1(acc: Acc, z: f32) -> Acc {
  var a = acc;
  if (z > a.m) {  // rare after the first few elements: rescale to the new max
    a = acc_rescale(a, z);
  }
  if (z == a.m) {
    a.c += 1.0;
    return a;
  }
  let d = z - a.m;
  let e = exp(d);
  return acc_add(a, vec2f(e, e * d));
}

// 2·atanh(w) = log((1 + w) / (1 − w)) for |w| ≤ 1/3, by its series to w^15 (relative error
// < 2e-9, below f32's): a log whose accuracy does not rest on the adapter's log(), which WGSL
// only bounds to 2^-21 absolute near 1 (about 5e-7: the whole budget of a log-prob here).
fn atanh2(w: f32) -> f32 {
  let w2 = w * w;
  let q = 1.0 / 11.0 + w2 * (1.0 / 13.0 + w2 * (1.0 / 15.0));
  return 2.0 * w * (1.0 + w2 * (1.0 / 3.0 + w2 * (1.0 / 5.0 + w2 * (1.0 / 7.0 + w2 * (1.0 / 9.0 + w2 * q)))));
}

const LN2_HI: f32 = 0.693145751953125;     // ln 2 to 16 bits: k·LN2_HI is exact for |k| < 256
const LN2_LO: f32 = 1.4286068203094173e-6; // ln 2 − LN2_HI

// log(c + u) of a row's sums (c ≥ 1 logits at the max, u the rest): for c = 1, u < 1 as
// log1p(u) = 2·atanh(u / (2 + u)), accurate relative to u however small (a peaked row's entropy
// is of the order of u); else from the exponent and mantissa of s = c + u, s = 2^k·f with
// f in [√½, √2), log s = k·ln 2 + 2·atanh((f − 1)/(f + 1)). Non-finite or empty sums: log().
fn log_sum(c: f32, u: f32) -> f32 {
  if (c == 1.0 && u < 1.0) {
    return atanh2(u / (2.0 + u));
  }
  let s = c + u;
  let bits = bitcast<u32>(s);
  let ex = (bits >> 23u) & 0xffu;
  if (c < 1.0 || ex == 0u || ex == 255u) {
    return log(s);
  }
  var f = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);  // in [1, 2)
  var k = f32(i32(ex) - 127);
  if (f > 1.4142135) {
    f *= 0.5;
    k += 1.0;
  }
  return k * LN2_HI + (k * LN2_LO + atanh2((f - 1.0) / (f + 1.0)));
}

struct Row {
  base: u32,   // the row's first element: an f32 index (main, main_rows_any, main_tex), a vec4 index (main_rows)
  m: f32,      // the largest logit
  ls: f32,     // log Σ e^(z−m): log p_j = (z_j − m) − ls
  h: f32,      // entropy
  t: u32,      // target
  scale: f32,  // 0 where masked
  g: f32,      // dℓ/dlp, NaN for an unmasked out-of-range target
}

// Pass 1 over row `lrow` of the block and the per-token outputs. Reads every logit of the row
// before returning (its barriers separate these reads from the in-place writes of pass 2).
fn row_forward(lrow: u32, tid: u32) -> Row {
  let v = p.v;
  let base = lrow * v;
  let row = p.row0 + lrow;
  var a = acc_empty();
  if (tid < v) {
    a = Acc(logits[base + tid], 1.0, vec2f(0.0), vec2f(0.0));
  }
  // Chunks of four strided elements: one max test (and rarely a rescale) per chunk, so lanes
  // seldom diverge; then one exp per element.
  var j = tid + WG;
  for (; j + 3u * WG < v; j += 4u * WG) {
    a = online4(a, vec4f(logits[base + j], logits[base + j + WG], logits[base + j + 2u * WG], logits[base + j + 3u * WG]));
  }
  for (; j < v; j += WG) {
    a = online1(a, logits[base + j]);
  }
  let ti = targets[row];
  let zt = logits[base + select(0u, u32(ti), ti >= 0 && u32(ti) < v)];
  red_m[tid] = a.m;
  red_c[tid] = a.c;
  red_sums[tid] = vec4f(a.hi, a.lo);
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      let x = red_sums[tid];
      let y = red_sums[tid + k];
      let r = merge(Acc(red_m[tid], red_c[tid], x.xy, x.zw), Acc(red_m[tid + k], red_c[tid + k], y.xy, y.zw));
      red_m[tid] = r.m;
      red_c[tid] = r.c;
      red_sums[tid] = vec4f(r.hi, r.lo);
    }
  }
  workgroupBarrier();
  return finish_row(row, base, Acc(red_m[0], red_c[0], red_sums[0].xy, red_sums[0].zw), zt, ti, tid == 0u);
}

// The row's log-sum-exp, entropy and per-token outputs from its sums (Acc) and its target's
// logit zt (any value when the target ti is out of range); `store`: this invocation stores
// logprobs, entropy and loss. log p = (zt − m) − log Σ e^(z−m), never zt − (m + log Σ): rounding
// m + log Σ to f32 would cost up to half an ulp of the max (4e-6 at z = 80).
fn finish_row(row: u32, base: u32, a: Acc, zt: f32, ti: i32, store: bool) -> Row {
  let valid = ti >= 0 && u32(ti) < p.v;
  let u = a.hi.x + a.lo.x;
  let ls = log_sum(a.c, u);
  let h = ls - (a.hi.y + a.lo.y) / (a.c + u);
  let nan = p.nan;
  // zt − m is exact when the two are within a factor of two, else it rounds: its error (Knuth's
  // two-sum) goes into ls, so the only rounding of a size of lp's ulp is the last subtraction.
  let d = zt - a.m;
  let bb = d - zt;
  let derr = (zt - (d - bb)) + (-a.m - bb);
  let lp = select(nan, d - (ls - derr), valid);
  let scale = scratch[4u * row];
  let terms = token_terms(lp, scratch[4u * row + 1u], scratch[4u * row + 2u], scratch[4u * row + 3u]);
  let masked = scale == 0.0;
  if (store) {
    logprobs[row] = lp;
    entropy[row] = h;
    loss[row] = select(terms.loss - p.ent_coef * h, 0.0, masked);
  }
  let g = select(terms.g, nan, !valid);
  return Row(base, a.m, ls, h, select(0u, u32(ti), valid), scale, select(g, 0.0, masked));
}

// dL/dz_j for the element j of the row whose logit is z.
fn grad_at(r: Row, j: u32, z: f32) -> f32 {
  var d = grad_soft(r, vec4f(z)).x;
  if (j == r.t) {
    d += r.scale * r.g;
  }
  return d;
}

// The softmax part of dL/dz for four logits z of the row (the target's δ term is added apart).
fn grad_soft(r: Row, z: vec4f) -> vec4f {
  let lz = (z - r.m) - r.ls;  // log p
  let sg = r.scale * r.g;
  return exp(lz) * (-sg + r.scale * p.ent_coef * (lz + r.h));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let lrow = wid.x + wid.y * p.rows_x;
  if (lrow >= p.block_rows) {
    return;  // uniform: the whole workgroup leaves
  }
  let r = row_forward(lrow, tid);
  if (r.scale == 0.0) {
    for (var j = tid; j < p.v; j += WG) {
      dlogits[r.base + j] = 0.0;
    }
    return;
  }
  for (var j = tid; j < p.v; j += WG) {
    dlogits[r.base + j] = grad_at(r, j, logits[r.base + j]);
  }
}

@compute @workgroup_size(WG)
fn main_inplace(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let lrow = wid.x + wid.y * p.rows_x;
  if (lrow >= p.block_rows) {
    return;
  }
  let r = row_forward(lrow, tid);
  if (r.scale == 0.0) {
    for (var j = tid; j < p.v; j += WG) {
      logits[r.base + j] = 0.0;
    }
    return;
  }
  for (var j = tid; j < p.v; j += WG) {
    logits[r.base + j] = grad_at(r, j, logits[r.base + j]);
  }
}

// ---------------------------------------------------------------------------------------------
// main_rows: one row per invocation, for the software adapters (llvmpipe, SwiftShader). There a
// workgroup's invocations run as the SIMD lanes of one CPU thread and a barrier is a coroutine
// switch, so each lane owns a whole row: no reduction across lanes, no barrier, and the
// bookkeeping of a step (loop, indices, the max test) is paid once per four logits. Same two
// passes and formulas as main, over vec4s (V % 4 == 0; the host checks). Loads and stores cost
// per element there whatever their width, so both layouts move the same bytes; what this saves is
// everything around them. The sums run along the row in order: deterministic, though not bitwise
// equal to main.

// Pass 1 over row `lrow` of the block (four logits a step) and the per-token outputs.
fn row_forward4(lrow: u32) -> Row {
  let nv = p.v / 4u;
  let base = lrow * nv;
  let row = p.row0 + lrow;
  var mst = acc_empty();
  for (var j = 0u; j < nv; j++) {
    mst = online4(mst, logits4[base + j]);
  }
  let ti = targets[row];
  let tu = select(0u, u32(ti), ti >= 0 && u32(ti) < p.v);
  return finish_row(row, base, mst, logits4[base + tu / 4u][tu % 4u], ti, true);
}

// Pass 2's value for four logits z of row r: the softmax part of dL/dz, or 0 where masked (the
// target's δ term is added after the loop; it is 0 where masked).
fn grad4(r: Row, z: vec4f) -> vec4f {
  return select(grad_soft(r, z), vec4f(0.0), r.scale == 0.0);
}

// main_rows and main_rows_inplace differ only in the buffer pass 2 writes (WGSL cannot pass a
// storage buffer to a function, and binding one buffer twice for writing is not allowed).
@compute @workgroup_size(WG)
fn main_rows(@builtin(global_invocation_id) gid: vec3u) {
  let lrow = gid.x + gid.y * p.rows_x;
  if (lrow < p.block_rows) {
    let r = row_forward4(lrow);
    for (var j = 0u; j < p.v / 4u; j++) {
      dlogits4[r.base + j] = grad4(r, logits4[r.base + j]);
    }
    dlogits4[r.base + r.t / 4u][r.t % 4u] += r.scale * r.g;
  }
}

@compute @workgroup_size(WG)
fn main_rows_inplace(@builtin(global_invocation_id) gid: vec3u) {
  let lrow = gid.x + gid.y * p.rows_x;
  if (lrow < p.block_rows) {
    let r = row_forward4(lrow);
    for (var j = 0u; j < p.v / 4u; j++) {
      logits4[r.base + j] = grad4(r, logits4[r.base + j]);
    }
    logits4[r.base + r.t / 4u][r.t % 4u] += r.scale * r.g;
  }
}

// ---------------------------------------------------------------------------------------------
// main_rows_any: main_rows for any V, reading and writing single elements. A row starts at
// element lrow·V, on a vec4 boundary only when V % 4 == 0, so its chunks of four are built from
// single loads: chunk j is elements 4j .. 4j+3 of the row, then the last V % 4 elements follow
// one at a time (online1). For V % 4 == 0 that is main_rows' arithmetic exactly. The order
// depends only on V, never on where a row lies in the buffer, so row blocks change nothing.

// Pass 1 over row `lrow` of the block and the per-token outputs.
fn row_forward_any(lrow: u32) -> Row {
  let base = lrow * p.v;
  let nq = p.v / 4u;
  var mst = acc_empty();
  for (var j = 0u; j < nq; j++) {
    let e = base + 4u * j;
    mst = online4(mst, vec4f(logits[e], logits[e + 1u], logits[e + 2u], logits[e + 3u]));
  }
  for (var k = 4u * nq; k < p.v; k++) {
    mst = online1(mst, logits[base + k]);
  }
  let ti = targets[p.row0 + lrow];
  let tu = select(0u, u32(ti), ti >= 0 && u32(ti) < p.v);
  return finish_row(p.row0 + lrow, base, mst, logits[base + tu], ti, true);
}

// main_rows_any and main_rows_any_inplace differ only in the buffer pass 2 writes, as main_rows*.
@compute @workgroup_size(WG)
fn main_rows_any(@builtin(global_invocation_id) gid: vec3u) {
  let lrow = gid.x + gid.y * p.rows_x;
  if (lrow < p.block_rows) {
    let r = row_forward_any(lrow);
    for (var k = 0u; k < p.v; k++) {
      dlogits[r.base + k] = grad4(r, vec4f(logits[r.base + k])).x;
    }
    dlogits[r.base + r.t] += r.scale * r.g;
  }
}

@compute @workgroup_size(WG)
fn main_rows_any_inplace(@builtin(global_invocation_id) gid: vec3u) {
  let lrow = gid.x + gid.y * p.rows_x;
  if (lrow < p.block_rows) {
    let r = row_forward_any(lrow);
    for (var k = 0u; k < p.v; k++) {
      logits[r.base + k] = grad4(r, vec4f(logits[r.base + k])).x;
    }
    logits[r.base + r.t] += r.scale * r.g;
  }
}

// ---------------------------------------------------------------------------------------------
// main_tex: main_rows_any with every read of the logits a texel fetch from logits_tex, a copy
// the host makes first (Recorder.tempTexture). On Mesa's llvmpipe a storage-buffer load runs a
// loop over the SIMD lanes, with a bounds check, per component, while a texel fetch is a plain
// gather: reading a row through the texture costs about a tenth (measured), and the row is read
// twice. A row starts `off` = (lrow·V) % 4 elements into a texel, so each chunk of four is cut
// from two neighbouring texels (shift4; off is 0 for every row when V % 4 == 0). The gradient is
// stored to dlogits4 (bound rounded up to whole vec4s), which may be the logits' own buffer
// (nothing reads it). Same arithmetic in the same order as main_rows_any (and main_rows): bitwise
// the same results.

// Texel coordinates of texel k, and of the one after (c, as from tex_coord).
fn tex_coord(k: u32) -> vec2u {
  return vec2u(k % p.tex_w, k / p.tex_w);
}

fn tex_next(c: vec2u) -> vec2u {
  let wrap = c.x + 1u == p.tex_w;
  return vec2u(select(c.x + 1u, 0u, wrap), c.y + select(0u, 1u, wrap));
}

// Elements off .. off+3 of the eight in texels a, b (off < 4): selects, no dynamic indexing.
fn shift4(a: vec4f, b: vec4f, off: u32) -> vec4f {
  if (ALIGNED) {
    return a;
  }
  let lo = select(a, vec4f(a.yzw, b.x), off == 1u);
  let hi = select(vec4f(a.zw, b.xy), vec4f(a.w, b.xyz), off == 3u);
  return select(lo, hi, off >= 2u);
}

@compute @workgroup_size(WG)
fn main_tex(@builtin(global_invocation_id) gid: vec3u) {
  let lrow = gid.x + gid.y * p.rows_x;
  if (lrow < p.block_rows) {
    let row = p.row0 + lrow;
    let base = lrow * p.v;
    let off = base % 4u;
    let nq = p.v / 4u;
    let rest = p.v % 4u;
    let first = tex_coord(base / 4u);
    // Pass 1: chunk j from texels (base / 4 + j, + 1); then the last `rest` elements. The texel
    // after a row's last may lie past the texture (the last row): a fetch there returns some
    // value, used by no element of the row.
    var c = first;
    var a = textureLoad(logits_tex, c, 0);
    var mst = acc_empty();
    for (var j = 0u; j < nq; j++) {
      c = tex_next(c);
      let b = textureLoad(logits_tex, c, 0);
      mst = online4(mst, shift4(a, b, off));
      a = b;
    }
    let tail = shift4(a, textureLoad(logits_tex, tex_next(c), 0), off);
    for (var k = 0u; k < rest; k++) {
      mst = online1(mst, tail[k]);
    }
    let ti = targets[row];
    let tu = select(0u, u32(ti), ti >= 0 && u32(ti) < p.v);
    let r = finish_row(row, base, mst, textureLoad(logits_tex, tex_coord((base + tu) / 4u), 0)[(base + tu) % 4u], ti, true);
    // Pass 2 is element by element, so it runs over the texels the row covers as they lie:
    // whole ones [ka, kb) stored as vec4s, and at most three elements before and after them one
    // at a time (their texels hold the neighbouring rows' elements too: a component store writes
    // that component's memory alone).
    let end = base + p.v;
    let ka = (base + 3u) / 4u;
    let kb = max(ka, end / 4u);
    c = tex_coord(ka);
    for (var k = ka; k < kb; k++) {
      dlogits4[k] = grad4(r, textureLoad(logits_tex, c, 0));
      c = tex_next(c);
    }
    for (var e = base; e < min(4u * ka, end); e++) {
      dlogits4[e / 4u][e % 4u] = grad4(r, textureLoad(logits_tex, tex_coord(e / 4u), 0))[e % 4u];
    }
    for (var e = max(4u * kb, base); e < end; e++) {
      dlogits4[e / 4u][e % 4u] = grad4(r, textureLoad(logits_tex, tex_coord(e / 4u), 0))[e % 4u];
    }
    dlogits4[(base + tu) / 4u][(base + tu) % 4u] += r.scale * r.g;
  }
}

// ---------------------------------------------------------------------------------------------
// stats: [total loss, clip fraction, approx KL mean(old − lp), mean k3 to ref, mean entropy,
// unmasked tokens]. Means are over unmasked tokens; KL terms are 0 in modes without them.

var<workgroup> red_f: array<vec3f, RWG>;
var<workgroup> red_g: array<vec3f, RWG>;

@compute @workgroup_size(RWG)
fn stats(@builtin(local_invocation_index) tid: u32) {
  var a = vec3f(0.0);  // Σ scale·ℓ, clipped, unmasked
  var b = vec3f(0.0);  // Σ (old − lp), Σ k3, Σ H
  for (var i = tid; i < p.n; i += RWG) {
    let scale = scratch[4u * i];
    if (scale != 0.0) {
      let lp = logprobs[i];
      let old = scratch[4u * i + 1u];
      let terms = token_terms(lp, old, scratch[4u * i + 2u], scratch[4u * i + 3u]);
      a += vec3f(scale * loss[i], terms.clipped, 1.0);
      b += vec3f(select(old - lp, 0.0, p.mode == MODE_CE), terms.k3, entropy[i]);
    }
  }
  red_f[tid] = a;
  red_g[tid] = b;
  for (var k = RWG / 2u; k > 0u; k >>= 1u) {
    workgroupBarrier();
    if (tid < k) {
      red_f[tid] += red_f[tid + k];
      red_g[tid] += red_g[tid + k];
    }
  }
  workgroupBarrier();
  if (tid == 0u) {
    let f = red_f[0];
    let g = red_g[0];
    let inv = select(1.0 / f.z, 0.0, f.z == 0.0);
    stats_out[0] = f.x;
    stats_out[1] = f.y * inv;
    stats_out[2] = g.x * inv;
    stats_out[3] = g.y * inv;
    stats_out[4] = g.z * inv;
    stats_out[5] = f.z;
  }
}
