/**
 * The device self-check of `npm run train -- --self-check` and of the GPU worker (its
 * `selfCheck` call): one kernel — the residual add with s = 1, a plain f32 sum — on seeded inputs,
 * compared bitwise with its CPU reference. It proves the adapter compiles and runs our WGSL and
 * reads results back, without loading a model.
 */
import type { GpuContext } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../gpu/tensor.ts';
import { residualAdd } from '../ops/residual.ts';
import { residualAddRef } from '../ops/residual.ref.ts';
import { Rng } from '../util/rng.ts';
import type { SelfCheckResult } from './protocol.ts';

const OWNER = 'self-check';

/** out = a + b on `n` normal samples from `seed`; counts the elements that differ from the CPU reference in any bit. */
export async function selfCheck(ctx: GpuContext, n: number, seed: number): Promise<SelfCheckResult> {
  const rng = new Rng(seed);
  const a = rng.normalArray(n);
  const b = rng.normalArray(n);
  try {
    const ta = tensorFrom(ctx, a, [n], { owner: OWNER, label: 'a' });
    const tb = tensorFrom(ctx, b, [n], { owner: OWNER, label: 'b' });
    const out = emptyTensor(ctx, [n], 'f32', { owner: OWNER, label: 'a+b' });
    const rec = new Recorder(ctx, { label: OWNER, timing: true });
    residualAdd(rec, out, ta, tb);
    const read = rec.read(out);
    const { gpuNs } = await rec.submit();
    const got = (await read) as Float32Array;
    const want = new Float32Array(n);
    residualAddRef(want, a, b);
    let mismatches = 0;
    for (let i = 0; i < n; i++) if (!Object.is(got[i], want[i])) mismatches++;
    return { elements: n, mismatches, ...(gpuNs !== undefined ? { gpuNs } : {}) };
  } finally {
    ctx.pool.releaseOwner(OWNER);
  }
}
