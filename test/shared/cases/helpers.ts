/**
 * Helpers of the kernel cases (matmul, LoRA linear, norms, activations, embedding, residual,
 * sample, KV cache, ...): upload, run one recording and read tensors back, tolerant comparisons
 * that keep the largest error per check for the report, and typed-error checks. Bitwise equality
 * is `firstBitDiff` in ../gpu.ts.
 */
import { assert } from 'chai';
import type { WebtinkerError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { type AnyHostArray, type DType, emptyTensor, type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { maxAbsDiff, relL2 } from '../../reference/tf.ts';

export const OWNER = 'kernel-case';

/** Upload a host array. */
export function up(ctx: GpuContext, data: AnyHostArray, shape: readonly number[] = [data.length], label?: string): Tensor {
  return tensorFrom(ctx, data, shape, { owner: OWNER, label });
}

/** An uninitialized tensor. */
export function empty(ctx: GpuContext, shape: readonly number[], dtype: DType = 'f32', label?: string): Tensor {
  return emptyTensor(ctx, shape, dtype, { owner: OWNER, label });
}

/** Record with `fn`, submit once, and read back `outs` in order (`A`: their host type when all share one). */
export async function run<A extends AnyHostArray = AnyHostArray>(ctx: GpuContext, outs: readonly Tensor[], fn: (rec: Recorder) => void): Promise<A[]> {
  const rec = new Recorder(ctx, { label: 'kernel case' });
  fn(rec);
  const reads = outs.map((t) => rec.read(t));
  for (const r of reads) r.catch(() => {}); // a failed submit rejects them too; submit() reports it
  await rec.submit();
  return (await Promise.all(reads)) as A[];
}

export function releaseAll(...ts: (Tensor | null | undefined)[]): void {
  for (const t of ts) if (t && !t.released) t.release();
}

/**
 * For the bad-input cases: `make(shape, dtype, label)` allocates an uninitialized tensor and
 * remembers it; `release()` frees every one made.
 */
export function tensorMaker(ctx: GpuContext): { make: (shape: readonly number[], dtype?: DType, label?: string) => Tensor; release: () => void } {
  const made: Tensor[] = [];
  return {
    make: (shape, dtype = 'f32', label = 't') => {
      const t = empty(ctx, shape, dtype, label);
      made.push(t);
      return t;
    },
    release: () => releaseAll(...made.splice(0)),
  };
}

/** Largest error seen per label, for the report (printed by `reportErrors`). */
export const maxErrors = new Map<string, number>();

/**
 * got ≈ want: relative L2 error ≤ tol, or (for an all-but-zero `want`) max |Δ| ≤ tol. Records the
 * error under `label` — less a trailing shape (` [2, 3] ...`) or parameters (` N=7 ...`) — so the
 * suites can print the largest one per check.
 */
export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, label: string): void {
  const rel = relL2(got, want);
  const abs = maxAbsDiff(got, want);
  const key = label.replace(/ (\[|[A-Za-z]+=).*$/, '');
  const err = Math.min(rel, abs);
  maxErrors.set(key, Math.max(maxErrors.get(key) ?? 0, err));
  assert.isTrue(rel <= tol || abs <= tol, `${label}: relL2 ${rel.toExponential(2)}, max |Δ| ${abs.toExponential(2)} > ${tol}`);
}

/** Prints the largest recorded errors (the report's numbers). */
export function reportErrors(title: string): void {
  const lines = [...maxErrors.entries()].sort().map(([k, v]) => `  ${k}: ${v.toExponential(2)}`);
  console.log(`${title} — largest min(relL2, max|Δ|) per check:\n${lines.join('\n')}`);
}

/** `fn` throws an error of class `cls` whose message matches `re`. */
export function assertThrowsTyped(fn: () => void, cls: new (...a: never[]) => WebtinkerError, re: RegExp): void {
  assert.throws(fn, cls as unknown as ErrorConstructor, re);
}

/** The error `p` rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
}
