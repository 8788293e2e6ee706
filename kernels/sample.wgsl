// sample.wgsl — next-token sampling on the GPU: temperature, top-k, top-p (nucleus), greedy,
// with a counter-based generator (Philox4x32-10, bit-identical to src/util/rng.ts).
//
// Legend: B rows (sequences), V vocabulary.
//   logits [B, V] f32, keys [B, 2] u32 (stream, counter) — optional, tokens [B] i32,
//   logprobs [B] f32, logprobs_raw [B] f32
//
// One workgroup per row. With z_i = (x_i − max x) / T:
//   greedy (T ≤ 0):  token = argmax x (lowest index on ties); logprob = 0 (a point mass);
//   otherwise:       the kept set F is a prefix of the total order "larger logit first, lower
//                    index first on ties": the first min(k, V) entries (top-k; k = 0: all), cut
//                    to the shortest prefix whose mass Σ exp(z) reaches top_p · (mass of the
//                    top-k set) (top-p; p = 1: no cut). The token is drawn from exp(z) on F by
//                    inverse CDF in index order with u = philox(...) ∈ [0, 1), 24 bits.
//   logprobs     = log p(token) under that distribution: z_tok − log Σ_F exp(z)   (the policy's
//                  sampling distribution: temperature-scaled and filtered);
//   logprobs_raw = x_tok − logsumexp(x): the unfiltered log-probability at temperature 1.
//
// How it departs from the textbook: no sort. A prefix of the order is a threshold (tv, ti) on
// (key, index), key = the logit's bits mapped to an order-preserving u32: i is kept iff
// key_i > tv or (key_i = tv and i < ti). Top-k finds tv by bisection over the 32-bit keys
// (≤ 32 counting passes over the row) and, only when ties straddle the k-th place, ti by
// bisection over indices; top-p does the same with mass instead of counts, inside the top-k
// prefix, and F is the intersection of the two prefixes. Each pass is a strided, coalesced read
// of the row and a fixed-order tree reduction, so the result is deterministic; every mass is a
// fixed-order sum of non-negative terms, hence monotone in the threshold, which keeps the
// bisection exact. Cost in passes over the row: 3 for greedy or plain temperature sampling;
// + ~33 for top-k and + ~35 for top-p (a bisection takes log2 of the key range, ≤ 32 steps),
// + up to 17 more each only when ties straddle the cut; the bisections' passes take four
// elements per loop iteration (llvmpipe's per-invocation loop limit: top-k + top-p at
// V = 262144 fits). Top-p after a top-k of k ≤ KMAX first copies those k entries to workgroup
// memory (2 passes), and its bisection then reads only them: top-k + top-p costs about what
// top-k alone does. The draw walks contiguous chunks (one per thread) after a serial scan of the
// chunk sums, so the token follows index order.
//
// Log-probs are exact to f32 at any V: their normalizers count the entries at the max and sum
// the rest with Neumaier compensation, and log p = (x − m) − log Σ, never x − (m + log Σ) (see
// policy_loss.wgsl, whose log-probs the PPO ratio compares with these). The sums that decide the
// kept set and the draw stay plain (monotone, and matching the reference's order semantics).
//
// Random numbers: u = (philox4x32(counter, 0, stream, 0; seed, 0x7e87a11e).x >> 8) / 2^24 — the
// value `Rng.restore({ seed, stream, position: 4·counter }).nextFloat()` returns on the host.
// stream, counter = keys[row] when has_keys, else (stream_base + row, step).
// Non-finite logits: a row holding a NaN or +Inf, or no finite logit at all (−Inf masks some
// entries, not all), gets token −1 (NON_FINITE_TOKEN) and log-probs 0 instead of an arbitrary
// index: the host reports the model's non-finite output as such (NonFiniteError). The test is on
// the bits (exponent all ones), which no fast-math rewrite can drop.

override WG: u32 = 256; // threads per workgroup (one row); a power of two

