/**
 * Helpers of the row-wise kernel cases (norm, activation, embedding, residual, sample): upload,
 * run one recording and read tensors back, tolerant comparisons that print the error, and a
 * ShapeError/LimitError check that nothing was recorded.
 */
import { assert } from 'chai';
import type { WebtinkerError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { type AnyHostArray, type DType, emptyTensor, type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { maxAbsDiff, relL2 } from '../../reference/tf.ts';

export const OWNER = 'rowwise-case';

/** Upload a host array. */
export function up(ctx: GpuContext, data: AnyHostArray, shape: readonly number[] = [data.length], label?: string): Tensor {
  return tensorFrom(ctx, data, shape, { owner: OWNER, label });
}

/** An uninitialized tensor. */
export function empty(ctx: GpuContext, shape: readonly number[], dtype: DType = 'f32', label?: string): Tensor {
  return emptyTensor(ctx, shape, dtype, { owner: OWNER, label });
}

/** Record with `fn`, submit once, and read back `outs` in order. */
export async function run(ctx: GpuContext, outs: readonly Tensor[], fn: (rec: Recorder) => void): Promise<AnyHostArray[]> {
  const rec = new Recorder(ctx, { label: 'rowwise case' });
  fn(rec);
  const reads = outs.map((t) => rec.read(t));
  for (const r of reads) r.catch(() => {}); // a failed submit rejects them too; submit() reports it
  await rec.submit();
  return Promise.all(reads);
}

export function releaseAll(...ts: (Tensor | null | undefined)[]): void {
  for (const t of ts) if (t && !t.released) t.release();
}

/** Largest error seen per label, for the report (printed by `reportErrors`). */
export const maxErrors = new Map<string, number>();

/**
 * got ≈ want: relative L2 error ≤ tol, or (for an all-but-zero `want`) max |Δ| ≤ tol. Records the
 * error under `label` so the suites can print the largest ones.
 */
export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, label: string): void {
  const rel = relL2(got, want);
  const abs = maxAbsDiff(got, want);
  const key = label.replace(/ [A-Za-z]+=.*$/, '');
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

/** Bitwise equality of two arrays of 32-bit values (f32, i32, u32): first differing index or -1. */
export function firstWordDiff(a: AnyHostArray, b: AnyHostArray): number {
  const ua = new Uint32Array(a.buffer, a.byteOffset, (a.byteLength / 4) | 0);
  const ub = new Uint32Array(b.buffer, b.byteOffset, (b.byteLength / 4) | 0);
  if (ua.length !== ub.length) return Math.min(ua.length, ub.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}
