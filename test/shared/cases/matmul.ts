/**
 * matmul cases (kernels/matmul.wgsl and its f16-B variant matmul_f16), run by both GPU suites: GPU vs the
 * CPU reference and vs tfjs (tf.matMul; the backward products vs tf.grads) on shapes that divide
 * no tile (M, N or K = 1 included), all four transpose combinations, batches with a broadcast
 * operand, bias, alpha and accumulate, f16 B where the device has shader-f16, bitwise-identical
 * reruns, texture reads (main_tex) bitwise equal to buffer reads, a weight's kept texture copy
 * made again after every write, and typed errors naming the kernel and shapes.
 */
import { assert } from 'chai';
import { LimitError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder, texelTableWidth } from '../../../src/gpu/recorder.ts';
import { KEPT_TEXELS_OWNER } from '../../../src/gpu/kept_texels.ts';
import { Tensor } from '../../../src/gpu/tensor.ts';
import { residualAdd } from '../../../src/ops/residual.ts';
import { geluForward } from '../../../src/ops/gelu.ts';
import { MAX_TEXTURE_COPY_BYTES, type MatmulConfig, matmul, matmulConfigFor, type MatmulOptions, planMatmul } from '../../../src/ops/matmul.ts';
import { matmulRef } from '../../../src/ops/matmul.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { tf } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { assertClose, empty, OWNER, releaseAll, run, up } from './helpers.ts';
import { configs, ODD_TILED, toF16 } from './matmul_helpers.ts';

/**
 * [M, N, K]. Every transpose combination runs on a shape that divides no tile and no vector width
 * (scalar loads) and on one whose dimensions are multiples of 4 (4-wide loads); the degenerate
 * shapes (M, N or K = 1) run once. Each distinct combination compiles a pipeline — about a second
 * on llvmpipe — so the list is short and the other cases reuse its shapes.
 */
const SHAPES_ALL_TRANS: [number, number, number][] = [[33, 100, 7], [64, 48, 96]];
const SHAPES_EDGE: [number, number, number][] = [[1, 1, 1], [1, 7, 33], [7, 1, 100], [1, 96, 128]];
const TRANS: [boolean, boolean][] = [[false, false], [false, true], [true, false], [true, true]];
const TOL_REF = 2e-6; // GPU f32 sums vs the f64 reference
const TOL_TF = 1e-5;

interface Problem {
  batch: number; M: number; N: number; K: number; aBatch: number; bBatch: number; transA: boolean; transB: boolean;
}

const aShape = (p: Problem) => [...(p.aBatch > 1 ? [p.aBatch] : []), ...(p.transA ? [p.K, p.M] : [p.M, p.K])];
const bShape = (p: Problem) => [...(p.bBatch > 1 ? [p.bBatch] : []), ...(p.transB ? [p.N, p.K] : [p.K, p.N])];
const cShape = (p: Problem) => [...(p.batch > 1 ? [p.batch] : []), p.M, p.N];
const tag = (p: Problem) => `[batch ${p.aBatch}/${p.bBatch} M=${p.M} N=${p.N} K=${p.K}${p.transA ? ' Aᵀ' : ''}${p.transB ? ' Bᵀ' : ''}]`;

/** Runs one product on the GPU: b may be given as f16 bits. */
async function gpuMatmul(ctx: GpuContext, p: Problem, a: Float32Array, b: Float32Array | Uint16Array, cfg: MatmulConfig,
  extra: { bias?: Float32Array; c0?: Float32Array; alpha?: number; activation?: 'gelu' } = {}): Promise<Float32Array> {
  const ta = up(ctx, a, aShape(p), 'a');
  const tb = up(ctx, b, bShape(p), 'b');
  const tc = extra.c0 ? up(ctx, extra.c0, cShape(p), 'c') : empty(ctx, cShape(p), 'f32', 'c');
  const tbias = extra.bias ? up(ctx, extra.bias, [p.N], 'bias') : undefined;
  const opts: MatmulOptions = { transA: p.transA, transB: p.transB, config: cfg, bias: tbias, accumulate: Boolean(extra.c0), alpha: extra.alpha, activation: extra.activation };
  const [c] = await run<Float32Array>(ctx, [tc], (rec) => matmul(rec, tc, ta, tb, opts));
  releaseAll(ta, tb, tc, tbias);
  return c;
}