struct Params {
  b: u32,           // rows B
  v: u32,           // vocabulary V
  nx: u32,          // workgroups along x
  seed: u32,
  step: u32,        // counter when !has_keys
  stream_base: u32, // stream of row 0 when !has_keys
  has_keys: u32,
  temperature: f32, // ≤ 0: greedy
  top_k: u32,       // 0 or ≥ V: no top-k
  top_p: f32,       // in (0, 1]; 1: no top-p
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> tokens: array<i32>;
@group(0) @binding(3) var<storage, read_write> logprobs: array<f32>;
@group(0) @binding(4) var<storage, read_write> logprobs_raw: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> red_u: array<u32, WG>;
var<workgroup> red_f: array<f32, WG>;

// ---- Philox4x32-10, as src/util/rng.ts (64-bit products from 16-bit halves: no u64 in WGSL).

fn mulhi(a: u32, b: u32) -> u32 {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let ll = al * bl;
  let lh = al * bh;
  let hl = ah * bl;
  let hh = ah * bh;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

fn philox4x32(c: vec4u, k: vec2u) -> vec4u {
  var x = c;
  var key = k;
  for (var r = 0u; r < 10u; r++) {
    let hi0 = mulhi(0xd2511f53u, x.x);
    let lo0 = 0xd2511f53u * x.x;
    let hi1 = mulhi(0xcd9e8d57u, x.z);
    let lo1 = 0xcd9e8d57u * x.z;
    x = vec4u(hi1 ^ x.y ^ key.x, lo1, hi0 ^ x.w ^ key.y, lo0);
    key += vec2u(0x9e3779b9u, 0xbb67ae85u);
  }
  return x;
}

// ---- Order-preserving keys: a < b as floats ⇔ okey(a) < okey(b) as u32.

fn okey(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn fkey(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u));
}

// ---- Workgroup reductions; results are uniform. Call in uniform control flow.

fn tree_u(tid: u32, op: u32) -> u32 {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      let a = red_u[tid];
      let b = red_u[tid + s];
      red_u[tid] = select(select(a + b, min(a, b), op == 1u), max(a, b), op == 2u);
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_u[0]);
  workgroupBarrier(); // red_u is overwritten by the next call
  return r;
}

fn sum_u(tid: u32, v: u32) -> u32 {
  red_u[tid] = v;
  return tree_u(tid, 0u);
}

fn min_u(tid: u32, v: u32) -> u32 {
  red_u[tid] = v;
  return tree_u(tid, 1u);
}

fn max_u(tid: u32, v: u32) -> u32 {
  red_u[tid] = v;
  return tree_u(tid, 2u);
}

