/**
 * layernorm — LayerNorm over the last dimension, forward and backward (host wrappers of
 * kernels/layernorm.wgsl). Shapes: inp [..., C] flattened to N rows; weight, bias [C];
 * mean, rstd hold N values (any shape of N elements, e.g. [B, T]).
 *
 * The backward pass needs a caller-owned f32 scratch tensor of `layernormScratchSize(N, C)`
 * elements for the deterministic two-stage column sums of dweight/dbias (llm.c style: the caller
 * owns every buffer, so nothing is allocated behind the recorder's back).
 */
import { ShapeError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectScratch, expectShape, rowGrid, rowsCols, rowWorkgroupSize, expectLoopBudget } from '../gpu/checks.ts';

const KERNEL = 'layernorm';

/**
 * Rows per block and block count of the backward column sums: about 256 blocks for parallelism,
 * at most 32 rows per block so a thread's loops stay short (see expectLoopBudget).
 */
export function normBlocks(n: number): { rb: number; nblk: number } {
  const rb = Math.min(32, Math.max(1, Math.ceil(n / 256)));
  return { rb, nblk: Math.max(1, Math.ceil(n / rb)) };
}

/** Loop iterations per thread of the norm kernels (forward, backward) for the loop-budget check (expectLoopBudget). */
export function normLoopIterations(n: number, c: number, wg: number, passes: number): number {
  const perRow = passes * Math.ceil(c / wg) + 2 * Math.log2(wg);
  return Math.max(perRow, normBlocks(n).rb * perRow, normBlocks(n).nblk);
}

/** Elements of the f32 scratch tensor layernormBackward needs for N rows of C channels. */
export function layernormScratchSize(n: number, c: number): number {
  return 2 * normBlocks(n).nblk * c;
}

function checkCommon(op: string, inp: Tensor, weight: Tensor, mean: Tensor, rstd: Tensor): [number, number] {
  for (const [name, t] of [['inp', inp], ['weight', weight], ['mean', mean], ['rstd', rstd]] as const) expectDtype(op, name, t, 'f32');
  const [n, c] = rowsCols(op, 'inp', inp);
  expectShape(op, 'weight', weight, [c]);
  if (mean.size !== n) throw new ShapeError(op, `mean (${mean}) must hold N = ${n} values for inp ${inp}`);
  if (rstd.size !== n) throw new ShapeError(op, `rstd (${rstd}) must hold N = ${n} values for inp ${inp}`);
  return [n, c];
}

/**
 * out = (inp − mean)·rstd·weight + bias per row; writes (=) out, mean and rstd.
 * `eps` is added to the (biased) variance; GPT-2 uses 1e-5.
 */
export function layernormForward(
  rec: Recorder, out: Tensor, mean: Tensor, rstd: Tensor, inp: Tensor, weight: Tensor, bias: Tensor, eps = 1e-5,
): void {
  const op = `${KERNEL}.forward`;
  const [n, c] = checkCommon(op, inp, weight, mean, rstd);
  expectDtype(op, 'out', out, 'f32');
  expectDtype(op, 'bias', bias, 'f32');
  expectShape(op, 'bias', bias, [c]);
  expectShape(op, 'out', out, inp.shape);
  expectDistinct(op, [['out', out, 'inp', inp], ['out', out, 'weight', weight], ['out', out, 'bias', bias],
    ['mean', mean, 'inp', inp], ['rstd', rstd, 'inp', inp], ['mean', mean, 'rstd', rstd], ['out', out, 'mean', mean], ['out', out, 'rstd', rstd]]);
  expectBindable(op, rec.ctx, [['inp', inp], ['out', out]]);
  if (n === 0) return;
  const wg = rowWorkgroupSize(rec.ctx, c);
  expectLoopBudget(op, rec.ctx, 3 * Math.ceil(c / wg) + 2 * Math.log2(wg), `inp ${inp}`);
  const { workgroups, nx } = rowGrid(rec.ctx, n);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'forward',
    constants: { WG: wg },
    bindings: { inp, weight, bias, out, mean, rstd },
    params: { n, c, eps, nx, rb: 1, nblk: 1, accumulate: 0 },
    workgroups,
  });
}

export interface NormBackwardOptions {
  /** true: dweight (and dbias) += the gradient; false (default): dweight (and dbias) = it. */
  accumulate?: boolean;
}

/**
 * LayerNorm backward. Writes (=) dinp; writes or accumulates (opts.accumulate) dweight and dbias.
 * `mean`/`rstd` are the forward pass's saved values; `scratch` is f32 with at least
 * `layernormScratchSize(N, C)` elements (its contents are overwritten).
 */
export function layernormBackward(
  rec: Recorder, dinp: Tensor, dweight: Tensor, dbias: Tensor, dout: Tensor, inp: Tensor, weight: Tensor,
  mean: Tensor, rstd: Tensor, scratch: Tensor, opts: NormBackwardOptions = {},
): void {
  const op = `${KERNEL}.backward`;
  const [n, c] = checkCommon(op, inp, weight, mean, rstd);
  for (const [name, t] of [['dinp', dinp], ['dweight', dweight], ['dbias', dbias], ['dout', dout]] as const) expectDtype(op, name, t, 'f32');
  expectShape(op, 'dout', dout, inp.shape);
  expectShape(op, 'dinp', dinp, inp.shape);
  expectShape(op, 'dweight', dweight, [c]);
  expectShape(op, 'dbias', dbias, [c]);
  expectScratch(op, scratch, layernormScratchSize(n, c), 'f32');
  const writes = [['dinp', dinp], ['dweight', dweight], ['dbias', dbias], ['scratch', scratch]] as const;
  const reads = [['dout', dout], ['inp', inp], ['weight', weight], ['mean', mean], ['rstd', rstd]] as const;
  const pairs: [string, Tensor, string, Tensor][] = [];
  writes.forEach(([nw, w], i) => {
    for (const [nr, r] of reads) pairs.push([nw, w, nr, r]);
    for (const [nv, v] of writes.slice(i + 1)) pairs.push([nw, w, nv, v]);
  });
  expectDistinct(op, pairs);
  expectBindable(op, rec.ctx, [['dout', dout], ['inp', inp], ['dinp', dinp], ['scratch', scratch]]);
  if (c === 0) return;
  const wg = rowWorkgroupSize(rec.ctx, c);
  expectLoopBudget(op, rec.ctx, normLoopIterations(n, c, wg, 2), `inp ${inp}`);
  const { rb, nblk } = normBlocks(n);
  const acc = opts.accumulate ? 1 : 0;
  if (n > 0) {
    const { workgroups, nx } = rowGrid(rec.ctx, nblk);
    rec.dispatch({
      kernel: KERNEL,
      entryPoint: 'backward_dinp',
      constants: { WG: wg },
      bindings: { inp, weight, mean, rstd, dout, dinp, part: scratch },
      params: { n, c, eps: 0, nx, rb, nblk, accumulate: acc },
      workgroups,
    });
  }
  // N = 0: no rows, so the gradients of the parameters are zero (nblk = 0 sums nothing).
  const g = grid1d(rec.ctx, c, wg);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'backward_params',
    constants: { WG: wg },
    bindings: { part: scratch, dweight, dbias },
    params: { n, c, eps: 0, nx: g.rowThreads, rb, nblk: n > 0 ? nblk : 0, accumulate: acc },
    workgroups: g.workgroups,
  });
}
