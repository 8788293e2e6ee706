/**
 * KV cache cases (kernels/kv_cache.wgsl, src/ops/kv_cache.ts, src/model/kv_cache.ts), run by both
 * GPU suites: appends at ragged start rows with padding and rows past the cache dropped (exact vs
 * the CPU reference), the cache layout read back by attentionDecode vs a CPU attention,
 * extend/advance bookkeeping, bitwise determinism, owner accounting and release, typed errors.
 * (Llama's RoPE before the append is the RoPE op's: test/shared/cases/rope.ts, and generate.ts.)
 */
import { assert } from 'chai';
import { ReleasedError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { PRESETS } from '../../../src/model/presets.ts';
import { KvCache, kvCacheBytes } from '../../../src/model/kv_cache.ts';
import { attentionDecode } from '../../../src/ops/attention.ts';
import { kvAdvance, kvAppend, kvExtend } from '../../../src/ops/kv_cache.ts';
import { kvAdvanceRef, kvAppendRef, kvExtendRef } from '../../../src/ops/kv_cache.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import type { GpuCase } from '../register.ts';
import { firstBitDiff } from '../gpu.ts';
import { assertClose, assertThrowsTyped, empty, maxErrors, releaseAll, reportErrors, run, tensorMaker, up } from './helpers.ts';

interface AppendCase { B: number; Tn: number; Hkv: number; D: number; Tmax: number; start: number[]; count?: number[] }

interface AppendOut { kCache: Float32Array; vCache: Float32Array; k: Float32Array }

/** Runs kvAppend on random data (caches pre-filled with noise) and the reference on copies. */
async function appendBoth(ctx: GpuContext, c: AppendCase, seed: number): Promise<{ gpu: AppendOut; ref: AppendOut; input: AppendOut }> {
  const rng = new Rng(seed, 3);
  const { B, Tn, Hkv, D, Tmax } = c;
  const input: AppendOut = {
    kCache: rng.normalArray(B * Tmax * Hkv * D), vCache: rng.normalArray(B * Tmax * Hkv * D), k: rng.normalArray(B * Tn * Hkv * D),
  };
  const v = rng.normalArray(B * Tn * Hkv * D);
  const start = Int32Array.from(c.start);
  const count = c.count ? Int32Array.from(c.count) : undefined;
  const t = {
    kCache: up(ctx, input.kCache.slice(), [B, Tmax, Hkv, D]), vCache: up(ctx, input.vCache.slice(), [B, Tmax, Hkv, D]),
    k: up(ctx, input.k.slice(), [B, Tn, Hkv, D]), v: up(ctx, v, [B, Tn, Hkv, D]),
    start: up(ctx, start), count: count ? up(ctx, count) : undefined,
  };
  const [kc, vc, k] = await run(ctx, [t.kCache, t.vCache, t.k], (rec) => kvAppend(rec, t.kCache, t.vCache, t.k, t.v, t.start, { count: t.count }));
  releaseAll(...Object.values(t));
  const ref: AppendOut = { kCache: input.kCache.slice(), vCache: input.vCache.slice(), k: input.k.slice() };
  kvAppendRef({ B, Tn, Hkv, D, Tmax, kCache: ref.kCache, vCache: ref.vCache, k: ref.k, v, start, count });
  return { gpu: { kCache: kc as Float32Array, vCache: vc as Float32Array, k: k as Float32Array }, ref, input };
}

const ODD: AppendCase = { B: 3, Tn: 5, Hkv: 3, D: 6, Tmax: 13, start: [0, 4, 10], count: [5, 2, 4] };

export const kvCacheCases: GpuCase[] = [
  {
    name: 'kv_cache: append at ragged rows, padding and rows past Tmax untouched, exact vs reference (odd sizes)',
    fn: async (ctx) => {
      for (const c of [ODD, { ...ODD, count: undefined, start: [2, 0, 9] }, { B: 1, Tn: 1, Hkv: 1, D: 2, Tmax: 1, start: [0] }]) {
        const { gpu, ref, input } = await appendBoth(ctx, c, 11);
        assert.strictEqual(firstBitDiff(gpu.kCache, ref.kCache), -1, `kCache ${JSON.stringify(c)}`);
        assert.strictEqual(firstBitDiff(gpu.vCache, ref.vCache), -1, `vCache ${JSON.stringify(c)}`);
        assert.strictEqual(firstBitDiff(gpu.k, input.k), -1, 'k is left alone');
      }
      // Sequence 2 of ODD starts at row 10 with 4 real rows: rows 10..12 written, row 13 would be past Tmax.
      const { gpu, input } = await appendBoth(ctx, ODD, 12);
      const { Tmax, Hkv, D } = ODD;
      const rowOf = (b: number, r: number) => gpu.kCache.subarray(((b * Tmax + r) * Hkv) * D, ((b * Tmax + r + 1) * Hkv) * D);
      const inRow = (b: number, r: number) => input.kCache.subarray(((b * Tmax + r) * Hkv) * D, ((b * Tmax + r + 1) * Hkv) * D);
      assert.notStrictEqual(firstBitDiff(rowOf(2, 12), inRow(2, 12)), -1, 'row 12 of sequence 2 written');
      assert.strictEqual(firstBitDiff(rowOf(1, 6), inRow(1, 6)), -1, 'row 6 of sequence 1 (padding) untouched');
      assert.strictEqual(firstBitDiff(rowOf(0, 5), inRow(0, 5)), -1, 'row 5 of sequence 0 untouched');
    },
  },
  {
    name: 'kv_cache: decode-step appends are what attentionDecode reads (layout [B, Tmax, Hkv, D], ragged lengths, GQA)',
    fn: async (ctx) => {
      const rng = new Rng(5, 1);
      const B = 3, Hq = 6, Hkv = 2, D = 8, Tmax = 19, lens = [1, 7, 19];
      const kh = rng.normalArray(B * Tmax * Hkv * D), vh = rng.normalArray(B * Tmax * Hkv * D);
      const kc = up(ctx, kh.slice(), [B, Tmax, Hkv, D]), vc = up(ctx, vh.slice(), [B, Tmax, Hkv, D]);
      const kNew = rng.normalArray(B * Hkv * D), vNew = rng.normalArray(B * Hkv * D), qh = rng.normalArray(B * Hq * D);
      const positions = up(ctx, Int32Array.from(lens, (l) => l - 1)), lengths = up(ctx, Int32Array.from(lens));
      const k = up(ctx, kNew, [B, 1, Hkv, D]), v = up(ctx, vNew, [B, 1, Hkv, D]), q = up(ctx, qh, [B, Hq, D]), out = empty(ctx, [B, Hq, D]);
      const [got] = await run(ctx, [out], (rec) => {
        kvAppend(rec, kc, vc, k, v, positions);
        attentionDecode(rec, out, q, kc, vc, lengths);
      });
      releaseAll(kc, vc, positions, lengths, k, v, q, out);
      const want = new Float32Array(B * Hq * D);
      for (let b = 0; b < B; b++) {
        const n = lens[b];
        for (let hk = 0; hk < Hkv; hk++) {
          const o = ((b * Tmax + n - 1) * Hkv + hk) * D;
          kh.set(kNew.subarray((b * Hkv + hk) * D, (b * Hkv + hk + 1) * D), o);
          vh.set(vNew.subarray((b * Hkv + hk) * D, (b * Hkv + hk + 1) * D), o);
        }
        for (let h = 0; h < Hq; h++) {
          const hk = Math.floor(h / (Hq / Hkv));
          const s = Array.from({ length: n }, (_, j) => {
            let dot = 0;
            for (let d = 0; d < D; d++) dot += qh[(b * Hq + h) * D + d] * kh[((b * Tmax + j) * Hkv + hk) * D + d];
            return dot / Math.sqrt(D);
          });
          const m = Math.max(...s);
          const e = s.map((x) => Math.exp(x - m));
          const z = e.reduce((a, x) => a + x, 0);
          for (let d = 0; d < D; d++) {
            let acc = 0;
            for (let j = 0; j < n; j++) acc += (e[j] / z) * vh[((b * Tmax + j) * Hkv + hk) * D + d];
            want[(b * Hq + h) * D + d] = acc;
          }
        }
      }
      assertClose(got, want, 1e-5, 'attentionDecode over appended cache');
    },
  },
  {
    name: 'kv_cache: extend and advance (lengths, positions, sampler counters, history) exact vs reference, clamped at Tmax',
    fn: async (ctx) => {
      const B = 5, Tmax = 9, K = 3;
      const lens = Int32Array.from([0, 3, 8, 9, 2]), count = Int32Array.from([4, 5, 1, 2, 0]);
      const keys = Uint32Array.from([7, 0, 8, 4, 9, 0xffffffff, 10, 1, 11, 2]);
      const sampled = { tokens: Int32Array.from([3, 0, 258, 17, 5]), logprobs: Float32Array.from([-1.5, 0, -0.25, -3, -7]), logprobsRaw: Float32Array.from([-2, -0.5, -1e-8, -4, -9]) };
      const hist0 = new Uint32Array(K * B * 3).fill(0xdeadbeef);
      const t = {
        lengths: up(ctx, lens.slice()), count: up(ctx, count), positions: up(ctx, new Int32Array(B)), keys: up(ctx, keys.slice(), [B, 2]),
        tokens: up(ctx, sampled.tokens), logprobs: up(ctx, sampled.logprobs), logprobsRaw: up(ctx, sampled.logprobsRaw), history: up(ctx, hist0.slice(), [K, B, 3]),
      };
      const outs = await run(ctx, [t.lengths, t.positions, t.keys, t.history], (rec) => {
        kvExtend(rec, t.lengths, t.count, Tmax);
        kvAdvance(rec, t, t, t.history, 1, Tmax);
        kvAdvance(rec, t, t, t.history, 2, Tmax);
      });
      releaseAll(...Object.values(t));
      const ref = { lengths: lens.slice(), positions: new Int32Array(B), keys: keys.slice() };
      const hist = hist0.slice();
      kvExtendRef(ref.lengths, count, Tmax);
      kvAdvanceRef(ref, sampled, hist, 1, Tmax);
      kvAdvanceRef(ref, sampled, hist, 2, Tmax);
      assert.deepEqual(Array.from(outs[0]), Array.from(ref.lengths), 'lengths');
      assert.deepEqual(Array.from(outs[1]), Array.from(ref.positions), 'positions');
      assert.deepEqual(Array.from(outs[2]), Array.from(ref.keys), 'keys');
      assert.strictEqual(firstBitDiff(outs[3], hist), -1, 'history');
      assert.deepEqual(Array.from(ref.lengths), [6, 9, 9, 9, 4]);
      assert.deepEqual(Array.from(ref.keys.filter((_, i) => i % 2 === 1)), [2, 6, 1, 3, 4], 'counters +2 (u32 wraps)');
      assert.strictEqual(new Float32Array(outs[3].buffer, outs[3].byteOffset + 4 * ((2 * B + 2) * 3 + 2), 1)[0], Math.fround(-1e-8), 'logprob bits survive');
    },
  },
  {
    name: 'kv_cache: KvCache charges its owner, holds [B, Tmax, Hkv, D] per layer, and releases everything',
    fn: async (ctx) => {
      for (const cfg of [PRESETS['tiny-gpt2'], PRESETS['tiny-llama']]) {
        const owner = `kv-case-${cfg.family}`;
        const cache = KvCache.create(ctx, cfg, 3, 17, { owner, streams: [5, 6, 7] });
        assert.strictEqual(cache.k.length, cfg.nLayer);
        assert.deepEqual([...cache.k[1].shape], [3, 17, cfg.nKvHead, cfg.headDim]);
        assert.strictEqual(cache.bytes, kvCacheBytes(cfg, 3, 17));
        assert.isAtLeast(ctx.pool.owner(owner).currentBytes, cache.bytes);
        const [keys, lengths] = await run(ctx, [cache.keys, cache.lengths], () => {});
        assert.deepEqual(Array.from(keys), [5, 0, 6, 0, 7, 0]);
        assert.deepEqual(Array.from(lengths), [0, 0, 0]);
        cache.claimPrefill();
        assertThrowsTyped(() => cache.claimPrefill(), ShapeError, /already prefilled/);
        cache.release();
        assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0);
        assert.throws(() => cache.release(), ReleasedError);
      }
      const cfg = PRESETS['tiny-gpt2'];
      assertThrowsTyped(() => KvCache.create(ctx, cfg, 0, 4), ShapeError, /batch size B/);
      assertThrowsTyped(() => KvCache.create(ctx, cfg, 2, cfg.maxSeqLen + 1), ShapeError, /Tmax = 65 exceed the model's maxSeqLen of 64/);
      assertThrowsTyped(() => KvCache.create(ctx, cfg, 2, 4, { streams: [1] }), ShapeError, /1 sampler streams for B = 2/);
      assert.strictEqual(ctx.pool.owner('kv-cache').currentBytes, 0, 'failed creations allocate nothing');
    },
  },
  {
    name: 'kv_cache: bad shapes, dtypes and aliasing are refused with typed errors before dispatch',
    fn: async (ctx) => {
      const { make, release } = tensorMaker(ctx);
      const f = (shape: number[]) => make(shape);
      const i = (shape: number[]) => make(shape, 'i32');
      const kc = f([2, 8, 2, 4]), vc = f([2, 8, 2, 4]), k = f([2, 3, 2, 4]), v = f([2, 3, 2, 4]);
      const start = i([2]);
      const rec = new Recorder(ctx, { label: 'kv errors' });
      assertThrowsTyped(() => kvAppend(rec, kc, vc, k, v, f([2])), ShapeError, /kv_cache\.append: start .* must be i32/);
      assertThrowsTyped(() => kvAppend(rec, f([2, 8, 3, 4]), f([2, 8, 3, 4]), k, v, start), ShapeError, /kCache \[2, 8, 3, 4\] must be \[2, Tmax, 2, 4\] for k \[2, 3, 2, 4\]/);
      assertThrowsTyped(() => kvAppend(rec, kc, f([2, 8, 2, 5]), k, v, start), ShapeError, /vCache must have shape \[2, 8, 2, 4\]/);
      assertThrowsTyped(() => kvAppend(rec, f([1, 4, 1, 3]), f([1, 4, 1, 3]), f([1, 1, 1, 3]), f([1, 1, 1, 3]), i([1])), ShapeError, /D = 3 .* must be even/);
      assertThrowsTyped(() => kvAppend(rec, kc, vc, k, v, start, { count: i([3]) }), ShapeError, /count must have shape \[2\]/);
      assertThrowsTyped(() => kvAppend(rec, kc, kc, k, v, start), ShapeError, /kCache .* must not alias vCache/);
      assertThrowsTyped(() => kvExtend(rec, start, i([3]), 8), ShapeError, /kv_cache\.extend: count must have shape \[2\]/);
      const st = { lengths: i([2]), positions: i([2]), keys: empty(ctx, [2, 2], 'u32') };
      const sm = { tokens: i([2]), logprobs: f([2]), logprobsRaw: f([2]) };
      const hist = empty(ctx, [4, 2, 3], 'u32');
      const hi32 = empty(ctx, [4, 2, 3], 'i32'), ki32 = empty(ctx, [2, 2], 'i32');
      assertThrowsTyped(() => kvAdvance(rec, st, sm, hist, 4, 8), ShapeError, /step 4 outside the history's 4 rows/);
      assertThrowsTyped(() => kvAdvance(rec, st, sm, hi32, 0, 8), ShapeError, /history .* must be u32/);
      assertThrowsTyped(() => kvAdvance(rec, { ...st, keys: ki32 }, sm, hist, 0, 8), ShapeError, /keys .* must be u32/);
      assertThrowsTyped(() => kvAdvance(rec, st, { ...sm, tokens: i([3]) }, hist, 0, 8), ShapeError, /tokens .* must hold B = 2 values/);
      assert.strictEqual(rec.pending, 0, 'nothing was recorded');
      release();
      releaseAll(hist, hi32, ki32, st.keys);
    },
  },
  {
    name: 'kv_cache: largest errors (printed for the report)',
    fn: async () => {
      reportErrors('kv_cache');
      for (const [k, v] of maxErrors) if (/attentionDecode over appended/.test(k)) assert.isAtMost(v, 1e-5, k);
    },
  },
];
