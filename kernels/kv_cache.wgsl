// kv_cache.wgsl — the writes of a generation batch's KV cache: append new key/value rows, and
// advance the per-sequence decode state. (Llama's q and k are rotated before the append by
// rope.wgsl, the kernel the training passes use too.)
//
// Legend: B sequences, Tn new rows per sequence, Tmax cache rows, Hkv kv heads,
// D head dim (even), K history rows (decode steps per recording).
//   k_new, v_new [B, Tn, Hkv, D]   k_cache, v_cache [B, Tmax, Hkv, D]
//   start i32 [B]: cache row of each sequence's first new row
//   count i32 [B]: how many of the Tn new rows are real (rows t ≥ count[b] are padding)
//   lengths, positions i32 [B]; keys u32 [B, 2] (sampler stream, counter)
//   tokens i32 [B], logprobs, logprobs_raw f32 [B]; history u32 [K, B, 3] (token, bits of both log-probs)
//
// append:       k_cache[b, start+t] = k_new[b, t], v_cache likewise, for t < count[b] and
//               start + t < Tmax (rows past the cache are dropped: a finished sequence that keeps
//               decoding past its budget must not write out of its row range).
// extend:       lengths[b] = clamp(lengths[b] + count[b], 0, Tmax)            (after a prefill)
// advance:      one decode step's bookkeeping once the sampler has written tokens/logprobs:
//               history[step, b] = (tokens[b], bits of logprobs[b], bits of logprobs_raw[b]);
//               positions[b] = lengths[b] (the sampled token's row and position);
//               lengths[b] = min(lengths[b] + 1, Tmax); keys[b].counter += 1.
//
// One append invocation per (b, t, head, i < D/2) pair copies elements i and i + D/2; nothing is
// summed, so results are exact and bitwise reproducible.

override WG: u32 = 64u;

struct Params {
  B: u32,
  Tn: u32,
  Hkv: u32,
  D: u32,
  Tmax: u32,
  row_threads: u32, // workgroups along x · WG (the grid may have a y dimension)
  counted: u32,     // 1: count[] gives the real rows; 0: every one of the Tn rows is real
  step: u32,        // advance: history row to write
  K: u32,           // advance: history rows
}

@group(0) @binding(0) var<storage, read> start: array<i32>;
@group(0) @binding(1) var<storage, read> count: array<i32>;
@group(0) @binding(2) var<storage, read> k_new: array<f32>;
@group(0) @binding(3) var<storage, read> v_new: array<f32>;
@group(0) @binding(4) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> lengths: array<i32>;
@group(0) @binding(7) var<storage, read_write> positions: array<i32>;
@group(0) @binding(8) var<storage, read_write> keys: array<u32>;
@group(0) @binding(9) var<storage, read> tokens: array<i32>;
@group(0) @binding(10) var<storage, read> logprobs: array<f32>;
@group(0) @binding(11) var<storage, read> logprobs_raw: array<f32>;
@group(0) @binding(12) var<storage, read_write> history: array<u32>;
@group(0) @binding(13) var<uniform> p: Params;

// Number of real new rows of sequence b.
fn real_rows(b: u32) -> u32 {
  if (p.counted == 0u) {
    return p.Tn;
  }
  return u32(clamp(count[b], 0, i32(p.Tn)));
}

// The cache row of new row t of sequence b, or −1 when it is padding or past the cache.
fn cache_row(b: u32, t: u32) -> i32 {
  if (t >= real_rows(b)) {
    return -1;
  }
  let row = start[b] + i32(t);
  if (row < 0 || row >= i32(p.Tmax)) {
    return -1;
  }
  return row;
}

@compute @workgroup_size(WG)
fn append(@builtin(global_invocation_id) gid: vec3u) {
  let half = p.D / 2u;
  let n = gid.x + gid.y * p.row_threads;
  if (n >= p.B * p.Tn * p.Hkv * half) {
    return;
  }
  let i = n % half;
  let h = (n / half) % p.Hkv;
  let bt = n / (half * p.Hkv);
  let t = bt % p.Tn;
  let b = bt / p.Tn;
  let row = cache_row(b, t);
  if (row < 0) {
    return;
  }
  let src = (bt * p.Hkv + h) * p.D + i;
  let dst = ((b * p.Tmax + u32(row)) * p.Hkv + h) * p.D + i;
  k_cache[dst] = k_new[src];
  k_cache[dst + half] = k_new[src + half];
  v_cache[dst] = v_new[src];
  v_cache[dst + half] = v_new[src + half];
}

@compute @workgroup_size(WG)
fn extend(@builtin(global_invocation_id) gid: vec3u) {
  let b = gid.x;
  if (b >= p.B) {
    return;
  }
  lengths[b] = clamp(lengths[b] + count[b], 0, i32(p.Tmax));
}

@compute @workgroup_size(WG)
fn advance(@builtin(global_invocation_id) gid: vec3u) {
  let b = gid.x;
  if (b >= p.B) {
    return;
  }
  if (p.step < p.K) {
    let o = (p.step * p.B + b) * 3u;
    // Integers carry the floats' bits: one u32 readback per chunk, nothing rounded or flushed.
    history[o] = u32(tokens[b]);
    history[o + 1u] = bitcast<u32>(logprobs[b]);
    history[o + 2u] = bitcast<u32>(logprobs_raw[b]);
  }
  let len = lengths[b];
  positions[b] = len;
  lengths[b] = min(len + 1, i32(p.Tmax));
  keys[2u * b + 1u] = keys[2u * b + 1u] + 1u;
}
