/**
 * rmsnorm — RMSNorm over the last dimension, forward and backward (host wrappers of
 * kernels/rmsnorm.wgsl). Shapes: inp [..., C] flattened to N rows; weight [C]; rstd holds N values.
 *
 * The backward pass needs a caller-owned f32 scratch tensor of `rmsnormScratchSize(N, C)` elements
 * for the deterministic two-stage column sum of dweight.
 */
import { ShapeError } from '../errors.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { type NormBackwardOptions, normBlocks, normLoopIterations } from './layernorm.ts';
import { expectBindable, expectDistinct, expectDtype, expectScratch, expectShape, rowGrid, rowsCols, rowWorkgroupSize, expectLoopBudget } from '../gpu/checks.ts';

const KERNEL = 'rmsnorm';

/** Elements of the f32 scratch tensor rmsnormBackward needs for N rows of C channels. */
export function rmsnormScratchSize(n: number, c: number): number {
  return normBlocks(n).nblk * c;
}

function checkCommon(op: string, inp: Tensor, weight: Tensor, rstd: Tensor): [number, number] {
  for (const [name, t] of [['inp', inp], ['weight', weight], ['rstd', rstd]] as const) expectDtype(op, name, t, 'f32');
  const [n, c] = rowsCols(op, 'inp', inp);
  expectShape(op, 'weight', weight, [c]);
  if (rstd.size !== n) throw new ShapeError(op, `rstd (${rstd}) must hold N = ${n} values for inp ${inp}`);
  return [n, c];
}

export interface RmsnormOptions {
  /** Added to every weight: 0 (Llama, Qwen; default) or 1 (Gemma's x·rstd·(1 + w)). */
  offset?: number;
}

function offsetOf(op: string, opts: RmsnormOptions): number {
  const o = opts.offset ?? 0;
  if (!Number.isFinite(o)) throw new ShapeError(op, `offset must be a finite number, got ${o}`);
  return o;
}

/** out = inp·rstd·(weight + offset), rstd = 1/sqrt(mean(inp²) + eps) per row; writes (=) out and rstd. */
export function rmsnormForward(rec: Recorder, out: Tensor, rstd: Tensor, inp: Tensor, weight: Tensor, eps = 1e-6, opts: RmsnormOptions = {}): void {
  const op = `${KERNEL}.forward`;
  const [n, c] = checkCommon(op, inp, weight, rstd);
  expectDtype(op, 'out', out, 'f32');
  expectShape(op, 'out', out, inp.shape);
  expectDistinct(op, [['out', out, 'inp', inp], ['out', out, 'weight', weight], ['rstd', rstd, 'inp', inp],
    ['rstd', rstd, 'weight', weight], ['out', out, 'rstd', rstd]]);
  expectBindable(op, rec.ctx, [['inp', inp], ['out', out]]);
  if (n === 0) return;
  const wg = rowWorkgroupSize(rec.ctx, c);
  expectLoopBudget(op, rec.ctx, 2 * Math.ceil(c / wg) + Math.log2(wg), `inp ${inp}`);
  const { workgroups, nx } = rowGrid(rec.ctx, n);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'forward',
    constants: { WG: wg, OFFSET: offsetOf(op, opts) },
    bindings: { inp, weight, out, rstd },
    params: { n, c, eps, nx, rb: 1, nblk: 1, accumulate: 0 },
    workgroups,
  });
}

/**
 * RMSNorm backward. Writes (=) dinp; writes or accumulates (opts.accumulate) dweight.
 * `rstd` is the forward pass's saved value; `scratch` is f32 with at least
 * `rmsnormScratchSize(N, C)` elements (overwritten).
 */
export function rmsnormBackward(
  rec: Recorder, dinp: Tensor, dweight: Tensor, dout: Tensor, inp: Tensor, weight: Tensor, rstd: Tensor,
  scratch: Tensor, opts: NormBackwardOptions & RmsnormOptions = {},
): void {
  const op = `${KERNEL}.backward`;
  const offset = offsetOf(op, opts);
  const [n, c] = checkCommon(op, inp, weight, rstd);
  for (const [name, t] of [['dinp', dinp], ['dweight', dweight], ['dout', dout]] as const) expectDtype(op, name, t, 'f32');
  expectShape(op, 'dout', dout, inp.shape);
  expectShape(op, 'dinp', dinp, inp.shape);
  expectShape(op, 'dweight', dweight, [c]);
  expectScratch(op, scratch, rmsnormScratchSize(n, c), 'f32');
  const writes = [['dinp', dinp], ['dweight', dweight], ['scratch', scratch]] as const;
  const reads = [['dout', dout], ['inp', inp], ['weight', weight], ['rstd', rstd]] as const;
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
      constants: { WG: wg, OFFSET: offset },
      bindings: { inp, weight, rstd, dout, dinp, part: scratch },
      params: { n, c, eps: 0, nx, rb, nblk, accumulate: acc },
      workgroups,
    });
  }
  const g = grid1d(rec.ctx, c, wg);
  rec.dispatch({
    kernel: KERNEL,
    entryPoint: 'backward_params',
    constants: { WG: wg },
    bindings: { part: scratch, dweight },
    params: { n, c, eps: 0, nx: g.rowThreads, rb, nblk: n > 0 ? nblk : 0, accumulate: acc },
    workgroups: g.workgroups,
  });
}
