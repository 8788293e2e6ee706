// The planning of ranges that fit one storage binding (src/gpu/chunks.ts) and of split matmuls
// (src/ops/matmul_split.ts), on plain numbers and a fake context: no GPU needed.
import { describe, expect, it } from 'vitest';
import { alignedWindow, flatChunkElems, flatChunks, rowChunks, splitRange, windowOf, windowRows } from '../../src/gpu/chunks.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { type DType, Tensor } from '../../src/gpu/tensor.ts';
import { mat, splitProduct, vec4View } from '../../src/ops/matmul_split.ts';
import { matmulSplitRef } from '../../src/ops/matmul_split.ref.ts';
import { matmulRef } from '../../src/ops/matmul.ref.ts';
import { Rng } from '../../src/util/rng.ts';
import { REGISTER_STEP_ITERATIONS, registerMaxK } from '../../src/ops/matmul.ts';
import { LLVMPIPE_LOOP_LIMIT } from '../../src/gpu/quirks/mod.ts';
import { LimitError } from '../../src/errors.ts';

function fakeCtx(maxBinding: number, align = 256): GpuContext {
  const limits: Record<string, number> = { maxStorageBufferBindingSize: maxBinding, minStorageBufferOffsetAlignment: align };
  return { limit: (n: string) => limits[n] } as unknown as GpuContext;
}

const tensor = (ctx: GpuContext, shape: number[], dtype: DType = 'f32') => new Tensor(ctx, {} as GPUBuffer, shape, dtype, 'o', 't');

describe('splitRange', () => {
  it('covers [0, total) in order with pieces of at most per, the last one ragged', () => {
    expect(splitRange(10, 4)).toEqual([[0, 4], [4, 4], [8, 2]]);
    expect(splitRange(8, 4)).toEqual([[0, 4], [4, 4]]);
    expect(splitRange(3, 10)).toEqual([[0, 3]]);
    expect(splitRange(0, 5)).toEqual([]);
    expect(() => splitRange(5, 0)).toThrow(RangeError);
  });
});

describe('flatChunkElems', () => {
  it('is the whole run when it fits, else aligned multiples of the quantum', () => {
    expect(flatChunkElems(100, 4, 400, 256)).toBe(100);
    expect(flatChunkElems(101, 4, 400, 256)).toBe(64); // 100 fit, aligned starts every 64 floats
    expect(flatChunkElems(1_000_000, 4, 1 << 20, 256, 4096)).toBe(262144);
    expect(flatChunkElems(10_000, 2, 1000, 256)).toBe(384); // f16: 128 halves per 256 bytes
    expect(flatChunkElems(1003, 96, 32768, 256)).toBe(336); // rows of C = 24 floats: 8 rows per aligned unit
    expect(flatChunkElems(1003, 96, 700, 256)).toBe(0);
  });
});

describe('alignedWindow and windowRows', () => {
  it('windows start aligned, hold their elements, and the row bound is tight', () => {
    for (const [ld, cols, eb, max, align] of [[50257, 50257, 4, 1 << 27, 256], [24, 24, 4, 32768, 256], [1003, 7, 4, 8192, 64], [13, 13, 2, 4096, 256]]) {
      const rows = windowRows(ld, cols, eb, max, align);
      expect(rows).toBeGreaterThan(0);
      for (const first of [0, 1, 5, 63, 64, 1000, 12345]) {
        const span = (rows - 1) * ld + cols;
        const w = alignedWindow(first, span, eb, align);
        expect((w.startElem * eb) % align).toBe(0);
        expect(w.startElem + w.offset).toBe(first);
        expect(w.elems % 4).toBe(0);
        expect(w.elems).toBeGreaterThanOrEqual(w.offset + span);
        expect(Math.ceil((w.elems * eb) / 4) * 4).toBeLessThanOrEqual(max);
      }
      // One row more no longer fits the windowRows budget.
      expect(((rows) * ld + cols) * eb + align + 16).toBeGreaterThan(max);
    }
    expect(windowRows(100, 100, 4, 300, 256)).toBe(0);
  });
});

