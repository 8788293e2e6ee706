/**
 * add — out = a + b, elementwise over f32 tensors of one shape (host wrapper of kernels/add.wgsl).
 * Writes (=) `out`. `out` may not alias an input: WebGPU forbids binding one buffer as both
 * read-only and writable storage in a dispatch, so aliasing is refused with a ShapeError.
 */
import { ShapeError } from '../errors.ts';
import { grid1d, Params, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';

const KERNEL = 'add';
const WG = 256;

function sameShape(a: Tensor, b: Tensor): boolean {
  return a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

/** out = a + b. All f32, same shape, `out` distinct from the inputs. */
export function add(rec: Recorder, out: Tensor, a: Tensor, b: Tensor): void {
  for (const [name, t] of [['a', a], ['b', b], ['out', out]] as const) {
    if (t.dtype !== 'f32') throw new ShapeError(KERNEL, `${name} (${t}) must be f32, got ${t.dtype}`);
  }
  if (!sameShape(a, b) || !sameShape(a, out)) {
    throw new ShapeError(KERNEL, `shapes differ: a [${a.shape.join(', ')}], b [${b.shape.join(', ')}], out [${out.shape.join(', ')}]`);
  }
  if (out.buffer === a.buffer || out.buffer === b.buffer) {
    throw new ShapeError(KERNEL, `out (${out}) must not alias an input`);
  }
  const n = a.size;
  if (n === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
  rec.dispatch({
    kernel: KERNEL,
    constants: { WG },
    bindings: [a, b, out],
    params: new Params().u32(n).u32(rowThreads),
    workgroups,
  });
}
