/**
 * embedding — token (+ learned position) embedding lookup and its deterministic backward
 * (host wrappers of kernels/embedding.wgsl; an f16 table is looked up by its generated variant
 * `embedding_f16`, the same source with f16 table storage).
 *
 * Shapes: ids [N] (any shape of N elements, e.g. [B, T]) i32; table [R, C]; out [..., C] with N
 * rows; optional position table wpe [P, C] with positions pos (N elements, i32, e.g. t or the
 * position within a packed segment). Ids and positions outside their table give 0 in the forward
 * pass and are skipped in the backward pass (they cannot be checked on the host without a read).
 *
 * The backward pass is one scatter-add per table: call `embeddingBackward` with (dwte, ids) and,
 * for a position table, again with (dwpe, pos). It builds an inverse index of the ids on the GPU
 * (a stable counting sort in one workgroup, no atomics) in a caller-owned u32 scratch tensor of
 * `embeddingScratchSize(N, R)` elements, then sums each row's tokens in increasing token order:
 * bitwise-identical results run to run, and no table row scans all N tokens. The same scratch may
 * serve both calls of one recording (dispatches run in order).
 *
 * A table (forward) or dtable (backward) larger than one storage binding — GPT-2 small's tied
 * embedding is 154 MB f32 — is bound a range of rows at a time (src/gpu/chunks.ts rowChunks),
 * one dispatch per range, with the same results bit for bit (see kernels/embedding.wgsl). Every
 * other tensor must fit one binding.
 */
import { LimitError, ShapeError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectLoopBudget, expectScratch } from '../gpu/checks.ts';
import { rowChunks } from '../gpu/chunks.ts';

const KERNEL = 'embedding';
const WG = 256;

/** u32 elements of the scratch tensor `embeddingBackward` needs for N tokens and R table rows. */
export function embeddingScratchSize(n: number, rows: number): number {
  return 2 * rows + 2 + n + Math.min(n, rows);
}

function tableDims(op: string, name: string, t: Tensor, dtypes: readonly string[] = ['f32']): [number, number] {
  if (!dtypes.includes(t.dtype)) throw new ShapeError(op, `${name} (${t}) must be ${dtypes.join(' or ')}, got ${t.dtype}`);
  if (t.shape.length !== 2) throw new ShapeError(op, `${name} (${t}) must be [rows, C]`);
  return [t.shape[0], t.shape[1]];
}

function checkRows(op: string, name: string, x: Tensor, n: number, c: number, ids: Tensor): void {
  expectDtype(op, name, x, 'f32');
  const last = x.shape[x.shape.length - 1];
  if (x.shape.length < 1 || last !== c || x.size !== n * c) {
    throw new ShapeError(op, `${name} (${x}) must be [..., ${c}] with N = ${n} rows for ids ${ids}`);
  }
}

export interface PositionEmbedding {
  /** Learned position table [P, C]. */
  wpe: Tensor;
  /** Position of each token (N elements, i32). */
  pos: Tensor;
}

/**
 * out[n] = table[ids[n]] (+ wpe[pos[n]]); writes (=) out (f32). The tables may be f32, or f16
 * (frozen base weights) where the device has `shader-f16`; wpe has the dtype of table.
 */
export function embeddingForward(rec: Recorder, out: Tensor, ids: Tensor, table: Tensor, position?: PositionEmbedding): void {
  const op = `${KERNEL}.forward`;
  expectDtype(op, 'ids', ids, 'i32');
  const [rows, c] = tableDims(op, 'table', table, ['f32', 'f16']);
  if (table.dtype === 'f16' && !rec.ctx.hasF16) {
    throw new LimitError(op, `table (${table}) is f16 but the device has no shader-f16; upload it as f32`);
  }
  const n = ids.size;
  checkRows(op, 'out', out, n, c, ids);
  let pRows = 0;
  if (position) {
    const [p, pc] = tableDims(op, 'wpe', position.wpe, [table.dtype]);
    if (pc !== c) throw new ShapeError(op, `wpe (${position.wpe}) must have C = ${c} columns like table ${table}`);
    expectDtype(op, 'pos', position.pos, 'i32');
    if (position.pos.size !== n) throw new ShapeError(op, `pos (${position.pos}) must hold N = ${n} values like ids ${ids}`);
    pRows = p;
  }
  expectDistinct(op, [['out', out, 'table', table], ['out', out, 'ids', ids], ['out', out, 'wpe', position?.wpe ?? null],
    ['out', out, 'pos', position?.pos ?? null]]);
  expectBindable(op, rec.ctx, [['out', out], ['wpe', position?.wpe ?? null]]);
  const parts = rowChunks(op, table);
  if (n * c === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n * c, WG);
  // One dispatch per range of table rows; the first writes every token (see the kernel).
  parts.forEach(({ first, count, view }, i) => rec.dispatch({
    kernel: table.dtype === 'f16' ? `${KERNEL}_f16` : KERNEL,
    entryPoint: 'forward',
    constants: { WG },
    // Without a position table wpe and pos are bound to table and ids (read-only, not read: has_pos = 0).
    bindings: { ids, table: view, wpe: position?.wpe ?? view, pos: position?.pos ?? ids, out },
    params: { ...rowParams(n, c, rows, rowThreads, first, count), pos_rows: pRows, has_pos: position ? 1 : 0, write_all: i === 0 ? 1 : 0 },
    workgroups,
  }));
}