function refMatmul(p: Problem, a: Float32Array, b: Float32Array, extra: { bias?: Float32Array; c0?: Float32Array; alpha?: number; activation?: 'gelu' } = {}): Float32Array {
  const c = extra.c0 ? extra.c0.slice() : new Float32Array(p.batch * p.M * p.N);
  matmulRef(c, a, b, p, { bias: extra.bias, accumulate: Boolean(extra.c0), alpha: extra.alpha, activation: extra.activation });
  return c;
}

/** tfjs: batches are expanded explicitly (no reliance on broadcasting in tf.matMul). */
function tfMatmul(p: Problem, a: Float32Array, b: Float32Array): Float32Array {
  return tf.tidy(() => {
    const expand = (x: Float32Array, batch: number, shape: number[]) => {
      const t = tf.tensor(x, shape);
      return batch === 1 && p.batch > 1 ? t.reshape([1, ...shape]).tile([p.batch, 1, 1]) : t;
    };
    return tf.matMul(expand(a, p.aBatch, aShape(p)), expand(b, p.bBatch, bShape(p)), p.transA, p.transB).dataSync() as Float32Array;
  });
}

function problem(M: number, N: number, K: number, transA = false, transB = false, aBatch = 1, bBatch = 1): Problem {
  return { batch: Math.max(aBatch, bBatch), M, N, K, aBatch, bBatch, transA, transB };
}

function operands(seed: number, p: Problem): { a: Float32Array; b: Float32Array } {
  const rng = new Rng(seed, p.M * 7919 + p.N * 31 + p.K);
  return { a: rng.normalArray(p.aBatch * p.M * p.K), b: rng.normalArray(p.bBatch * p.K * p.N) };
}

