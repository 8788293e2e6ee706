/**
 * Attention cases for the head sizes and masks of Qwen3 and Gemma 3, run by both GPU suites and,
 * on the software adapters, under both kernel tunings (bothTunings: the untiled register-tile
 * kernels and the tiled shared-memory ones real GPUs run): sliding windows (transformers'
 * sliding_window_overlay: query t sees keys t − W < j ≤ t) alone and with padded and packed
 * batches, GQA 4:1 and 3:1, D = 128 and 256 with a query_pre_attn_scalar-style scale, odd T that
 * is no multiple of any block size; forward O and LSE and dQ, dK, dV vs the CPU reference and vs
 * tfjs autograd; decode vs the forward's last row and vs its reference; the block sizes chosen
 * for WebGPU's minimum 16 KiB of workgroup memory; typed errors for a bad window, scale or D.
 */
import { assert } from 'chai';
import { ConfigError, LimitError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { tuningsFor } from '../../../src/gpu/quirks/mod.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor } from '../../../src/gpu/tensor.ts';
import { attentionBackward, attentionDecode, attentionDecodeSplits, attentionForward, type AttentionTuning, attentionTuning } from '../../../src/ops/attention.ts';
import { attentionDecodeRef } from '../../../src/ops/attention.ref.ts';
import { relL2 } from '../../reference/tf.ts';
import { type AttnCfg, tfAttention } from '../attention_oracle.ts';
import { bothTunings, firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { assertClose, inputs, packed, reference, runGpu, tagOf, up } from './attention.ts';
import { tensorMaker } from './helpers.ts';

const OWNER = 'attention-window-case';
const TOL = 1e-5; // relative L2, f32

/** A context whose maxComputeWorkgroupStorageSize reads `bytes` (what a GPU at WebGPU's minimum reports). */
function withWorkgroupBytes(ctx: GpuContext, bytes: number, softwareTuning = false): GpuContext {
  return {
    tunings: tuningsFor(softwareTuning ? 'software' : 'gpu'),
    limit: (name: string) => (name === 'maxComputeWorkgroupStorageSize' ? bytes : ctx.limit(name)),
  } as unknown as GpuContext;
}

/**
 * The tiled block size a GPU with 16 KiB of workgroup memory picks for D (7 at D = 256): the
 * 'gpu' tuning runs with it, so the tests cover real GPUs' choice, not only llvmpipe's 32 KiB one.
 */
function gpuBlock16k(ctx: GpuContext, D: number): Partial<AttentionTuning> {
  return { bc: attentionTuning(withWorkgroupBytes(ctx, 16384), D).bc };
}

interface WindowCase {
  cfg: AttnCfg;
  /** Extra tuning on the 'gpu'-tuned context (block sizes that split T unevenly, several workgroups). */
  gpu?: (ctx: GpuContext) => Partial<AttentionTuning>;
  soft?: Partial<AttentionTuning>;
}

const CASES: WindowCase[] = [
  // Window 5 over T = 37, GQA 4:1, padded (lengths 37, 20); on the tiled side workgroups of 8 rows
  // and blocks of 5 keys, so whole blocks before a workgroup's window are skipped at offsets
  // that are no multiple of the block.
  { cfg: { B: 2, T: 37, Hq: 4, Hkv: 1, D: 16, window: 5, lengths: Int32Array.of(37, 20) }, gpu: () => ({ wg: 8, bc: 5 }) },
  // Window 16, GQA 3:1, packed (segments of 5, 20, 8 and 1, 14, 10 with padding), D = 8.
  {
    cfg: {
      B: 2, T: 37, Hq: 6, Hkv: 2, D: 8, window: 16,
      segments: Int32Array.from([...packed(37, [5, 20, 8], 0), ...packed(37, [1, 14, 10], 4)]),
    },
  },
  // Window 1: every row sees only itself.
  { cfg: { B: 1, T: 11, Hq: 2, Hkv: 1, D: 8, window: 1 } },
  // Qwen3: D = 128, GQA 4:1.
  { cfg: { B: 1, T: 19, Hq: 4, Hkv: 1, D: 128, window: 5 }, gpu: (ctx) => gpuBlock16k(ctx, 128) },
  // Gemma 3: D = 256, scale query_pre_attn_scalar^−0.5 (64 here, not D), local layer window 4 on
  // a padded batch; then a global layer (no window) with GQA 3:1 and packed sequences.
  { cfg: { B: 2, T: 13, Hq: 2, Hkv: 1, D: 256, window: 4, scale: 0.125, lengths: Int32Array.of(13, 6) }, gpu: (ctx) => gpuBlock16k(ctx, 256) },
  {
    cfg: { B: 1, T: 13, Hq: 3, Hkv: 1, D: 256, scale: 0.125, segments: packed(13, [4, 7], 2) },
    gpu: (ctx) => gpuBlock16k(ctx, 256),
  },
];

function tuningOf(ctx: GpuContext, c: WindowCase): Partial<AttentionTuning> | undefined {
  return ctx.tuning === 'software' ? c.soft : c.gpu?.(ctx);
}

function fwdBwdCase(c: WindowCase, seed: number): GpuCase {
  return {
    name: `attention window/head size: forward and gradients vs reference and tfjs, both tunings (${tagOf(c.cfg)})`,
    async fn() {
      const x = inputs(c.cfg, seed);
      const ref = reference(c.cfg, x);
      const tf = tfAttention(c.cfg, x);
      for (const ctx of await bothTunings()) {
        const tuning = tuningOf(ctx, c);
        const tag = `${tagOf(c.cfg)}, ${ctx.tuning} tuning${tuning ? ` ${JSON.stringify(tuning)}` : ''}`;
        const got = await runGpu(ctx, c.cfg, x, tuning);
        assertClose(got, ref, 'reference', tag);
        assertClose(got, tf, 'tfjs', tag);
      }
    },
  };
}

/**
 * Decode of each sequence's last token (the cache holds its first lengths[b] rows of k and v)
 * against the windowed forward's row lengths[b] − 1 and against the decode reference.
 */
async function decodeVsForward(ctx: GpuContext, c: AttnCfg, lengths: Int32Array, seed: number, splits?: number): Promise<void> {
  const { B, T, Hq, Hkv, D } = c;
  const x = inputs(c, seed);
  const full = await runGpu(ctx, c, x, tuningOf(ctx, { cfg: c, gpu: (g) => gpuBlock16k(g, D) }));
  const q1 = new Float32Array(B * Hq * D);
  for (let b = 0; b < B; b++) {
    const t = Math.max(lengths[b] - 1, 0);
    q1.set(x.q.subarray((b * T + t) * Hq * D, (b * T + t + 1) * Hq * D), b * Hq * D);
  }
  const tq = up(ctx, q1, [B, Hq, D], 'q1'), tk = up(ctx, x.k, [B, T, Hkv, D], 'kCache'), tv = up(ctx, x.v, [B, T, Hkv, D], 'vCache');
  const tl = up(ctx, lengths, [B], 'lengths');
  const out = emptyTensor(ctx, [B, Hq, D], 'f32', { owner: OWNER, label: 'decode out' });
  const rec = new Recorder(ctx);
  attentionDecode(rec, out, tq, tk, tv, tl, { window: c.window, scale: c.scale, splits });
  const read = rec.read(out);
  await rec.submit();
  const got = (await read) as Float32Array;
  const tag = `${tagOf(c)} lengths ${lengths.join(', ')}, ${ctx.tuning} tuning, splits ${splits ?? 'default'}`;
  for (let b = 0; b < B; b++) {
    const row = got.subarray(b * Hq * D, (b + 1) * Hq * D);
    if (lengths[b] === 0) {
      assert.isTrue(row.every((y) => y === 0), `an empty cache gives zeros (${tag})`);
      continue;
    }
    const t = lengths[b] - 1;
    const want = full.o.subarray((b * T + t) * Hq * D, (b * T + t + 1) * Hq * D);
    assert.isAtMost(relL2(row, want), TOL, `decode vs forward, sequence ${b} (${tag})`);
  }
  const ref = new Float32Array(B * Hq * D);
  attentionDecodeRef(ref, q1, x.k, x.v, lengths, { B, Tmax: T, Hq, Hkv, D }, { window: c.window, scale: c.scale });
  assert.isAtMost(relL2(got, ref), TOL, `decode vs reference (${tag})`);
  for (const t of [tq, tk, tv, tl, out]) t.release();
}

export const attentionWindowCases: GpuCase[] = [
  ...CASES.map((c, i) => fwdBwdCase(c, 300 + i)),
  {
    name: 'attention window: a window of T or more is no window (bitwise), both tunings',
    async fn() {
      const c: AttnCfg = { B: 2, T: 7, Hq: 4, Hkv: 2, D: 16 };
      const x = inputs(c, 310);
      for (const ctx of await bothTunings()) {
        const plain = await runGpu(ctx, c, x);
        for (const window of [7, 1000, Number.MAX_SAFE_INTEGER]) {
          const wide = await runGpu(ctx, { ...c, window }, x);
          for (const key of ['o', 'lse', 'dq', 'dk', 'dv'] as const) {
            assert.strictEqual(firstBitDiff(wide[key], plain[key]), -1, `${key}, window ${window}, ${ctx.tuning} tuning`);
          }
        }
      }
    },
  },
  {
    name: 'attention window: decode equals the windowed forward\'s last row (D 16, 128, 256; GQA; ragged lengths), both tunings',
    async fn() {
      for (const ctx of await bothTunings()) {
        await decodeVsForward(ctx, { B: 4, T: 37, Hq: 6, Hkv: 2, D: 16, window: 5 }, Int32Array.of(37, 20, 3, 0), 320);
        await decodeVsForward(ctx, { B: 4, T: 37, Hq: 6, Hkv: 2, D: 16, window: 16 }, Int32Array.of(37, 17, 16, 1), 321, 7);
        await decodeVsForward(ctx, { B: 2, T: 19, Hq: 4, Hkv: 1, D: 128, window: 5 }, Int32Array.of(19, 4), 322);
        await decodeVsForward(ctx, { B: 2, T: 13, Hq: 2, Hkv: 1, D: 256, window: 4, scale: 0.125 }, Int32Array.of(13, 6), 323);
        await decodeVsForward(ctx, { B: 2, T: 13, Hq: 2, Hkv: 1, D: 256, scale: 0.125 }, Int32Array.of(13, 6), 324);
      }
    },
  },
  {
    name: 'attention: block sizes fit WebGPU\'s minimum 16 KiB of workgroup memory at D = 256, else the untiled kernel',
    async fn(ctx) {
      const at16k = withWorkgroupBytes(ctx, 16384);
      // Two [bc, D] f32 tiles and a [bc] vec2 tile: 7 · (2 · 256 · 4 + 8) = 14392 B ≤ 16384.
      assert.deepEqual(attentionTuning(at16k, 256), { tiled: true, wg: 64, rows: 1, bc: 7 });
      assert.strictEqual(attentionTuning(at16k, 128).bc, 15);
      assert.strictEqual(attentionTuning(at16k, 64).bc, 16);
      assert.deepEqual(attentionTuning(withWorkgroupBytes(ctx, 16384, true), 256), { tiled: false, wg: 8, rows: 1, bc: 16 });
      assert.strictEqual(attentionTuning(withWorkgroupBytes(ctx, 16384, true), 128).rows, 2);
      // Not even one row fits: the untiled kernel, which needs no workgroup memory.
      assert.isFalse(attentionTuning(withWorkgroupBytes(ctx, 1024), 256).tiled);
      assert.throws(() => attentionTuning(at16k, 256, { bc: 8 }), LimitError, /block size 8 .* 16448 bytes, the device has 16384/);
      assert.throws(() => attentionTuning(withWorkgroupBytes(ctx, 1024), 256, { tiled: true }), LimitError, /block size/);
      // Decode parks D + 2 floats per split: 15 splits at D = 256, 16 below.
      assert.strictEqual(attentionDecodeSplits(at16k, 256), 15);
      assert.strictEqual(attentionDecodeSplits(at16k, 128), 16);
      assert.throws(() => attentionDecodeSplits(at16k, 256, 16), LimitError, /splits=16 needs 16512 bytes/);
    },
  },
  {
    name: 'attention window: a bad window, scale or head size is refused by name before anything is recorded',
    async fn(ctx) {
      const { make: f, release } = tensorMaker(ctx);
      const q = f([1, 5, 2, 8], 'f32', 'q'), k = f([1, 5, 1, 8], 'f32', 'k'), o = f([1, 5, 2, 8]), lse = f([1, 2, 5]);
      const len = f([1], 'i32', 'len'), q1 = f([1, 2, 8], 'f32', 'q1'), o1 = f([1, 2, 8]);
      const rec = new Recorder(ctx);
      for (const window of [0, -3, 2.5, NaN, Infinity, 2 ** 53, '4' as unknown as number]) {
        assert.throws(() => attentionForward(rec, o, lse, q, k, k, { window }), ConfigError, /^window: attention_fwd: the sliding window must be a positive safe integer/);
        assert.throws(() => attentionDecode(rec, o1, q1, k, k, len, { window }), ConfigError, /^window: attention_decode: /);
      }
      const dq = f([1, 5, 2, 8]), dk = f([1, 5, 1, 8]), dv = f([1, 5, 1, 8]), work = f([1, 2, 5, 2]), dout = f([1, 5, 2, 8]);
      assert.throws(() => attentionBackward(rec, dq, dk, dv, work, dout, q, k, k, o, lse, { window: 0 }), ConfigError, /^window: attention_bwd: /);
      for (const scale of [NaN, Infinity]) {
        assert.throws(() => attentionForward(rec, o, lse, q, k, k, { scale }), ConfigError, /^scale: attention_fwd: the softmax scale must be a finite number/);
      }
      const q260 = f([1, 2, 1, 260], 'f32', 'q260'), k260 = f([1, 2, 1, 260]);
      assert.throws(() => attentionForward(rec, q260, f([1, 1, 2]), q260, k260, k260), ShapeError, /D=260 .*multiple of 4 in \[4, 256\]/);
      assert.throws(() => attentionDecode(rec, f([1, 1, 260]), f([1, 1, 260]), k260, k260, len), ShapeError, /attention_decode: unsupported head size D=260/);
      assert.strictEqual(rec.pending, 0, 'nothing was recorded');
      release();
    },
  },
];