describe('rowChunks / flatChunks / windowOf on tensors', () => {
  it('split a table over the limit into aligned row views that each fit, with a ragged last one', () => {
    const ctx = fakeCtx(32768);
    const t = tensor(ctx, [1003, 24]);
    const parts = rowChunks('op', t);
    expect(parts.map((p) => [p.first, p.count])).toEqual([[0, 336], [336, 336], [672, 331]]);
    for (const p of parts) {
      expect(p.view.byteOffset % 256).toBe(0);
      expect(p.view.byteOffset).toBe(p.first * 96);
      expect(p.view.bindingBytes).toBeLessThanOrEqual(32768);
      expect(p.view.shape).toEqual([p.count, 24]);
    }
    expect(rowChunks('op', tensor(ctx, [10, 24]))).toHaveLength(1);
    expect(() => rowChunks('op', tensor(fakeCtx(512), [10, 300]))).toThrow(LimitError);
  });
  it('flat views keep whole reduce chunks', () => {
    const ctx = fakeCtx(40000);
    const views = flatChunks('op', tensor(ctx, [100, 300]), 4096);
    expect(views.map((v) => v.size)).toEqual([8192, 8192, 8192, 5424]);
    expect(views.map((v) => v.byteOffset)).toEqual([0, 32768, 65536, 98304]);
    const small = tensor(ctx, [10]);
    expect(flatChunks('op', small)).toEqual([small]);
  });
  it('windowOf binds the whole tensor when it fits, else an aligned window', () => {
    const ctx = fakeCtx(4096);
    const t = tensor(ctx, [100, 7]);
    expect(windowOf(t, 10, 20)).toEqual({ view: t, offset: 10 });
    const big = tensor(ctx, [1000, 7]);
    const w = windowOf(big, 700, 70);
    expect(w.view.byteOffset % 256).toBe(0);
    expect(w.view.byteOffset / 4 + w.offset).toBe(700);
    expect(w.view.size).toBeGreaterThanOrEqual(w.offset + 70);
  });
});

