/**
 * Attention cases (kernels/attention_fwd.wgsl, attention_bwd.wgsl, attention_decode.wgsl), run by
 * both GPU suites: forward O and LSE and the gradients dQ, dK, dV vs the CPU reference and vs tfjs
 * (masked softmax attention, tf.grads of Σ O∘G) on odd T, B 1–3, GQA / MHA / MQA and D 8–128;
 * padded (per-sequence lengths) and packed (segment ids) batches; the shared-memory variant real
 * GPUs use and odd register-tile heights; decode vs the forward's last row of each sequence;
 * bitwise-identical reruns; scratch bytes linear in T; typed errors before anything is recorded.
 */
import { assert } from 'chai';
import { LimitError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { attentionBackward, attentionDecode, attentionForward, type AttentionTuning, attentionWorkShape } from '../../../src/ops/attention.ts';
import { attentionBackwardRef, attentionDecodeRef, attentionForwardRef } from '../../../src/ops/attention.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { relL2 } from '../../reference/tf.ts';
import { type AttnCfg, type AttnInputs, type AttnResult, tfAttention } from '../attention_oracle.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { tensorMaker } from './helpers.ts';

const OWNER = 'attention-case';
const TOL = 1e-5; // relative L2, f32

export function inputs(c: AttnCfg, seed: number): AttnInputs {
  const rng = new Rng(seed, 7);
  const nq = c.B * c.T * c.Hq * c.D;
  const nk = c.B * c.T * c.Hkv * c.D;
  return { q: rng.normalArray(nq), k: rng.normalArray(nk), v: rng.normalArray(nk), g: rng.normalArray(nq) };
}

export function up(ctx: GpuContext, data: Float32Array | Int32Array, shape: number[], label: string): Tensor {
  return tensorFrom(ctx, data, shape, { owner: OWNER, label });
}

/** Forward then backward in one submission; every output read back. */
export async function runGpu(ctx: GpuContext, c: AttnCfg, x: AttnInputs, tuning?: Partial<AttentionTuning>): Promise<AttnResult> {
  const { B, T, Hq, Hkv, D } = c;
  const q = up(ctx, x.q, [B, T, Hq, D], 'q');
  const k = up(ctx, x.k, [B, T, Hkv, D], 'k');
  const v = up(ctx, x.v, [B, T, Hkv, D], 'v');
  const g = up(ctx, x.g, [B, T, Hq, D], 'dout');
  const lengths = c.lengths ? up(ctx, c.lengths, [B], 'lengths') : undefined;
  const segments = c.segments ? up(ctx, c.segments, [B, T], 'segments') : undefined;
  const e = (shape: number[], label: string) => emptyTensor(ctx, shape, 'f32', { owner: OWNER, label });
  const o = e(q.shape as number[], 'out'), lse = e([B, Hq, T], 'lse'), work = e(attentionWorkShape(q), 'work');
  const dq = e(q.shape as number[], 'dq'), dk = e(k.shape as number[], 'dk'), dv = e(k.shape as number[], 'dv');
  const opts = { scale: c.scale, window: c.window, lengths, segments, tuning };
  const rec = new Recorder(ctx, { label: 'attention case' });
  attentionForward(rec, o, lse, q, k, v, opts);
  attentionBackward(rec, dq, dk, dv, work, g, q, k, v, o, lse, opts);
  const reads = [o, lse, dq, dk, dv].map((t) => rec.read(t));
  await rec.submit();
  const [ro, rl, rq, rk, rv] = (await Promise.all(reads)) as Float32Array[];
  for (const t of [q, k, v, g, o, lse, work, dq, dk, dv, lengths, segments]) t?.release();
  return { o: ro, lse: rl, dq: rq, dk: rk, dv: rv };
}

export function reference(c: AttnCfg, x: AttnInputs): AttnResult {
  const { B, T, Hq, Hkv, D } = c;
  const r = { o: new Float32Array(x.q.length), lse: new Float32Array(B * Hq * T), dq: new Float32Array(x.q.length), dk: new Float32Array(x.k.length), dv: new Float32Array(x.k.length) };
  const dims = { B, T, Hq, Hkv, D };
  attentionForwardRef(r.o, r.lse, x.q, x.k, x.v, dims, c);
  attentionBackwardRef(r.dq, r.dk, r.dv, x.g, x.q, x.k, x.v, dims, c);
  return r;
}

/** Relative L2 error, with a floor for an all-zero reference (dQ at T = 1 is exactly 0). */
function relErr(got: Float32Array, want: Float32Array): number {
  let n2 = 0;
  for (const w of want) n2 += w * w;
  return relL2(got, want) * Math.sqrt(n2) / Math.max(Math.sqrt(n2), 1e-3 * Math.sqrt(want.length));
}

export function assertClose(got: AttnResult, want: AttnResult, against: string, tag: string, tol = TOL): void {
  for (const key of ['o', 'lse', 'dq', 'dk', 'dv'] as const) {
    const err = relErr(got[key], want[key]);
    assert.isAtMost(err, tol, `${key} vs ${against} ${tag}: relative L2 ${err.toExponential(2)}`);
  }
}

export function tagOf(c: AttnCfg): string {
  return `B=${c.B} T=${c.T} Hq=${c.Hq} Hkv=${c.Hkv} D=${c.D}${c.window ? ` window=${c.window}` : ''}${c.scale ? ` scale=${c.scale}` : ''}${c.lengths ? ' padded' : ''}${c.segments ? ' packed' : ''}`;
}

/** Segment ids for a packed row of T tokens: runs of the given lengths, the rest padding (−1). */
export function packed(T: number, runs: number[], firstId: number): Int32Array {
  const s = new Int32Array(T).fill(-1);
  let t = 0;
  runs.forEach((n, i) => {
    for (let j = 0; j < n && t < T; j++) s[t++] = firstId + 3 * i; // ids need not be consecutive
  });
  return s;
}

const PADDED: AttnCfg = { B: 3, T: 33, Hq: 4, Hkv: 2, D: 8, lengths: Int32Array.of(33, 17, 0) };
const PACKED: AttnCfg = {
  B: 2, T: 33, Hq: 2, Hkv: 1, D: 16,
  segments: Int32Array.from([...packed(33, [5, 20, 8], 0), ...packed(33, [1, 14, 10], 4)]),
};

/**
 * Shapes for the forward/backward checks: odd T, B 1–3, GQA, MHA, MQA, D 8..128. The larger
 * head sizes run one row per invocation: the software adapters compile big register tiles for
 * seconds each (SwiftShader ~10 s), and the tile heights are checked on their own below.
 */
const SHAPES: [AttnCfg, Partial<AttentionTuning>?][] = [
  [{ B: 1, T: 1, Hq: 1, Hkv: 1, D: 8 }],
  [{ B: 2, T: 7, Hq: 4, Hkv: 2, D: 16 }],
  [{ B: 3, T: 33, Hq: 2, Hkv: 2, D: 32, scale: 0.3 }, { rows: 1 }],
  [{ B: 1, T: 100, Hq: 4, Hkv: 1, D: 64 }, { rows: 1 }],
  [{ B: 2, T: 7, Hq: 2, Hkv: 1, D: 128 }, { rows: 1 }],
];

function fwdBwdCase(c: AttnCfg, tuning: Partial<AttentionTuning> | undefined, seed: number): GpuCase {
  return {
    name: `attention: forward and gradients vs reference and tfjs (${tagOf(c)}${tuning ? `, ${JSON.stringify(tuning)}` : ''})`,
    async fn(ctx) {
      const x = inputs(c, seed);
      const got = await runGpu(ctx, c, x, tuning);
      assertClose(got, reference(c, x), 'reference', tagOf(c));
      assertClose(got, tfAttention(c, x), 'tfjs', tagOf(c));
    },
  };
}

export const attentionCases: GpuCase[] = [
  ...SHAPES.map(([c, tuning], i) => fwdBwdCase(c, tuning, 100 + i)),
  {
    name: 'attention: padded batch (lengths 33, 17, 0) — padding rows give O = 0, LSE = 0 and no gradient',
    async fn(ctx) {
      const x = inputs(PADDED, 11);
      const got = await runGpu(ctx, PADDED, x);
      assertClose(got, reference(PADDED, x), 'reference', tagOf(PADDED));
      assertClose(got, tfAttention(PADDED, x), 'tfjs', tagOf(PADDED));
      const { T, Hq, D } = PADDED;
      for (let t = 17; t < T; t++) for (let d = 0; d < Hq * D; d++) assert.strictEqual(got.o[(T + t) * Hq * D + d], 0, `O row ${t} of sequence 1`);
      assert.isTrue(got.lse.subarray(2 * Hq * T).every((l) => l === 0), 'LSE of the empty sequence');
      assert.isTrue(got.dk.subarray(2 * T * 2 * D).every((l) => l === 0), 'dK of the empty sequence');
    },
  },
  {
    name: 'attention: packed batch (segment ids, trailing padding) vs reference and tfjs',
    async fn(ctx) {
      const x = inputs(PACKED, 12);
      const got = await runGpu(ctx, PACKED, x);
      assertClose(got, reference(PACKED, x), 'reference', tagOf(PACKED));
      assertClose(got, tfAttention(PACKED, x), 'tfjs', tagOf(PACKED));
    },
  },
  {
    name: 'attention: the shared-memory variant (real GPUs) and odd register-tile heights give the same results',
    async fn(ctx) {
      // Tiled with partial key blocks and segments; a register tile of 5 rows (a partial second
      // vec4 group of rows) in workgroups of 4 invocations, on a padded batch.
      for (const [c, tuning] of [[PACKED, { tiled: true, wg: 8, bc: 5 }], [PADDED, { rows: 5, wg: 4 }]] as const) {
        const x = inputs(c, 13);
        const got = await runGpu(ctx, c, x, tuning);
        assertClose(got, reference(c, x), 'reference', `${tagOf(c)} ${JSON.stringify(tuning)}`);
      }
    },
  },
  {
    name: 'attention: decode equals the forward\'s last row of each sequence (ragged lengths 33, 20, 1, 0; GQA)',
    async fn(ctx) {
      const B = 4, Tmax = 33, Hq = 4, Hkv = 2, D = 16;
      const c: AttnCfg = { B, T: Tmax, Hq, Hkv, D };
      const x = inputs(c, 14);
      const lengths = Int32Array.of(33, 20, 1, 0);
      const full = await runGpu(ctx, c, x);
      // The query of each sequence's last token, [B, Hq, D].
      const q1 = new Float32Array(B * Hq * D);
      for (let b = 0; b < B; b++) {
        const t = Math.max(lengths[b] - 1, 0);
        q1.set(x.q.subarray((b * Tmax + t) * Hq * D, (b * Tmax + t + 1) * Hq * D), b * Hq * D);
      }
      const tq = up(ctx, q1, [B, Hq, D], 'q1'), tk = up(ctx, x.k, [B, Tmax, Hkv, D], 'kCache'), tv = up(ctx, x.v, [B, Tmax, Hkv, D], 'vCache');
      const tl = up(ctx, lengths, [B], 'lengths');
      const out = emptyTensor(ctx, [B, Hq, D], 'f32', { owner: OWNER, label: 'decode out' });
      const rec = new Recorder(ctx);
      attentionDecode(rec, out, tq, tk, tv, tl);
      const read = rec.read(out);
      await rec.submit();
      const got = (await read) as Float32Array;
      for (let b = 0; b < B; b++) {
        const row = got.subarray(b * Hq * D, (b + 1) * Hq * D);
        if (lengths[b] === 0) {
          assert.isTrue(row.every((y) => y === 0), 'an empty cache gives zeros');
          continue;
        }
        const t = lengths[b] - 1;
        const want = full.o.subarray((b * Tmax + t) * Hq * D, (b * Tmax + t + 1) * Hq * D);
        assert.isAtMost(relL2(row, want), TOL, `sequence ${b} (length ${lengths[b]})`);
      }
      const ref = new Float32Array(B * Hq * D);
      attentionDecodeRef(ref, q1, x.k, x.v, lengths, { B, Tmax, Hq, Hkv, D });
      assert.isAtMost(relL2(got, ref), TOL, 'decode vs reference');
      for (const t of [tq, tk, tv, tl, out]) t.release();
    },
  },
  {
    name: 'attention: two runs give bitwise-identical O, LSE, dQ, dK, dV and decode output',
    async fn(ctx) {
      for (const c of [PACKED, SHAPES[1][0]]) {
        const x = inputs(c, 15);
        const r1 = await runGpu(ctx, c, x);
        const r2 = await runGpu(ctx, c, x);
        for (const key of ['o', 'lse', 'dq', 'dk', 'dv'] as const) assert.strictEqual(firstBitDiff(r1[key], r2[key]), -1, `${key} ${tagOf(c)}`);
      }
      const B = 2, Tmax = 40, Hq = 2, Hkv = 1, D = 16;
      const rng = new Rng(16, 0);
      const tq = up(ctx, rng.normalArray(B * Hq * D), [B, Hq, D], 'q'), tk = up(ctx, rng.normalArray(B * Tmax * D), [B, Tmax, Hkv, D], 'k');
      const tv = up(ctx, rng.normalArray(B * Tmax * D), [B, Tmax, Hkv, D], 'v'), tl = up(ctx, Int32Array.of(40, 23), [B], 'lengths');
      const outs: Float32Array[] = [];
      for (let i = 0; i < 2; i++) {
        const out = emptyTensor(ctx, [B, Hq, D], 'f32', { owner: OWNER });
        const rec = new Recorder(ctx);
        attentionDecode(rec, out, tq, tk, tv, tl);
        const read = rec.read(out);
        await rec.submit();
        outs.push((await read) as Float32Array);
        out.release();
      }
      assert.strictEqual(firstBitDiff(outs[0], outs[1]), -1, 'decode');
      for (const t of [tq, tk, tv, tl]) t.release();
    },
  },
  {
    name: 'attention: the forward allocates no scratch and its bytes grow linearly in T, not as T²',
    async fn(ctx) {
      const peak = async (T: number): Promise<number> => {
        const owner = `attention-memory-${T}-${Math.random()}`;
        const B = 1, H = 2, D = 16;
        const rng = new Rng(17, T);
        const t = (shape: number[]) => tensorFrom(ctx, rng.normalArray(shape.reduce((a, b) => a * b)), shape, { owner });
        const q = t([B, T, H, D]), k = t([B, T, H, D]), v = t([B, T, H, D]), o = t([B, T, H, D]), lse = t([B, H, T]);
        const live = ctx.pool.stats().liveBytes;
        const rec = new Recorder(ctx);
        attentionForward(rec, o, lse, q, k, v);
        assert.strictEqual(ctx.pool.stats().liveBytes, live, 'the wrapper allocates nothing from the pool');
        await rec.submit();
        const bytes = ctx.pool.owner(owner).peakBytes;
        for (const x of [q, k, v, o, lse]) x.release();
        return bytes;
      };
      const small = await peak(64);
      const large = await peak(512);
      // 8× the tokens: linear growth gives 8× (pool size classes aside); T² would give 64×.
      assert.isAtMost(large / small, 8 * 1.5, `peak bytes ${small} at T=64, ${large} at T=512`);
    },
  },
  {
    name: 'attention: bad input (GQA ratio, head sizes, dtypes, shapes, aliasing) is refused before anything is recorded',
    async fn(ctx) {
      const { make: f, release } = tensorMaker(ctx);
      const q = f([2, 5, 3, 8], 'f32', 'q'), k = f([2, 5, 2, 8], 'f32', 'k'), o = f([2, 5, 3, 8]), lse = f([2, 3, 5]);
      const q4 = f([2, 5, 4, 8], 'f32', 'q4'), o4 = f([2, 5, 4, 8]), lse4 = f([2, 4, 5]), k16 = f([2, 5, 2, 16], 'f32', 'k16');
      const q6 = f([2, 5, 4, 6], 'f32', 'q6'), k6 = f([2, 5, 2, 6]), qi = f([2, 5, 4, 8], 'i32', 'qi');
      const lenF = f([2], 'f32', 'lenF'), seg = f([2, 4], 'i32', 'seg'), len = f([2], 'i32', 'len');
      const q260 = f([1, 2, 1, 260], 'f32', 'q260'), k260 = f([1, 2, 1, 260]);
      const rec = new Recorder(ctx);
      const throws = (fn: () => void, re: RegExp, type: typeof ShapeError | typeof LimitError = ShapeError) => assert.throws(fn, type, re);
      throws(() => attentionForward(rec, o, lse, q, k, k), /attention_fwd: query heads Hq=3 .* must be a multiple of kv heads Hkv=2/);
      throws(() => attentionForward(rec, o4, lse4, q4, k16, k16), /attention_fwd: head sizes differ: q q4 \[2, 5, 4, 8\] has D=8, k k16 \[2, 5, 2, 16\] has D=16/);
      throws(() => attentionForward(rec, q6, lse4, q6, k6, k6), /unsupported head size D=6/);
      throws(() => attentionForward(rec, q260, f([1, 1, 2]), q260, k260, k260), /unsupported head size D=260 .*multiple of 4 in \[4, 256\]/);
      throws(() => attentionForward(rec, o4, lse4, qi, k, k), /attention_fwd: q .* must be f32, got i32/);
      throws(() => attentionForward(rec, o4, lse4, q4, k, k, { lengths: lenF }), /lengths .* must be i32, got f32/);
      throws(() => attentionForward(rec, o4, lse4, q4, k, k, { segments: seg }), /segments must have shape \[2, 5\], got Tensor\(seg: i32\[2, 4\]\)/);
      throws(() => attentionForward(rec, o4, lse4, q4, k, k, { lengths: len, segments: seg }), /lengths or segments, not both/);
      throws(() => attentionForward(rec, o4, lse, q4, k, k), /lse must have shape \[2, 4, 5\]/);
      throws(() => attentionForward(rec, q4, lse4, q4, k, k), /out .* must not alias q/);
      throws(() => attentionBackward(rec, o4, k, k16, lse4, o4, q4, k, k, o4, lse4), /attention_bwd: dv must have shape \[2, 5, 2, 8\], got Tensor/);
      throws(() => attentionBackward(rec, o4, f([2, 5, 2, 8]), f([2, 5, 2, 8]), lse4, q4, q4, k, k, q4, lse4), /work must have shape \[2, 4, 5, 2\], got Tensor/);
      throws(() => attentionDecode(rec, f([2, 4, 8]), f([2, 4, 8]), k, k, lenF), /attention_decode: lengths .* must be i32/);
      throws(() => attentionDecode(rec, f([2, 3, 8]), f([2, 3, 8]), k, k, len), /attention_decode: query heads Hq=3/);
      throws(() => attentionForward(rec, o4, lse4, q4, k, k, { tuning: { tiled: true, rows: 8 } }), /rows per invocation 8 outside \[1, 4\] \(tiled\)/, LimitError);
      assert.strictEqual(rec.pending, 0, 'nothing was recorded');
      release();
    },
  },
];