export const matmulCases: GpuCase[] = [
  {
    name: 'matmul: four transpose combinations and degenerate shapes match the reference and tfjs',
    async fn(ctx) {
      const { cfg } = configs(ctx)[0];
      const problems = [...SHAPES_ALL_TRANS.flatMap(([M, N, K]) => TRANS.map(([ta, tb]) => problem(M, N, K, ta, tb))),
        ...SHAPES_EDGE.map(([M, N, K]) => problem(M, N, K))];
      for (const p of problems) {
        const { a, b } = operands(1, p);
        const got = await gpuMatmul(ctx, p, a, b, cfg);
        assertClose(got, refMatmul(p, a, b), TOL_REF, `matmul vs ref (default) ${tag(p)}`);
        assertClose(got, tfMatmul(p, a, b), TOL_TF, `matmul vs tfjs ${tag(p)}`);
      }
    },
  },
  {
    name: 'matmul: the other entry point and an odd register tile agree with the reference',
    async fn(ctx) {
      for (const { name, cfg } of [...configs(ctx).slice(1), { name: 'odd tiled', cfg: ODD_TILED }]) {
        // The tiled kernel has one pipeline for every layout; the odd register tile one per layout.
        for (const [ta, tb] of name === 'register 12x4' ? [TRANS[0], TRANS[3]] : TRANS) {
          const p = problem(100, 36, 257, ta, tb);
          const { a, b } = operands(1, p);
          assertClose(await gpuMatmul(ctx, p, a, b, cfg), refMatmul(p, a, b), TOL_REF, `matmul vs ref (${name}) ${tag(p)}`);
        }
      }
    },
  },
  {
    name: 'matmul: batched, with either operand broadcast (shared weights)',
    async fn(ctx) {
      const cases = [problem(33, 100, 7, false, false, 3, 3), problem(33, 100, 7, false, true, 3, 1), problem(64, 48, 96, true, false, 1, 4),
        problem(64, 48, 96, true, true, 2, 2)];
      for (const { name, cfg } of configs(ctx).slice(0, 2)) {
        for (const p of cases) {
          const { a, b } = operands(2, p);
          const got = await gpuMatmul(ctx, p, a, b, cfg);
          assertClose(got, refMatmul(p, a, b), TOL_REF, `batched matmul vs ref (${name}) ${tag(p)}`);
          assertClose(got, tfMatmul(p, a, b), TOL_TF, `batched matmul vs tfjs ${tag(p)}`);
        }
        // More batches than workgroups per grid dimension (65535): the grid splits over dispatches
        // (default tiles only: 16.7M shared-memory invocations would take seconds on a CPU).
        if (name !== 'default') continue;
        const big = problem(1, 3, 2, false, false, ctx.limit('maxComputeWorkgroupsPerDimension') + 10, 1);
        const { a, b } = operands(2, big);
        assertClose(await gpuMatmul(ctx, big, a, b, cfg), refMatmul(big, a, b), TOL_REF, `batched matmul vs ref (${name}) [batch > 65535]`);
      }
    },
  },
  {
    name: 'matmul: bias, alpha and accumulate (C += alpha·A·B + bias)',
    async fn(ctx) {
      const rng = new Rng(3, 3);
      for (const { name, cfg } of configs(ctx).slice(0, 2)) {
        for (const p of [problem(33, 100, 7, false, true), problem(64, 48, 96, true, false), problem(33, 100, 7, false, false, 2, 1)]) {
          const { a, b } = operands(3, p);
          const bias = rng.normalArray(p.N);
          const c0 = rng.normalArray(p.batch * p.M * p.N);
          const extra = { bias, c0, alpha: -0.75 };
          const got = await gpuMatmul(ctx, p, a, b, cfg, extra);
          assertClose(got, refMatmul(p, a, b, extra), TOL_REF, `matmul bias+accumulate vs ref (${name}) ${tag(p)}`);
          const ab = tfMatmul(p, a, b);
          const want = Float32Array.from(c0, (v, i) => v + (-0.75 * ab[i] + bias[i % p.N]));
          assertClose(got, want, TOL_TF, `matmul bias+accumulate vs tfjs ${tag(p)}`);
          const plain = await gpuMatmul(ctx, p, a, b, cfg, { bias });
          assertClose(plain, refMatmul(p, a, b, { bias }), TOL_REF, `matmul bias vs ref (${name}) ${tag(p)}`);
        }
      }
    },
  },
  {
    // Inference's up projection (infer_block.ts): one dispatch instead of the product and geluForward.
    name: "matmul: GELU in the epilogue (activation 'gelu') is bitwise the product then geluForward, matches the reference and tfjs, and applies once after a split K",
    async fn(ctx) {
      const rng = new Rng(5, 0x9e);
      const cases = [
        ...configs(ctx).slice(0, 2).map(({ name, cfg }) => ({ name, cfg, p: problem(33, 100, 7, false, true), tol: TOL_REF })),
        { name: 'deep (K ranges on llvmpipe)', cfg: null, p: problem(16, 16, 20_011, false, true), tol: 1e-5 },
      ];
      for (const { name, cfg: c, p, tol } of cases) {
        const cfg = c ?? matmulConfigFor(ctx, p);
        const { a, b } = operands(5, p);
        const bias = rng.normalArray(p.N);
        const got = await gpuMatmul(ctx, p, a, b, cfg, { bias, activation: 'gelu' });
        assertClose(got, refMatmul(p, a, b, { bias, activation: 'gelu' }), tol, `matmul gelu vs ref (${name}) ${tag(p)}`);
        const want = tf.tidy(() => {
          const x = tf.matMul(tf.tensor(a, aShape(p)), tf.tensor(b, bShape(p)), p.transA, p.transB).add(tf.tensor(bias));
          const u = x.add(x.pow(3).mul(0.044715)).mul(Math.sqrt(2 / Math.PI));
          return x.mul(0.5).mul(u.tanh().add(1)).dataSync() as Float32Array;
        });
        assertClose(got, want, 10 * tol, `matmul gelu vs tfjs (${name}) ${tag(p)}`);
        // The unfused path: the product, then the activation kernel.
        const plain = await gpuMatmul(ctx, p, a, b, cfg, { bias });
        const tx = up(ctx, plain, [p.M, p.N], 'x'), ty = empty(ctx, [p.M, p.N], 'f32', 'y');
        const [two] = await run<Float32Array>(ctx, [ty], (rec) => geluForward(rec, ty, tx));
        assert.strictEqual(firstBitDiff(got, two), -1, `fused vs matmul + geluForward (${name}) ${tag(p)}`);
        releaseAll(tx, ty);
      }
      const t = empty(ctx, [2, 2], 'f32', 't');
      assert.throws(() => matmul(new Recorder(ctx), empty(ctx, [2, 2]), t, t, { activation: 'relu' as 'gelu' }), ShapeError, /activation must be 'gelu'/);
      releaseAll(t);
    },
  },
  {
    name: 'matmul: the backward products (dA = dC·Bᵀ, dB = Aᵀ·dC) match tfjs autograd',
    async fn(ctx) {
      for (const [M, N, K] of [[33, 7, 100], [64, 96, 48]] as [number, number, number][]) {
        const rng = new Rng(4, M + N + K);
        const a = rng.normalArray(M * K), b = rng.normalArray(K * N), g = rng.normalArray(M * N);
        const [dAt, dBt] = tf.tidy(() => {
          const G = tf.tensor2d(g, [M, N]);
          const grads = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.matMul(x as tf.Tensor2D, y as tf.Tensor2D).mul(G).sum());
          return grads([tf.tensor2d(a, [M, K]), tf.tensor2d(b, [K, N])]).map((t) => t.dataSync() as Float32Array);
        });
        const dA = await gpuMatmul(ctx, problem(M, K, N, false, true), g, b, configs(ctx)[0].cfg);
        const dB = await gpuMatmul(ctx, problem(K, N, M, true, false), a, g, configs(ctx)[0].cfg);
        assertClose(dA, dAt, TOL_TF, `matmul dA vs tf.grads [M=${M} N=${N} K=${K}]`);
        assertClose(dB, dBt, TOL_TF, `matmul dB vs tf.grads [M=${M} N=${N} K=${K}]`);
      }
    },
  },
  {
    name: 'matmul: f16 B (where shader-f16 exists) matches an f32 reference of the f16-rounded values',
    async fn(ctx) {
      if (!ctx.hasF16) return; // SwiftShader: the f32 path is the only one, checked above
      for (const { name, cfg } of configs(ctx).slice(0, 2)) {
        const f16Problems = [problem(33, 100, 7, false, true), problem(64, 48, 96, false, false), problem(33, 100, 7, true, true, 2, 1), problem(1, 96, 128, false, true)];
        for (const p of name === 'default' ? f16Problems : f16Problems.slice(0, 2)) {
          const { a, b } = operands(5, p);
          const h = toF16(b);
          const got = await gpuMatmul(ctx, p, a, h.bits, cfg);
          assertClose(got, refMatmul(p, a, h.values), TOL_REF, `matmul f16 B vs ref (${name}) ${tag(p)}`);
          assertClose(got, tfMatmul(p, a, h.values), TOL_TF, `matmul f16 B vs tfjs ${tag(p)}`);
        }
      }
    },
  },
  {
    // On llvmpipe the register kernel's loops stop silently past ~7400..14300 deep (measured), so
    // such a product is summed over K ranges (registerMaxK deep); elsewhere it runs whole.
    name: 'matmul: deep products (K = 20011 and 16384, B plain and transposed) match the reference on the default config',
    async fn(ctx) {
      for (const p of [problem(8, 16, 20_011), problem(9, 16, 16_384, false, true), problem(16, 16, 20_011, false, true)]) {
        const { a, b } = operands(8, p);
        assertClose(await gpuMatmul(ctx, p, a, b, matmulConfigFor(ctx, p)), refMatmul(p, a, b), 1e-5, `deep matmul vs ref ${tag(p)}`);
      }
    },
  },
  {
    name: 'matmul: a larger product on the default config, and two runs bitwise identical on every config',
    async fn(ctx) {
      const p = problem(264, 272, 300, false, true);
      const { a, b } = operands(6, p);
      // 'default' here is the size-aware default (16×16 register tiles on software adapters).
      const all = [{ name: 'default', cfg: matmulConfigFor(ctx, p) }, ...configs(ctx).slice(1)];
      for (const { name, cfg } of all) {
        const r1 = await gpuMatmul(ctx, p, a, b, cfg);
        const r2 = await gpuMatmul(ctx, p, a, b, cfg);
        assert.strictEqual(firstBitDiff(r1, r2), -1, `rerun differs (${name})`);
        if (name === 'default') assertClose(r1, tfMatmul(p, a, b), TOL_TF, `matmul vs tfjs ${tag(p)}`);
      }
    },
  },
  {
    name: 'matmul: texture reads (main_tex) are bitwise equal to buffer reads (transposes, batch, bias, accumulate, low rank, f16 B)',
    async fn(ctx) {
      const rng = new Rng(7, 7);
      // A tile that divides everything below and one that divides nothing; A of the last problem
      // spans several texture rows (over 8192 texels).
      const tiles: MatmulConfig[] = [{ kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16 }, { kernel: 'register', tm: 12, tn: 4, wgX: 4, wgY: 2, bk: 16 }];
      const problems = [...SHAPES_ALL_TRANS.flatMap(([M, N, K]) => TRANS.map(([ta, tb]) => problem(M, N, K, ta, tb))),
        problem(7, 1, 100), problem(33, 100, 7, false, true, 3, 1), problem(64, 48, 96, true, false, 1, 4), problem(300, 40, 260, true, false)];
      for (const [ti, buf] of tiles.entries()) {
        const tex: MatmulConfig = { ...buf, reads: 'texture' };
        for (const p of ti === 0 ? problems : problems.slice(0, 4)) {
          const { a, b } = operands(8, p);
          const extra = p.M === 64 ? { bias: rng.normalArray(p.N), c0: rng.normalArray(p.batch * p.M * p.N), alpha: -0.75 } : {};
          const want = await gpuMatmul(ctx, p, a, b, buf, extra);
          const got = await gpuMatmul(ctx, p, a, b, tex, extra);
          assert.strictEqual(firstBitDiff(got, want), -1, `texture vs buffer reads (tile ${buf.tm}x${buf.tn}) ${tag(p)}`);
          assertClose(got, refMatmul(p, a, b, extra), TOL_REF, `texture reads vs ref ${tag(p)}`);
          if (ctx.hasF16 && ti === 0 && p.batch === 1) {
            const h = toF16(b);
            const half = await gpuMatmul(ctx, p, a, h.bits, tex, extra);
            assert.strictEqual(firstBitDiff(half, await gpuMatmul(ctx, p, a, h.bits, buf, extra)), -1, `f16 B: texture vs buffer reads ${tag(p)}`);
          }
        }
      }
      // The low-rank term (U, V from their buffers), V stored either way.
      for (const transV of [false, true]) {
        const [M, N, K, R] = [33, 40, 36, 7];
        const ta = up(ctx, rng.normalArray(M * K), [M, K], 'a'), tb = up(ctx, rng.normalArray(N * K), [N, K], 'b');
        const tu = up(ctx, rng.normalArray(M * R), [M, R], 'u'), tv = up(ctx, rng.normalArray(R * N), transV ? [N, R] : [R, N], 'v');
        const tc = empty(ctx, [M, N], 'f32', 'c');
        const lowRank = { u: tu, v: tv, transV, scale: 0.5 };
        const outs: Float32Array[] = [];
        for (const cfg of [tiles[0], { ...tiles[0], reads: 'texture' as const }]) {
          const [c] = await run<Float32Array>(ctx, [tc], (rec) => matmul(rec, tc, ta, tb, { transB: true, lowRank, config: cfg }));
          outs.push(c);
        }
        assert.strictEqual(firstBitDiff(outs[1], outs[0]), -1, `low rank (transV ${transV}): texture vs buffer reads`);
        releaseAll(ta, tb, tu, tv, tc);
      }
      // The texture path is the one taken (not a silent fallback), and the default on llvmpipe only.
      const a = empty(ctx, [8, 8], 'f32', 'a'), b = empty(ctx, [8, 8], 'f32', 'b'), c = empty(ctx, [8, 8], 'f32', 'c');
      const entry = (cfg?: MatmulConfig) => planMatmul(ctx, c, a, b, { config: cfg }).dispatches[0].entryPoint;
      assert.strictEqual(entry({ ...tiles[0], reads: 'texture' }), 'main_tex');
      assert.strictEqual(entry(), ctx.kind === 'llvmpipe' ? 'main_tex' : ctx.tuning === 'software' ? 'main' : 'main_tiled');
      releaseAll(a, b, c);
    },
  },
  {
    name: 'matmul: texture reads copy B in ranges of at most MAX_TEXTURE_COPY_BYTES along N, one texture reused by every range and product, bitwise buffer reads',
    async fn(ctx) {
      // A vocabulary-sized head in miniature: B [N, K] (transposed) of 17.2 MB, over the 16 MiB cap.
      const [M, N, K] = [4, 5600, 768];
      const rng = new Rng(21, 0x7e);
      const a = up(ctx, rng.normalArray(M * K), [M, K], 'a'), b = up(ctx, rng.normalArray(N * K), [N, K], 'b');
      const c1 = empty(ctx, [M, N], 'f32', 'c1'), c2 = empty(ctx, [M, N], 'f32', 'c2'), cb = empty(ctx, [M, N], 'f32', 'cb');
      const tex: MatmulConfig = { ...matmulConfigFor(ctx, { M, N, K }), kernel: 'register', reads: 'texture' };
      const plan = planMatmul(ctx, c1, a, b, { transB: true, config: tex });
      const ranges = plan.textures.filter((t) => t.binding === 'B_tex');
      assert.isAtLeast(ranges.length, 2);
      for (const r of ranges) assert.isAtMost(r.tensor.bindingBytes, MAX_TEXTURE_COPY_BYTES);
      // Two products in one recording: the textures of the first are given back and reused.
      const rec = new Recorder(ctx, { label: 'texture ranges' });
      const owner = 'recorder:texture ranges';
      ctx.pool.resetPeaks();
      matmul(rec, c1, a, b, { transB: true, config: tex });
      matmul(rec, c2, a, b, { transB: true, config: tex });
      const peak = ctx.pool.owner(owner).peakBytes;
      const reads = [rec.read(c1), rec.read(c2)];
      await rec.submit();
      const texRow = 16 * texelTableWidth(ctx);
      assert.isAtMost(peak, MAX_TEXTURE_COPY_BYTES + Math.ceil((4 * M * K) / texRow) * texRow, 'one B range and A held, not every range of both products');
      const [want] = await run<Float32Array>(ctx, [cb], (r) => matmul(r, cb, a, b, { transB: true, config: { ...tex, reads: 'buffer' } }));
      for (const got of reads) assert.strictEqual(firstBitDiff((await got) as Float32Array, want), -1, 'texture ranges vs buffer reads');
      assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0);
      releaseAll(a, b, c1, c2, cb);
    },
  },
  {
    name: "matmul: a weight's texture copy (keepTexels) is kept between recordings, made again after each write (a kernel later in the same recording, a copy into it), bitwise buffer reads, gone with the tensor",
    async fn(ctx) {
      const [M, N, K] = [5, 37, 452]; // over KEPT_TEXELS_MIN_ELEMENTS (smaller weights are not kept)
      const rng = new Rng(23, 0x6b);
      const w0 = rng.normalArray(N * K);
      const a = up(ctx, rng.normalArray(M * K), [M, K], 'a'), w = up(ctx, w0, [N, K], 'w'), wSaved = up(ctx, w0, [N, K], 'w saved');
      const cs = Array.from({ length: 5 }, (_, i) => empty(ctx, [M, N], 'f32', `c${i}`));
      w.keepTexels = true;
      const tex: MatmulConfig = { ...matmulConfigFor(ctx, { M, N, K }), kernel: 'register', reads: 'texture' };
      const store = ctx.keptTexels;
      const [size0, copies0] = [store.size, store.copies];
      const product = (rec: Recorder, c: Tensor) => matmul(rec, c, a, w, { transB: true, config: tex });
      const [want] = await run<Float32Array>(ctx, [cs[4]], (rec) => matmul(rec, cs[4], a, w, { transB: true, config: { ...tex, reads: 'buffer' } }));
      const doubled = want.map((x) => 2 * x); // a·(2W)ᵀ = 2·(a·Wᵀ) exactly
      const same = (got: Float32Array, ref: Float32Array, what: string) => assert.strictEqual(firstBitDiff(got, ref), -1, what);

      const [c0] = await run<Float32Array>(ctx, [cs[0]], (rec) => product(rec, cs[0]));
      same(c0, want, 'first recording');
      assert.strictEqual(store.size, size0 + 1, 'one kept copy of w');
      assert.strictEqual(store.copies, copies0 + 1);
      assert.isAbove(ctx.pool.owner(KEPT_TEXELS_OWNER).currentBytes, 0, 'kept bytes are charged');
      const [c1] = await run<Float32Array>(ctx, [cs[1]], (rec) => product(rec, cs[1]));
      same(c1, want, 'second recording');
      assert.strictEqual(store.copies, copies0 + 1, 'no copy while nothing wrote w');

      // One recording: the product, then a kernel writing w (w = saved + saved), then the product again.
      const [c2, c3] = await run<Float32Array>(ctx, [cs[2], cs[3]], (rec) => {
        product(rec, cs[2]);
        residualAdd(rec, w, wSaved, wSaved);
        product(rec, cs[3]);
      });
      same(c2, want, 'before the write');
      same(c3, doubled, 'after the write, same recording');
      assert.strictEqual(store.copies, copies0 + 2);
      // A copy into w (the saved values back) is a write too.
      const [c4] = await run<Float32Array>(ctx, [cs[0]], (rec) => {
        rec.copy(wSaved, w);
        product(rec, cs[0]);
      });
      same(c4, want, 'after a copy into w');
      assert.strictEqual(store.copies, copies0 + 3);

      // Past the store's limit a weight is copied per recording, as any operand.
      w.release();
      assert.strictEqual(store.size, size0, "a released tensor's copies are dropped");
      const limit = store.limitBytes;
      store.limitBytes = store.bytes;
      try {
        const w2 = up(ctx, w0, [N, K], 'w2');
        w2.keepTexels = true;
        const [c5] = await run<Float32Array>(ctx, [cs[1]], (rec) => matmul(rec, cs[1], a, w2, { transB: true, config: tex }));
        same(c5, want, 'over the limit');
        assert.strictEqual(store.size, size0, 'nothing kept past the limit');
        w2.release();
      } finally {
        store.limitBytes = limit;
      }
      // A weight under half a texture row is not kept (its whole rows would be mostly padding).
      const ws = up(ctx, w0.subarray(0, N * 20), [N, 20], 'w small'), as = up(ctx, rng.normalArray(M * 20), [M, 20], 'a small');
      ws.keepTexels = true;
      await run(ctx, [cs[2]], (rec) => matmul(rec, cs[2], as, ws, { transB: true, config: tex }));
      assert.strictEqual(store.size, size0, 'a small weight is not kept');
      releaseAll(ws, as);
      assert.strictEqual(ctx.pool.owner(KEPT_TEXELS_OWNER).currentBytes, store.bytes, 'charged bytes follow the store');
      releaseAll(a, wSaved, ...cs);
    },
  },
  {
    name: 'matmul: mismatched shapes, wrong dtypes and over-limit inputs are refused before dispatch',
    async fn(ctx) {
      const made: Tensor[] = [];
      const t = (shape: number[], dtype: 'f32' | 'i32' | 'f16' = 'f32', label = 'x') => {
        const x = empty(ctx, shape, dtype, label);
        made.push(x);
        return x;
      };
      const a = t([3, 4], 'f32', 'a'), b = t([5, 6], 'f32', 'b'), c = t([3, 6], 'f32', 'c'), bt = t([6, 4], 'f32', 'bt');
      const ids = t([3, 4], 'i32', 'ids'), a3 = t([2, 3, 4], 'f32', 'a3'), b3 = t([3, 4, 6], 'f32', 'b3'), bias = t([5], 'f32', 'bias');
      const rec = new Recorder(ctx);
      assert.throws(() => matmul(rec, c, a, b), ShapeError, /matmul: inner dimensions differ: a \[3, 4\] · b \[5, 6\] gives K = 4 vs 5/);
      assert.throws(() => matmul(rec, t([3, 5]), a, bt, { transB: true }), ShapeError, /matmul: c \[3, 5\] should be \[3, 6\] for a \[3, 4\] · b \[6, 4\]ᵀ/);
      assert.throws(() => matmul(rec, c, ids, bt, { transB: true }), ShapeError, /matmul: a \(Tensor\(ids: i32\[3, 4\]\)\) must be f32/);
      assert.throws(() => matmul(rec, c, a, bt, { transB: true, bias }), ShapeError, /matmul: bias \[5\] should be \[6\] for c \[3, 6\]/);
      assert.throws(() => matmul(rec, t([2, 3, 6]), a3, b3), ShapeError, /matmul: batch sizes differ: a \[2, 3, 4\] · b \[3, 4, 6\]/);
      assert.throws(() => matmul(rec, a, a, t([4, 4])), ShapeError, /c \(Tensor\(a: f32\[3, 4\]\)\) must not alias a/);
      if (!ctx.hasF16) assert.throws(() => matmul(rec, c, a, t([4, 6], 'f16')), ShapeError, /f16 but this device has no shader-f16/);
      assert.throws(() => matmul(rec, c, a, t([4, 6]), { config: { kernel: 'register', tm: 17, tn: 4, wgX: 8, wgY: 1, bk: 16 } }), LimitError, /tm must be an integer in 1\.\.16/);
      // A binding past maxStorageBufferBindingSize: tensors that claim that shape over a small buffer
      // (the check runs before anything touches the buffer; the device could not allocate it all).
      const max = ctx.limit('maxStorageBufferBindingSize');
      const small = t([4], 'f32', 'small');
      const huge = new Tensor(ctx, small.buffer, [1, max / 4 + 4], 'f32', OWNER, 'huge');
      const hugeB = new Tensor(ctx, small.buffer, [max / 4 + 4, 1], 'f32', OWNER, 'hugeB');
      assert.throws(() => matmul(rec, t([1, 1]), huge, hugeB), LimitError, /matmul: a \(Tensor\(huge: f32\[1, \d+\]\)\) is \d+ bytes, over the device's maxStorageBufferBindingSize/);
      if (ctx.kind === 'llvmpipe') {
        // Mesa stops loops silently past 65535 iterations per invocation: a batched product that
        // deep is refused, not wrong (one of batch 1 is summed over K ranges instead).
        const k = 5000;
        assert.throws(() => matmul(rec, t([2, 1, 1]), t([2, 1, k]), t([2, k, 1])), LimitError, /matmul: the product M=1 N=1 K=5000 needs about/);
      }
      assert.strictEqual(rec.pending, 0);
      releaseAll(...made);
    },
  },
];
