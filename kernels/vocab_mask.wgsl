// vocab_mask.wgsl — masks vocabulary columns of a logits matrix in place: every entry whose
// column is not allowed becomes −Inf, so the sampler (sample.wgsl) gives it probability 0.
//
// Legend: B rows, V vocabulary (the model's, possibly more than the tokenizer's ids).
//   logits [B, V] f32 (read_write), allowed [⌈V/32⌉] u32: bit (j mod 32) of word ⌊j/32⌋ is 1
//   when column j may be sampled.
// Why a bitmask rather than a limit alone: a model's embedding may have more rows than its
// tokenizer has ids (Qwen2.5: 151936 rows, ids < 151665), and some tokenizers also reserve ids
// they never train (Gemma's <unused…>, Llama 3's reserved specials); one bitmask covers both.
// The grid may be two-dimensional past maxComputeWorkgroupsPerDimension; the linear index is
// rebuilt from gid.y with `row_threads` = threads in one grid row.

override WG: u32 = 256;

struct Params {
  n: u32,           // B·V elements
  v: u32,           // V columns
  row_threads: u32, // workgroups along x · WG
  neg_inf: u32,     // 0xff800000, the bits of −Inf: a uniform because Tint rejects a constant −Inf
}

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read> allowed: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n) {
    return;
  }
  let j = i % p.v;
  if (((allowed[j >> 5u] >> (j & 31u)) & 1u) == 0u) {
    logits[i] = bitcast<f32>(p.neg_inf);
  }
}
