/**
 * Helpers of the matmul and LoRA-linear cases: upload, one recording with read-backs, relative-L2
 * comparisons that keep the largest error per check (printed for the report), f16 rounding, and
 * the tile configurations every product is run with.
 */
import { assert } from 'chai';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { type AnyHostArray, type DType, emptyTensor, type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { f16BitsToF32, f32ToF16Bits } from '../../../src/model/f16.ts';
import { HARDWARE_MATMUL_CONFIG, type MatmulConfig, matmulConfigFor } from '../../../src/ops/matmul.ts';
import { maxAbsDiff, relL2 } from '../../reference/tf.ts';

export const OWNER = 'matmul-case';

export function up(ctx: GpuContext, data: AnyHostArray, shape: readonly number[] = [data.length], label?: string): Tensor {
  return tensorFrom(ctx, data, shape, { owner: OWNER, label });
}

export function empty(ctx: GpuContext, shape: readonly number[], dtype: DType = 'f32', label?: string): Tensor {
  return emptyTensor(ctx, shape, dtype, { owner: OWNER, label });
}

/** Record with `fn`, submit once, read back `outs` in order. */
export async function run(ctx: GpuContext, outs: readonly Tensor[], fn: (rec: Recorder) => void): Promise<Float32Array[]> {
  const rec = new Recorder(ctx, { label: 'matmul case' });
  fn(rec);
  const reads = outs.map((t) => rec.read(t));
  for (const r of reads) r.catch(() => {});
  await rec.submit();
  return (await Promise.all(reads)) as Float32Array[];
}

export function releaseAll(...ts: (Tensor | null | undefined)[]): void {
  for (const t of ts) if (t && !t.released) t.release();
}

/** Largest relative L2 error per check, for the report. */
export const maxErrors = new Map<string, number>();

/** relL2(got, want) ≤ tol (or max |Δ| ≤ tol for an all-but-zero want); records the error. */
export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, label: string): void {
  const rel = relL2(got, want);
  const abs = maxAbsDiff(got, want);
  const key = label.replace(/ \[.*$/, '');
  maxErrors.set(key, Math.max(maxErrors.get(key) ?? 0, rel));
  assert.isTrue(rel <= tol || abs <= tol, `${label}: relL2 ${rel.toExponential(2)}, max |Δ| ${abs.toExponential(2)} > ${tol}`);
}

export function reportErrors(title: string): void {
  const lines = [...maxErrors.entries()].sort().map(([k, v]) => `  ${k}: ${v.toExponential(2)}`);
  console.log(`${title} — largest relL2 per check:\n${lines.join('\n')}`);
}

/** f32 → f16 bits, and the f32 values those bits stand for. */
export function toF16(x: Float32Array): { bits: Uint16Array; values: Float32Array } {
  const bits = Uint16Array.from(x, (v) => f32ToF16Bits(v));
  return { bits, values: Float32Array.from(bits, (h) => f16BitsToF32(h)) };
}

/**
 * The adapter's default configuration, the other kind's default (the shared-memory kernel with the
 * real-GPU tiles on a software adapter), and an odd register tile, so every product is checked on
 * both entry points and on tiles that do not divide the shapes.
 */
export function configs(ctx: GpuContext): { name: string; cfg: MatmulConfig }[] {
  const def = matmulConfigFor(ctx);
  return [
    { name: 'default', cfg: def },
    def.kernel === 'register'
      ? { name: 'tiled', cfg: { ...HARDWARE_MATMUL_CONFIG } }
      : { name: 'register', cfg: { kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16 } },
    { name: 'register 12x4', cfg: { kernel: 'register', tm: 12, tn: 4, wgX: 4, wgY: 2, bk: 16 } },
  ];
}

/** A shared-memory tile that divides nothing (rows 2·4, columns 3·8, K slices of 8). */
export const ODD_TILED: MatmulConfig = { kernel: 'tiled', tm: 2, tn: 3, wgX: 8, wgY: 4, bk: 8 };