describe('splitProduct', () => {
  const V = 1003, C = 24, N = 7;
  const ctx = fakeCtx(32768);
  const W = tensor(ctx, [V, C]);
  const fits = (t: Tensor) => expect(vec4View(t).bindingBytes).toBeLessThanOrEqual(32768);
  it('logits = x·Wᵀ with W over the limit: ranges of N (V), column slices of C, nothing else split', () => {
    const x = tensor(ctx, [N, C]), logits = tensor(ctx, [N, V]);
    const subs = splitProduct('matmul', ctx, { batch: 1, M: N, N: V, K: C }, mat('m', 'a', x), mat('m', 'b', W), mat('m', 'c', logits), false, true);
    expect(subs.length).toBeGreaterThanOrEqual(3);
    let n = 0;
    for (const s of subs) {
      expect([s.m0, s.M, s.k0, s.K]).toEqual([0, N, 0, C]);
      expect(s.n0).toBe(n);
      n += s.N;
      expect(s.a.t).toBe(x);
      expect(s.c).toEqual({ t: logits, off: s.n0 });
      fits(s.b.t);
      expect(s.b.t.byteOffset % 256).toBe(0);
      expect(s.b.t.byteOffset / 4 + s.b.off).toBe(s.n0 * C);
    }
    expect(n).toBe(V);
  });
  it('dx = dlogits·W splits K; dW = dlogitsᵀ·x splits M', () => {
    const dlogits = tensor(ctx, [N, V]), dx = tensor(ctx, [N, C]), x = tensor(ctx, [N, C]);
    const k = splitProduct('matmul', ctx, { batch: 1, M: N, N: C, K: V }, mat('m', 'a', dlogits), mat('m', 'b', W), mat('m', 'c', dx), false, false);
    expect(k.length).toBeGreaterThanOrEqual(3);
    expect(k.reduce((s, p) => s + p.K, 0)).toBe(V);
    for (const s of k) expect(s.a).toEqual({ t: dlogits, off: s.k0 });
    const dW = tensor(ctx, [V, C]);
    const m = splitProduct('matmul', ctx, { batch: 1, M: V, N: C, K: N }, mat('m', 'a', dlogits), mat('m', 'b', x), mat('m', 'c', dW), true, false);
    expect(m.reduce((s, p) => s + p.M, 0)).toBe(V);
    for (const s of m) {
      fits(s.c.t);
      expect(s.c.t.byteOffset / 4 + s.c.off).toBe(s.m0 * C);
    }
  });
  it('sums K in ranges of at most maxK (llvmpipe), batched products excepted', () => {
    const big = fakeCtx(1 << 30);
    const a = tensor(big, [8, 20011]), b = tensor(big, [20011, 16]), c = tensor(big, [8, 16]);
    const subs = splitProduct('matmul', big, { batch: 1, M: 8, N: 16, K: 20011 }, mat('m', 'a', a), mat('m', 'b', b), mat('m', 'c', c), false, false, 4032);
    expect(subs.map((s) => [s.k0, s.K])).toEqual([[0, 4032], [4032, 4032], [8064, 4032], [12096, 4032], [16128, 3883]]);
    for (const s of subs) expect([s.a.t, s.a.off, s.b.t, s.b.off]).toEqual([a, s.k0, b, s.k0 * 16]);
    const a3 = tensor(big, [2, 8, 20011]);
    expect(splitProduct('matmul', big, { batch: 2, M: 8, N: 16, K: 20011 }, mat('m', 'a', a3), mat('m', 'b', b), mat('m', 'c', tensor(big, [2, 8, 16])), false, false, 4032)).toHaveLength(1);
    const maxK = (R: number) => registerMaxK(R, LLVMPIPE_LOOP_LIMIT);
    expect(maxK(0)).toBe(3968);
    expect(maxK(0) % 64).toBe(0);
    expect(maxK(64)).toBeLessThan(maxK(0));
    expect((maxK(0) / 4 + 1) * REGISTER_STEP_ITERATIONS).toBeLessThanOrEqual(65535 - 1000);
    expect(registerMaxK(0, Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY); // no loop budget: K is not split for it
  });
  it('every plan covers each (m, n, k) once: run through the split reference, M and N ranges give the whole product exactly, K ranges within f32 rounding', () => {
    const rng = new Rng(5);
    const cases = [
      { M: N, N: V, K: C, transA: false, transB: true }, // logits: ranges of N
      { M: N, N: C, K: V, transA: false, transB: false }, // dx: ranges of K
      { M: V, N: C, K: N, transA: true, transB: false }, // dW: ranges of M
    ];
    for (const d of cases) {
      const stored = (rows: number, cols: number, t: boolean) => tensor(ctx, t ? [cols, rows] : [rows, cols]);
      const subs = splitProduct('matmul', ctx, { batch: 1, ...d }, mat('m', 'a', stored(d.M, d.K, d.transA)), mat('m', 'b', stored(d.K, d.N, d.transB)), mat('m', 'c', tensor(ctx, [d.M, d.N])), d.transA, d.transB);
      expect(subs.length).toBeGreaterThan(1);
      const hits = new Uint32Array(d.M * d.N * d.K);
      for (const s of subs) for (let m = s.m0; m < s.m0 + s.M; m++) for (let n = s.n0; n < s.n0 + s.N; n++) for (let k = s.k0; k < s.k0 + s.K; k++) hits[(m * d.N + n) * d.K + k]++;
      expect(hits.every((h) => h === 1)).toBe(true);
      const a = rng.normalArray(d.M * d.K, 1), b = rng.normalArray(d.K * d.N, 1);
      const whole = new Float32Array(d.M * d.N), split = new Float32Array(d.M * d.N);
      matmulRef(whole, a, b, { batch: 1, ...d });
      matmulSplitRef(split, a, b, d, subs);
      if (subs.every((s) => s.K === d.K)) expect(split).toEqual(whole);
      else for (let i = 0; i < whole.length; i++) expect(Math.abs(split[i] - whole[i])).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(whole[i])) * subs.length);
    }
  });
  it('refuses a batched product over the limit', () => {
    const a3 = tensor(ctx, [2, 400, 24]), b = tensor(ctx, [24, 8]), c3 = tensor(ctx, [2, 400, 8]);
    expect(() => splitProduct('matmul', ctx, { batch: 2, M: 400, N: 8, K: 24 }, mat('m', 'a', a3), mat('m', 'b', b), mat('m', 'c', c3), false, false))
      .toThrow(/a batched product is not split/);
  });
});
