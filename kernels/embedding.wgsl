// embedding.wgsl — token (+ learned position) embedding lookup, and its deterministic backward,
// a scatter-add without float atomics. The lookup's tables may be f16 in the generated variant
// embedding_f16 (see TableStore below); the backward is f32 only.
//
// Legend: N tokens (B·T flattened), C channels, R rows of the table being looked up (V for the
// token table, the context length for a position table), P rows of the position table.
//   ids [N] i32, table [R, C], wpe [P, C], pos [N] i32, out [N, C]
//   src [N, C] (dout), dst [R, C] (dtable), work [2R + 2 + N + min(N, R)] u32 scratch
//
// forward          one thread per output element:
//                    out[n, c] = table[ids[n], c] (+ wpe[pos[n], c] when has_pos)
//                  an id outside [0, R) (or position outside [0, P)) contributes 0.
// backward, in three dispatches:
//   build_index    ONE workgroup builds the inverse index of ids — a stable counting sort:
//                    counts[r] = #{n : ids[n] = r}; offsets = exclusive scan of counts;
//                    sorted[offsets[r] ..< offsets[r+1]] = the n with ids[n] = r, increasing n;
//                    uniq[0 ..< nuniq] = the rows with a token, increasing r.
//                  Tokens are taken WG at a time; inside a chunk a thread's rank among equal ids
//                  is counted in shared memory, and the chunk's last occurrence of an id moves
//                  that id's cursor. No atomics at all, so the index is the same every run.
//   rows_write     dst = ...: one thread per (row r, channel c) of all R rows:
//                    dst[r, c] = Σ_{j in offsets[r] ..< offsets[r+1]} src[sorted[j], c]
//                  rows without tokens get 0 (the whole table is written, as `=` requires).
//   rows_accumulate dst += ...: one thread per (k < nuniq, c): the same sum for row uniq[k],
//                  added to dst; rows without tokens are not touched.
// Every sum runs over the row's tokens in increasing n from 0.0, so the result is bitwise fixed
// (and equals a CPU loop in that order). Work is O(R + N·WG) for the index and O(N·C) for the
// sums (+ R·C zeros for `=`): no vocabulary row scans all N tokens.
//
// Row ranges: a table (or dst) larger than one storage binding is bound a range of rows at a time
// — rows [row_base, row_base + chunk_rows) at table[0] (dst[0]) — and the host dispatches forward,
// rows_write and rows_accumulate once per range (build_index once). The forward's first range
// writes every token (write_all; 0 from the table where the id is not in the range), later ranges
// only the tokens whose id they hold; the backward's ranges write (or add to) their own rows.
// The values are those of a single dispatch over the whole table, bit for bit.
//
// work layout (u32): counts/cursor [R] | offsets [R+1] | sorted [N] | uniq [min(N,R)] | nuniq [1]

override WG: u32 = 256; // threads per workgroup (build_index: a chunk of WG tokens)

const NONE: u32 = 0xffffffffu;

struct Params {
  n: u32,           // tokens N
  c: u32,           // channels C
  rows: u32,        // rows R of table / dst
  row_threads: u32, // threads in one grid row (2-D grids past the per-dimension limit)
  row_base: u32,    // forward, rows_*: the first table / dst row bound (see "Row ranges")
  chunk_rows: u32,  // rows bound from row_base
  pos_rows: u32,    // forward: rows P of wpe
  has_pos: u32,     // forward: 1 → add wpe[pos[n]]
  write_all: u32,   // forward: write tokens whose id is not in the bound range too
}

// The lookup tables' storage type. `embedding` is this file as written (f32); scripts/gen-kernels.mjs
// also bundles `embedding_f16` from it, with table and wpe in f16 (frozen base weights, half the
// memory; the host uses it only for the forward lookup, where the device has shader-f16). The
// @variant line names the substitutions. Values are widened with f32(·) (an identity here) and
// summed in f32.
// @variant embedding_f16: enable f16; TableStore = f16
alias TableStore = f32;

@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> table: array<TableStore>;
@group(0) @binding(2) var<storage, read> wpe: array<TableStore>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> work: array<u32>;
@group(0) @binding(6) var<storage, read> src: array<f32>;
@group(0) @binding(7) var<storage, read_write> dst: array<f32>;
@group(0) @binding(8) var<uniform> p: Params;

var<workgroup> chunk: array<u32, WG>; // row of each token of the current chunk (NONE: skip)
var<workgroup> tot: array<u32, WG>;   // per-thread token counts, then their exclusive scan
var<workgroup> nnz: array<u32, WG>;   // per-thread non-empty rows, then their exclusive scan