fn sum_f(tid: u32, v: f32) -> f32 {
  red_f[tid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      red_f[tid] += red_f[tid + s];
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier();
  return r;
}

// ---- The row's passes. A prefix (tv, ti) keeps i iff key_i > tv or (key_i = tv and i < ti):
// (t, V) is {key ≥ t}, (t, 0) is {key > t}. The kept set is the intersection of two prefixes.

fn in_prefix(k: u32, i: u32, tv: u32, ti: u32) -> bool {
  return k > tv || (k == tv && i < ti);
}

// The strided passes below visit this thread's elements i = tid, tid + WG, ... four per loop
// iteration (then the last ≤ 3 one at a time), adding in the same order as one per iteration:
// llvmpipe stops an invocation's loops past 65535 iterations in all (checks.ts), and a top-k +
// top-p draw makes ~110 passes, so at V = 151936 one element per iteration would not fit.

// 1 where entry i (key k) lies in prefix (tv, ti) ∩ prefix (kv, ki), else 0.
fn in_both(k: u32, i: u32, tv: u32, ti: u32, kv: u32, ki: u32) -> u32 {
  return select(0u, 1u, in_prefix(k, i, tv, ti) && in_prefix(k, i, kv, ki));
}

// ---- The top-k set as a list: top-p's bisection inside a top-k of k ≤ KMAX entries reads
// those entries from workgroup memory, not the row (a pass costs k/WG, not V/WG). Filled by
// gather() in index order within each thread's stride, threads in order: a fixed order.

const KMAX: u32 = 1024u;
var<workgroup> list_x: array<f32, KMAX>;  // logits of the top-k entries
var<workgroup> list_i: array<u32, KMAX>;  // their indices
var<workgroup> list_len: u32;
var<private> listed: bool = false;        // count_prefix / mass_prefix read the list, not the row

// Entries of prefix (tv, ti) ∩ prefix (kv, ki) seen by this thread (strided).
fn count_prefix(tid: u32, base: u32, tv: u32, ti: u32, kv: u32, ki: u32) -> u32 {
  var c = 0u;
  if (listed) {
    for (var j = tid; j < list_len; j += WG) {
      c += in_both(okey(list_x[j]), list_i[j], tv, ti, kv, ki);
    }
    return c;
  }
  var i = tid;
  for (; i + 3u * WG < p.v; i += 4u * WG) {
    c += in_both(okey(logits[base + i]), i, tv, ti, kv, ki) + in_both(okey(logits[base + i + WG]), i + WG, tv, ti, kv, ki)
      + in_both(okey(logits[base + i + 2u * WG]), i + 2u * WG, tv, ti, kv, ki) + in_both(okey(logits[base + i + 3u * WG]), i + 3u * WG, tv, ti, kv, ki);
  }
  for (; i < p.v; i += WG) {
    c += in_both(okey(logits[base + i]), i, tv, ti, kv, ki);
  }
  return c;
}

// exp((x − m)/T) where entry i (logit x) lies in prefix (tv, ti) ∩ prefix (kv, ki), else 0.
// (A branch, not a select: outside a small top-k set the whole SIMD row skips the exp.)
fn mass_at(x: f32, i: u32, tv: u32, ti: u32, kv: u32, ki: u32, m: f32) -> f32 {
  let k = okey(x);
  if (in_prefix(k, i, tv, ti) && in_prefix(k, i, kv, ki)) {
    return exp((x - m) / p.temperature);
  }
  return 0.0;
}

// Mass Σ exp((x − m)/T) of prefix (tv, ti) ∩ prefix (kv, ki) seen by this thread (strided),
// a plain f32 sum in index order: monotone in the prefix, which the bisections need.
fn mass_prefix(tid: u32, base: u32, tv: u32, ti: u32, kv: u32, ki: u32, m: f32) -> f32 {
  var s = 0.0;
  if (listed) {
    for (var j = tid; j < list_len; j += WG) {
      s += mass_at(list_x[j], list_i[j], tv, ti, kv, ki, m);
    }
    return s;
  }
  var i = tid;
  for (; i + 3u * WG < p.v; i += 4u * WG) {
    s += mass_at(logits[base + i], i, tv, ti, kv, ki, m);
    s += mass_at(logits[base + i + WG], i + WG, tv, ti, kv, ki, m);
    s += mass_at(logits[base + i + 2u * WG], i + 2u * WG, tv, ti, kv, ki, m);
    s += mass_at(logits[base + i + 3u * WG], i + 3u * WG, tv, ti, kv, ki, m);
  }
  for (; i < p.v; i += WG) {
    s += mass_at(logits[base + i], i, tv, ti, kv, ki, m);
  }
  return s;
}

// Copies prefix (kv, ki) of the row (≤ KMAX entries) to the list and sets `listed`: a counting
// pass, an exclusive scan of the counts over threads, a pass that writes. Uniform control flow.
fn gather(tid: u32, base: u32, kv: u32, ki: u32) {
  red_u[tid] = count_prefix(tid, base, kv, ki, kv, ki);
  workgroupBarrier();
  if (tid == 0u) {
    var run = 0u;
    for (var t = 0u; t < WG; t++) {
      let c = red_u[t];
      red_u[t] = run;
      run += c;
    }
    list_len = min(run, KMAX);
  }
  workgroupBarrier();
  var o = red_u[tid];
  for (var i = tid; i < p.v; i += WG) {
    let x = logits[base + i];
    if (in_prefix(okey(x), i, kv, ki) && o < KMAX) {
      list_x[o] = x;
      list_i[o] = i;
      o++;
    }
  }
  workgroupBarrier();
  listed = true;
}

// ---- Accurate normalizers for the log-probs (the same scheme as policy_loss.wgsl's, which the
// PPO ratio compares them with): with m the row's max, entries at m add exactly 1 each and are
// counted; the rest are summed with Neumaier compensation; log(c + u) by log_sum.

var<workgroup> red_g: array<f32, WG>;

// (sum, compensation) += x: one Neumaier step.
fn comp_add(a: vec2f, x: f32) -> vec2f {
  let s = a.x + x;
  let err = select((x - s) + a.x, (a.x - s) + x, abs(a.x) >= abs(x));
  return vec2f(s, a.y + err);
}

// Σ over the workgroup of every thread's (sum, compensation), by a fixed-order tree of
// compensated additions; the result (sum + compensation) is uniform.
fn sum_comp(tid: u32, v: vec2f) -> f32 {
  red_f[tid] = v.x;
  red_g[tid] = v.y;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      let r = comp_add(vec2f(red_f[tid], red_g[tid] + red_g[tid + s]), red_f[tid + s]);
      red_f[tid] = r.x;
      red_g[tid] = r.y;
    }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_f[0]) + workgroupUniformLoad(&red_g[0]);
  workgroupBarrier();
  return r;
}

// 2·atanh(w) = log((1 + w)/(1 − w)) for |w| ≤ 1/3 by its series to w^15 (as policy_loss.wgsl).
fn atanh2(w: f32) -> f32 {
  let w2 = w * w;
  let q = 1.0 / 11.0 + w2 * (1.0 / 13.0 + w2 * (1.0 / 15.0));
  return 2.0 * w * (1.0 + w2 * (1.0 / 3.0 + w2 * (1.0 / 5.0 + w2 * (1.0 / 7.0 + w2 * (1.0 / 9.0 + w2 * q)))));
}

