// embedding_f16.wgsl — token (+ learned position) embedding lookup from tables stored in f16
// (frozen base weights under LoRA training; half the memory of f32). Output in f32.
// Needs the `shader-f16` feature; the f32 path (embedding.wgsl) always exists.
//
// Legend: N tokens, C channels, R rows of table, P rows of wpe.
//   ids [N] i32, table [R, C] f16, wpe [P, C] f16, pos [N] i32, out [N, C] f32
//   out[n, c] = f32(table[ids[n], c]) (+ f32(wpe[pos[n], c]) when has_pos), summed in f32;
//   an id outside [0, R) (or position outside [0, P)) contributes 0.
// A frozen table has no gradient, so there is no backward here.

enable f16;

override WG: u32 = 256;

struct Params {
  n: u32,           // tokens N
  c: u32,           // channels C
  rows: u32,        // rows R of table
  pos_rows: u32,    // rows P of wpe
  has_pos: u32,     // 1 → add wpe[pos[n]]
  row_threads: u32, // threads in one grid row
}

@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> table: array<f16>;
@group(0) @binding(2) var<storage, read> wpe: array<f16>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.n * p.c) {
    return;
  }
  let n = i / p.c;
  let c = i % p.c;
  var v = 0.0;
  let id = ids[n];
  if (id >= 0 && u32(id) < p.rows) {
    v = f32(table[u32(id) * p.c + c]);
  }
  if (p.has_pos != 0u) {
    let q = pos[n];
    if (q >= 0 && u32(q) < p.pos_rows) {
      v += f32(wpe[u32(q) * p.c + c]);
    }
  }
  out[i] = v;
}