fn off_offsets() -> u32 { return p.rows; }
fn off_sorted() -> u32 { return 2u * p.rows + 1u; }
fn off_uniq() -> u32 { return 2u * p.rows + 1u + p.n; }
fn off_nuniq() -> u32 { return 2u * p.rows + 1u + p.n + min(p.n, p.rows); }

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
  // The id's row within the bound range (ids outside [0, R) are in none: 0, as documented).
  let local = u32(id) - p.row_base;
  let held = id >= 0 && u32(id) < p.rows && u32(id) >= p.row_base && local < p.chunk_rows;
  if (!held && p.write_all == 0u) {
    return;
  }
  if (held) {
    v = f32(table[local * p.c + c]);
  }
  if (p.has_pos != 0u) {
    let q = pos[n];
    if (q >= 0 && u32(q) < p.pos_rows) {
      v += f32(wpe[u32(q) * p.c + c]);
    }
  }
  out[i] = v;
}

// The table row of token n, or NONE past the end or for an id outside [0, R).
fn token_row(n: u32) -> u32 {
  if (n >= p.n) {
    return NONE;
  }
  let id = ids[n];
  if (id < 0 || u32(id) >= p.rows) {
    return NONE;
  }
  return u32(id);
}

// (equal ids before t in the chunk, equal ids after t in the chunk).
fn chunk_rank(t: u32, r: u32) -> vec2u {
  var before = 0u;
  var after = 0u;
  for (var s = 0u; s < WG; s++) {
    if (chunk[s] == r) {
      if (s < t) {
        before++;
      } else if (s > t) {
        after++;
      }
    }
  }
  return vec2u(before, after);
}

@compute @workgroup_size(WG)
fn build_index(@builtin(local_invocation_index) t: u32) {
  let R = p.rows;
  for (var r = t; r < R; r += WG) {
    work[r] = 0u;
  }
  storageBarrier();

  // Counts: the last occurrence of an id in each chunk adds the chunk's count (one writer).
  for (var base = 0u; base < p.n; base += WG) {
    let r = token_row(base + t);
    chunk[t] = r;
    workgroupBarrier();
    let rk = chunk_rank(t, r);
    if (r != NONE && rk.y == 0u) {
      work[r] += rk.x + 1u;
    }
    storageBarrier();
    workgroupBarrier(); // chunk is rewritten by the next iteration
  }

  // Exclusive scan of counts: thread t owns the contiguous rows [r0, r1).
  let len = (R + WG - 1u) / WG;
  let r0 = min(t * len, R);
  let r1 = min(r0 + len, R);
  var s = 0u;
  var z = 0u;
  for (var r = r0; r < r1; r++) {
    let k = work[r];
    s += k;
    z += select(0u, 1u, k > 0u);
  }
  tot[t] = s;
  nnz[t] = z;
  workgroupBarrier();
  if (t == 0u) {
    var st = 0u;
    var zt = 0u;
    for (var i = 0u; i < WG; i++) {
      let a = tot[i];
      let b = nnz[i];
      tot[i] = st;
      nnz[i] = zt;
      st += a;
      zt += b;
    }
    work[off_offsets() + R] = st;
    work[off_nuniq()] = zt;
  }
  workgroupBarrier();
  var o = tot[t];
  var u = nnz[t];
  for (var r = r0; r < r1; r++) {
    let k = work[r];
    work[off_offsets() + r] = o;
    work[r] = o; // counts become the placement cursor
    if (k > 0u) {
      work[off_uniq() + u] = r;
      u++;
    }
    o += k;
  }
  storageBarrier();

  // Stable placement, chunk by chunk: sorted[cursor[r] + rank] = n.
  for (var base = 0u; base < p.n; base += WG) {
    let n = base + t;
    let r = token_row(n);
    chunk[t] = r;
    workgroupBarrier();
    let rk = chunk_rank(t, r);
    var at = 0u;
    if (r != NONE) {
      at = work[r] + rk.x;
      work[off_sorted() + at] = n;
    }
    storageBarrier(); // every thread has read its cursor before the last occurrence moves it
    if (r != NONE && rk.y == 0u) {
      work[r] = at + 1u;
    }
    storageBarrier();
    workgroupBarrier();
  }
}

// Σ src[n, c] over the tokens n of table row r, in increasing n.
fn row_sum(r: u32, c: u32) -> f32 {
  let a = work[off_offsets() + r];
  let b = work[off_offsets() + r + 1u];
  var s = 0.0;
  for (var j = a; j < b; j++) {
    s += src[work[off_sorted() + j] * p.c + c];
  }
  return s;
}

@compute @workgroup_size(WG)
fn rows_write(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  if (i >= p.chunk_rows * p.c) {
    return;
  }
  dst[i] = row_sum(p.row_base + i / p.c, i % p.c);
}

@compute @workgroup_size(WG)
fn rows_accumulate(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row_threads;
  let k = i / p.c;
  if (k >= min(p.n, p.rows) || k >= work[off_nuniq()]) {
    return;
  }
  let r = work[off_uniq() + k];
  if (r < p.row_base || r - p.row_base >= p.chunk_rows) {
    return;
  }
  let c = i % p.c;
  dst[(r - p.row_base) * p.c + c] += row_sum(r, c);
}