const LN2_HI: f32 = 0.693145751953125;     // ln 2 to 16 bits: k·LN2_HI is exact for |k| < 256
const LN2_LO: f32 = 1.4286068203094173e-6; // ln 2 − LN2_HI

// log(c + u) for c ≥ 1 entries at the max and u the rest (as policy_loss.wgsl's log_sum): log1p
// form for c = 1, u < 1; else s = 2^k·f, f in [√½, √2), k·ln 2 + 2·atanh((f − 1)/(f + 1)).
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
  var f = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
  var k = f32(i32(ex) - 127);
  if (f > 1.4142135) {
    f *= 0.5;
    k += 1.0;
  }
  return k * LN2_HI + (k * LN2_LO + atanh2((f - 1.0) / (f + 1.0)));
}

// a − b − l with the rounding error of a − b (Knuth's two-sum) moved into l, so only the last
// subtraction rounds at the result's ulp: a log-prob (x − m) − log Σ.
fn sub_log(a: f32, b: f32, l: f32) -> f32 {
  let d = a - b;
  let bb = d - a;
  let err = (a - (d - bb)) + (-b - bb);
  return d - (l - err);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wid.x + wid.y * p.nx;
  if (row >= p.b) {
    return;
  }
  let base = row * p.v;
  let V = p.v;

  // Largest and smallest key; log-sum-exp at temperature 1 for logprobs_raw.
  var kmax = 0u;
  var kmin = 0xffffffffu;
  var bad = 0u;
  for (var i = tid; i < V; i += WG) {
    let x = logits[base + i];
    let k = okey(x);
    kmax = max(kmax, k);
    kmin = min(kmin, k);
    let bits = bitcast<u32>(x);
    bad = max(bad, select(0u, 1u, (bits & 0x7f800000u) == 0x7f800000u && bits != 0xff800000u)); // NaN, +Inf
  }
  let hi0 = max_u(tid, kmax);
  let lo0 = min_u(tid, kmin);
  let m = fkey(hi0);
  // Uniform (reductions), so the early return keeps the workgroup's barriers in step.
  if (max_u(tid, bad) != 0u || bitcast<u32>(m) == 0xff800000u) {
    if (tid == 0u) {
      tokens[row] = -1;
      logprobs[row] = 0.0;
      logprobs_raw[row] = 0.0;
    }
    return;
  }
  // log Σ exp(x − m) at temperature 1, for logprobs_raw: the accurate normalizer.
  var c1 = 0u;
  var u1 = vec2f(0.0);
  for (var i = tid; i < V; i += WG) {
    let x = logits[base + i];
    if (x == m) {
      c1 += 1u;
    } else {
      u1 = comp_add(u1, exp(x - m));
    }
  }
  let ls1 = log_sum(f32(sum_u(tid, c1)), sum_comp(tid, u1));

  if (p.temperature <= 0.0) {
    // Greedy: the first index holding the largest logit.
    var first = 0xffffffffu;
    for (var i = tid; i < V; i += WG) {
      if (okey(logits[base + i]) == hi0) {
        first = i;
        break;
      }
    }
    let tok = min_u(tid, first);
    if (tid == 0u) {
      tokens[row] = i32(tok);
      logprobs[row] = 0.0;
      logprobs_raw[row] = sub_log(logits[base + tok], m, ls1);
    }
    return;
  }

  // Top-k: the prefix (kv, ki) of exactly k entries; (lo0, V) keeps everything.
  var kv = lo0;
  var ki = V;
  let k = p.top_k;
  if (k > 0u && k < V) {
    var lo = lo0;
    var hi = hi0;
    loop { // largest tv with |{key ≥ tv}| ≥ k
      if (lo >= hi) {
        break;
      }
      let d = hi - lo;
      let mid = lo + (d >> 1u) + (d & 1u);
      if (sum_u(tid, count_prefix(tid, base, mid, V, lo0, V)) >= k) {
        lo = mid;
      } else {
        hi = mid - 1u;
      }
    }
    kv = lo;
    // Ties at kv straddle the k-th place: keep the lowest indices among them.
    if (sum_u(tid, count_prefix(tid, base, kv, V, lo0, V)) > k) {
      var a = 1u;
      var b = V;
      loop { // smallest ti with |prefix(kv, ti)| ≥ k
        if (a >= b) {
          break;
        }
        let mid = a + (b - a) / 2u;
        if (sum_u(tid, count_prefix(tid, base, kv, mid, lo0, V)) >= k) {
          b = mid;
        } else {
          a = mid + 1u;
        }
      }
      ki = a;
    }
  }

  // Top-p: the shortest prefix (pv, pi) whose mass inside top-k reaches top_p · mass(top-k).
  var pv = lo0;
  var pi = V;
  if (p.top_p < 1.0) {
    if (k > 0u && k < V && k <= KMAX) {
      gather(tid, base, kv, ki);
    }
    let goal_p = p.top_p * sum_f(tid, mass_prefix(tid, base, lo0, V, kv, ki, m));
    var lo = kv;
    var hi = hi0;
    loop { // largest tv with mass({key ≥ tv} ∩ top-k) ≥ target
      if (lo >= hi) {
        break;
      }
      let d = hi - lo;
      let mid = lo + (d >> 1u) + (d & 1u);
      if (sum_f(tid, mass_prefix(tid, base, mid, V, kv, ki, m)) >= goal_p) {
        lo = mid;
      } else {
        hi = mid - 1u;
      }
    }
    pv = lo;
    // Several kept entries tie at pv: the lowest indices among them that reach the target.
    let ties = sum_u(tid, count_prefix(tid, base, pv, V, kv, ki)) - sum_u(tid, count_prefix(tid, base, pv, 0u, kv, ki));
    if (ties > 1u) {
      var a = 1u;
      var b = V;
      loop { // smallest ti with mass(prefix(pv, ti) ∩ top-k) ≥ target
        if (a >= b) {
          break;
        }
        let mid = a + (b - a) / 2u;
        if (sum_f(tid, mass_prefix(tid, base, pv, mid, kv, ki, m)) >= goal_p) {
          b = mid;
        } else {
          a = mid + 1u;
        }
      }
      pi = a;
    }
  }

  // Draw: thread t owns the contiguous indices [i0, i1); chunk sums, a serial scan, one walk.
  let len = (V + WG - 1u) / WG;
  let i0 = min(tid * len, V);
  let i1 = min(i0 + len, V);
  // s: the plain chunk sum the draw walks; (cf, uf): the accurate normalizer of the log-prob.
  var s = 0.0;
  var cf = 0u;
  var uf = vec2f(0.0);
  for (var i = i0; i < i1; i++) {
    let x = logits[base + i];
    let k = okey(x);
    if (in_prefix(k, i, kv, ki) && in_prefix(k, i, pv, pi)) {
      let e = exp((x - m) / p.temperature);
      s += e;
      if (x == m) {
        cf += 1u;
      } else {
        uf = comp_add(uf, e);
      }
    }
  }
  red_f[tid] = s;
  workgroupBarrier();
  if (tid == 0u) {
    var run = 0.0;
    for (var t = 0u; t < WG; t++) {
      run += red_f[t];
      red_f[t] = run; // inclusive prefix
    }
  }
  workgroupBarrier();
  let total = red_f[WG - 1u];
  let lo_t = select(red_f[max(tid, 1u) - 1u], 0.0, tid == 0u);
  let hi_t = red_f[tid];
  workgroupBarrier(); // red_f is reused below
  let lsf = log_sum(f32(sum_u(tid, cf)), sum_comp(tid, uf));

  var stream = p.stream_base + row;
  var counter = p.step;
  if (p.has_keys != 0u) {
    stream = keys[2u * row];
    counter = keys[2u * row + 1u];
  }
  let bits = philox4x32(vec4u(counter, 0u, stream, 0u), vec2u(p.seed, 0x7e87a11eu)).x;
  let u = f32(bits >> 8u) * (1.0 / 16777216.0);
  let goal = u * total;
  // The owner of the crossing walks; if rounding put goal at or past the total, the chunk where
  // the scan last grows to the total takes its last kept entry.
  let crossing = lo_t <= goal && goal < hi_t;
  let fallback = goal >= total && lo_t < hi_t && hi_t == total;
  if (crossing || fallback) {
    var local = 0.0;
    var pick = i0;
    for (var i = i0; i < i1; i++) {
      let x = logits[base + i];
      let k = okey(x);
      if (in_prefix(k, i, kv, ki) && in_prefix(k, i, pv, pi)) {
        let e = exp((x - m) / p.temperature);
        local += e;
        if (e > 0.0) {
          pick = i;
        }
        if (crossing && lo_t + local > goal) {
          break;
        }
      }
    }
    let x = logits[base + pick];
    tokens[row] = i32(pick);
    logprobs[row] = select((x - m) / p.temperature - lsf, sub_log(x, m, lsf), p.temperature == 1.0);
    logprobs_raw[row] = sub_log(x, m, ls1);
  }
}