/** The kernel's Params of every entry point; the forward's own fields (pos_rows, has_pos, write_all) are 0 here. */
function rowParams(n: number, c: number, rows: number, rowThreads: number, first: number, count: number) {
  return { n, c, rows, row_threads: rowThreads, row_base: first, chunk_rows: count, pos_rows: 0, has_pos: 0, write_all: 0 };
}

export interface EmbeddingBackwardOptions {
  /** true: dtable += the gradient (rows without tokens untouched); false (default): dtable = it. */
  accumulate?: boolean;
}

/**
 * dtable[r] = Σ_{n: ids[n] = r} dout[n], summed in increasing n; writes (=) every row of dtable,
 * or accumulates (+=) into the rows that have tokens when `opts.accumulate`.
 * `scratch` is u32 with at least `embeddingScratchSize(N, R)` elements (overwritten).
 */
export function embeddingBackward(
  rec: Recorder, dtable: Tensor, dout: Tensor, ids: Tensor, scratch: Tensor, opts: EmbeddingBackwardOptions = {},
): void {
  const op = `${KERNEL}.backward`;
  expectDtype(op, 'ids', ids, 'i32');
  const [rows, c] = tableDims(op, 'dtable', dtable);
  const n = ids.size;
  checkRows(op, 'dout', dout, n, c, ids);
  expectScratch(op, scratch, embeddingScratchSize(n, rows), 'u32');
  expectDistinct(op, [['dtable', dtable, 'dout', dout], ['dtable', dtable, 'ids', ids], ['dtable', dtable, 'scratch', scratch],
    ['scratch', scratch, 'ids', ids], ['scratch', scratch, 'dout', dout]]);
  expectBindable(op, rec.ctx, [['dout', dout], ['scratch', scratch]]);
  const parts = rowChunks(op, dtable);
  if (rows * c === 0) return;
  // One workgroup builds the index, as wide as the context's tunings say.
  const iwg = rec.ctx.tunings.embeddingIndexWidth;
  // Per thread: clear, scan and rewrite R/WG rows; two chunked passes of WG compares per WG tokens;
  // the sums loop over a row's tokens (all N when every id is the same).
  expectLoopBudget(op, rec.ctx, 3 * Math.ceil(rows / iwg) + 2 * Math.ceil(n / iwg) * (iwg + 1) + iwg, `the index of ids ${ids}`);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'build_index',
    constants: { WG: iwg },
    bindings: { ids, work: scratch },
    params: rowParams(n, c, rows, 0, 0, rows),
    workgroups: [1, 1, 1],
  });
  // Per range of dtable rows: `=` writes the range's rows, `+=` visits every row with tokens and
  // adds those in the range.
  for (const { first, count, view } of parts) {
    const threads = opts.accumulate ? Math.min(n, rows) * c : count * c;
    if (threads === 0) continue;
    const g = grid1d(rec.ctx, threads, WG);
    rec.dispatch({
      kernel: KERNEL,
      entryPoint: opts.accumulate ? 'rows_accumulate' : 'rows_write',
      constants: { WG },
      bindings: { work: scratch, src: dout, dst: view },
      params: rowParams(n, c, rows, g.rowThreads, first, count),
      workgroups: g.workgroups,
    });
  }
}
