/**
 * Tensors larger than one storage binding, run by both GPU suites. A second device of the same
 * adapter reports a maxStorageBufferBindingSize of CAP = 32 KiB (AcquireOptions), so tiny models
 * with a vocabulary of 1003 (odd) take the paths GPT-2 small takes on a 128 MiB limit: their
 * [1003, 24] embedding / lm_head (96 KB) is bound in 3 ranges of rows (341, 341, 321 where
 * bindings may start at any 32 bytes, 336, 336, 331 at 256) and their logits [22, 1003] are made
 * in blocks of 8, 8 and 6 rows. Against the same work on the uncapped
 * device (and tfjs):
 *   - matmul over M and N ranges, in place into blocks, f16 B: bitwise; over K ranges: ≤ 1e-5;
 *   - embedding lookup (f32, f16) and both backward modes, AdamW and the global norm: bitwise;
 *   - whole models (gpt2 tied, llama untied): logits, log-probs and loss bitwise, every gradient
 *     (full and LoRA) and the parameters after 3 AdamW steps within 1e-5, greedy tokens equal,
 *     and the tfjs parity of test/reference/parity.ts within its 1e-4;
 *   - generate refuses more prompts than logits rows fit one binding, engineSampleFn splits them;
 *     likewise for KV caches (a llama on 1 KiB bindings), and a sequence whose own cache cannot fit is
 *     refused with a LimitError before anything runs;
 *     what cannot be split is refused before dispatch with a LimitError naming kernel and tensor.
 */
import { assert } from 'chai';
import { LimitError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import type { Tensor } from '../../../src/gpu/tensor.ts';
import { BaseModel } from '../../../src/model/base_model.ts';
import { type LoraConfig, type ModelConfig, validateConfig } from '../../../src/model/config.ts';
import { f32ToF16Array } from '../../../src/model/f16.ts';
import { generate } from '../../../src/model/generate.ts';
import { kvCacheRowLimit } from '../../../src/model/kv_cache.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import { engineSampleFn } from '../../../src/model/sample_fn.ts';
import { Trainer } from '../../../src/model/trainer.ts';
import { adamw, clipScale } from '../../../src/ops/adamw.ts';
import { embeddingBackward, embeddingForward, embeddingScratchSize } from '../../../src/ops/embedding.ts';
import { embeddingForwardRef } from '../../../src/ops/embedding.ref.ts';
import { matmul, matrixBlock } from '../../../src/ops/matmul.ts';
import { matmulRef } from '../../../src/ops/matmul.ref.ts';
import { globalL2Norm, reduceScratchSize } from '../../../src/ops/reduce.ts';
import { Rng } from '../../../src/util/rng.ts';
import { parityAdapter, parityBatch, parityParams, runParity, zeroGradNames } from '../../reference/parity.ts';
import { relL2 } from '../../reference/tf.ts';
import { cappedGpu, firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { empty, releaseAll, run, up } from './helpers.ts';

const CAP = 32 * 1024;
const TOL = 1e-5;

/** A gpt2 (tied) and a llama (untied head) whose [V, C] tables are 3 binding ranges under CAP. */
const GPT2_V1003 = validateConfig({
  family: 'gpt2', name: 'tiny-gpt2-v1003', vocabSize: 1003, nLayer: 2, dModel: 24, nHead: 3, nKvHead: 3, headDim: 8, dFF: 96,
  maxSeqLen: 32, normEps: 1e-5, tieEmbeddings: true, qkvBias: true, oBias: true, mlpBias: true,
});
const LLAMA_V1003 = validateConfig({
  family: 'llama', name: 'tiny-llama-v1003', vocabSize: 1003, nLayer: 2, dModel: 24, nHead: 6, nKvHead: 2, headDim: 4, dFF: 40,
  maxSeqLen: 32, normEps: 1e-5, ropeTheta: 10000, tieEmbeddings: false, qkvBias: true, oBias: false, mlpBias: false,
});
const LORA: LoraConfig = { rank: 3, alpha: 6, targets: ['q', 'v', 'o', 'up', 'down'] };
/** 2 rows of 11 (22 tokens: logits blocks of 8, 8, 6 under CAP), padded and packed. */
const SEGMENTS = [[0, 0, 0, 0, 1, 1, 1, 1, 1, 1, -1], [2, 2, 2, 2, 2, 2, 2, 2, 2, -1, -1]];
const CE = { kind: 'cross_entropy', aggregation: 'token_mean' } as const;

function assertBitwise(got: ArrayLike<number> & { buffer: ArrayBufferLike }, want: typeof got, what: string): void {
  const i = firstBitDiff(got as Float32Array, want as Float32Array);
  assert.strictEqual(i, -1, `${what}: first difference at ${i} (${got[i]} vs ${want[i]})`);
}

function assertRel(got: Float32Array, want: Float32Array, what: string, tol = TOL): void {
  const e = relL2(got, want);
  assert.isAtMost(e, tol, `${what}: relative L2 error ${e.toExponential(2)}`);
}

/** The same work on the uncapped and the capped device. */
async function onBoth<T>(ctx: GpuContext, fn: (g: GpuContext) => Promise<T>): Promise<[T, T]> {
  const capped = await cappedGpu(CAP);
  assert.strictEqual(capped.limit('maxStorageBufferBindingSize'), CAP);
  return [await fn(ctx), await fn(capped)];
}

const matmulCase: GpuCase = {
  name: 'binding split: matmul over M and N ranges (blocks, f16 B) bitwise, over K ranges within 1e-5, vs the uncapped device',
  fn: async (ctx) => {
    const V = 1003, C = 24, N = 7;
    const rng = new Rng(11, 1);
    const x = rng.normalArray(N * C), w = rng.normalArray(V * C), dl = rng.normalArray(N * V), dw0 = rng.normalArray(V * C);
    const f16 = ctx.hasF16 && (await cappedGpu(CAP)).hasF16;
    const [plain, capped] = await onBoth(ctx, async (g) => {
      const tx = up(g, x, [N, C]), tw = up(g, w, [V, C]), tdl = up(g, dl, [N, V]), dW = up(g, dw0, [V, C]);
      const logits = empty(g, [N, V]), dx = empty(g, [N, C]);
      // A block of a larger C (itself over CAP) and of a padded A: the logits in place.
      const big = up(g, new Float32Array((N + 3) * (V + 5)), [N + 3, V + 5]), xPad = up(g, padCols(x, N, C, 3), [N, C + 3]);
      const wh = f16 ? up(g, f32ToF16Array(w), [V, C]) : null;
      const logitsH = f16 ? empty(g, [N, V]) : null;
      const outs = await run<Float32Array>(g, [logits, dx, dW, big, ...(logitsH ? [logitsH] : [])], (rec) => {
        matmul(rec, logits, tx, tw, { transB: true });
        matmul(rec, dx, tdl, tw);
        matmul(rec, dW, tdl, tx, { transA: true, accumulate: true });
        matmul(rec, matrixBlock(big, [2, N], [3, V]), matrixBlock(xPad, [0, N], [0, C]), tw, { transB: true });
        if (wh && logitsH) matmul(rec, logitsH, tx, wh, { transB: true });
      });
      releaseAll(tx, tw, tdl, dW, logits, dx, big, xPad, wh, logitsH);
      return outs;
    });
    const [logits, dx, dW, big, logitsH] = capped;
    assertBitwise(logits, plain[0], 'logits = x·Wᵀ (N split)');
    assertRel(dx, plain[1], 'dx = dlogits·W (K split)');
    assertBitwise(dW, plain[2], 'dW += dlogitsᵀ·x (M split)');
    assertBitwise(big, plain[3], 'logits into a block of a larger tensor');
    for (let r = 0; r < N + 3; r++) {
      for (let c = 0; c < V + 5; c++) {
        const inside = r >= 2 && r < N + 2 && c >= 3 && c < V + 3;
        const v = big[r * (V + 5) + c];
        if (inside) assert.strictEqual(v, logits[(r - 2) * V + (c - 3)], `block (${r}, ${c})`);
        else assert.strictEqual(v, 0, `outside the block (${r}, ${c}) untouched`);
      }
    }
    if (logitsH) assertBitwise(logitsH, plain[4], 'logits with f16 W (N split)');
    const want = new Float32Array(N * C);
    matmulRef(want, dl, w, { batch: 1, M: N, N: C, K: V });
    assertRel(dx, want, 'dx vs the CPU reference');
  },
};

function padCols(a: Float32Array, rows: number, cols: number, pad: number): Float32Array {
  const out = new Float32Array(rows * (cols + pad)).fill(Number.NaN);
  for (let r = 0; r < rows; r++) out.set(a.subarray(r * cols, (r + 1) * cols), r * (cols + pad));
  return out;
}

const elementwiseCase: GpuCase = {
  name: 'binding split: embedding lookup (f32, f16) and backward (=, +=), AdamW and the global norm over ranges, bitwise vs the uncapped device',
  fn: async (ctx) => {
    const R = 1003, C = 24, N = 40, P = 16;
    const rng = new Rng(12, 2);
    const table = rng.normalArray(R * C), wpe = rng.normalArray(P * C), dout = rng.normalArray(N * C), acc0 = rng.normalArray(R * C);
    const ids = Int32Array.from({ length: N }, (_, i) => (i === 3 ? -1 : i === 9 ? R + 5 : i % 5 === 0 ? 7 : rng.nextInt(R)));
    const pos = Int32Array.from({ length: N }, (_, i) => i % P);
    const M = 20_000; // AdamW / norm: 80 kB, ranges of 8192 elements
    const p0 = rng.normalArray(M), g0 = rng.normalArray(M), small = rng.normalArray(5);
    const f16 = ctx.hasF16 && (await cappedGpu(CAP)).hasF16;
    const [plain, capped] = await onBoth(ctx, async (g) => {
      const tt = up(g, table, [R, C]), tw = up(g, wpe, [P, C]), ti = up(g, ids), tp = up(g, pos), tg = up(g, dout, [N, C]);
      const out = empty(g, [N, C]), d1 = empty(g, [R, C]), d2 = up(g, acc0, [R, C]), scratch = empty(g, [embeddingScratchSize(N, R)], 'u32');
      const th = f16 ? up(g, f32ToF16Array(table), [R, C]) : null, outH = f16 ? empty(g, [N, C]) : null;
      const [pp, m, v, gg, gs] = [up(g, p0), up(g, new Float32Array(M)), up(g, new Float32Array(M)), up(g, g0), up(g, small)];
      const norm = empty(g, [1]), scale = empty(g, [1]), rs = empty(g, [reduceScratchSize(M, 5)]);
      const outs = await run<Float32Array>(g, [out, d1, d2, pp, m, v, norm, ...(outH ? [outH] : [])], (rec) => {
        embeddingForward(rec, out, ti, tt, { wpe: tw, pos: tp });
        embeddingBackward(rec, d1, tg, ti, scratch);
        embeddingBackward(rec, d2, tg, ti, scratch, { accumulate: true });
        if (th && outH) embeddingForward(rec, outH, ti, th);
        for (let step = 1; step <= 2; step++) {
          globalL2Norm(rec, norm, [gg, gs], rs);
          clipScale(rec, scale, norm, 100);
          adamw(rec, pp, m, v, gg, { lr: 1e-2, step }, scale);
        }
      });
      releaseAll(tt, tw, ti, tp, tg, out, d1, d2, scratch, th, outH, pp, m, v, gg, gs, norm, scale, rs);
      return outs;
    });
    const names = ['lookup', 'backward =', 'backward +=', 'AdamW param', 'AdamW m', 'AdamW v', 'global norm', 'f16 lookup'];
    capped.forEach((a, i) => assertBitwise(a, plain[i], `${names[i]} (ranges of rows)`));
    const want = new Float32Array(N * C);
    embeddingForwardRef(want, ids, table, R, C, wpe, pos, P);
    assertBitwise(capped[0], want, 'lookup vs the CPU reference');
  },
};

const cfgs: readonly ModelConfig[] = [GPT2_V1003, LLAMA_V1003];

interface Run {
  logits: Float32Array;
  logprobs: Float32Array;
  loss: number;
  grads: Record<string, Float32Array>;
  params?: Record<string, Float32Array>;
}

async function trainRun(job: Trainer, batch: ReturnType<typeof parityBatch>, steps: number): Promise<Run> {
  const { logits, logprobsBT } = await job.computeLogprobs(batch, { logits: true });
  const fb = await job.forwardBackward(batch, CE);
  const grads = await job.readGradients();
  for (let s = 0; s < steps; s++) {
    if (s > 0) await job.forwardBackward(batch, CE);
    await job.optimStep({ lr: 1e-2, maxGradNorm: 1 });
  }
  const params = steps > 0 ? (await job.exportState()).params : undefined;
  return { logits: logits!, logprobs: logprobsBT, loss: fb.loss, grads, ...(params ? { params } : {}) };
}

/** Capped vs uncapped; a gradient that is zero in exact arithmetic (GPT-2's key bias) is measured against the RMS of all. */
function compareRuns(cfg: ModelConfig, got: Run, want: Run, tag: string): void {
  assertBitwise(got.logits, want.logits, `${tag} logits`);
  assertBitwise(got.logprobs, want.logprobs, `${tag} log-probs`);
  assert.strictEqual(got.loss, want.loss, `${tag} loss`);
  assert.hasAllKeys(got.grads, Object.keys(want.grads));
  const zero = zeroGradNames(cfg);
  const all = Object.values(want.grads);
  const rms = Math.sqrt(all.reduce((s, g) => s + g.reduce((t, x) => t + x * x, 0), 0) / all.reduce((s, g) => s + g.length, 0));
  for (const [name, g] of Object.entries(want.grads)) {
    if (!zero.has(name)) assertRel(got.grads[name], g, `${tag} gradient ${name}`);
    else assert.isAtMost(Math.sqrt(g.reduce((s, x, i) => s + (x - got.grads[name][i]) ** 2, 0) / g.length) / rms, TOL, `${tag} ${name} (zero by math)`);
  }
  // AdamW turns a gradient that is rounding noise into full steps of its sign: zero-by-math tensors are left out.
  for (const [name, p] of Object.entries(want.params ?? {})) if (!zero.has(name)) assertRel(got.params![name], p, `${tag} ${name} after 3 AdamW steps`);
}

function modelCase(cfg: ModelConfig): GpuCase {
  return {
    name: `binding split: ${cfg.name} (V = 1003, [V, C] in 3 binding ranges, logits in blocks of 8/8/6 rows) — full and LoRA training, AdamW, greedy decoding vs the uncapped device`,
    fn: async (ctx) => {
      const params = parityParams(cfg, 21);
      const adapterHost = parityAdapter(cfg, LORA, 21);
      const batch = parityBatch(cfg, SEGMENTS, 21);
      const prompts = [[5, 900, 17, 1002], [44, 3, 600, 601, 602, 9, 10], [1, 2]];
      const [plain, capped] = await onBoth(ctx, async (g) => {
        const model = BaseModel.upload(g, cfg, params);
        try {
          const full = await Trainer.create(model, { trainable: 'all' });
          const fullRun = await trainRun(full, batch, 3).finally(() => full.release());
          const adapter = LoraAdapter.fromHost(g, cfg, LORA, adapterHost);
          const job = await Trainer.create(model, { trainable: 'lora', adapter });
          const loraRun = await trainRun(job, batch, 0).finally(() => {
            job.release();
            adapter.release();
          });
          const gen = await generate(g, model, null, prompts, { maxTokens: 6, temperature: 0, seed: 0 });
          return { fullRun, loraRun, tokens: gen.tokens, lp: gen.logprobs };
        } finally {
          model.release();
        }
      });
      compareRuns(cfg, capped.fullRun, plain.fullRun, `${cfg.name} full`);
      compareRuns(cfg, capped.loraRun, plain.loraRun, `${cfg.name} LoRA`);
      assert.deepEqual(capped.tokens, plain.tokens, `${cfg.name} greedy tokens`);
      assert.deepEqual(capped.lp, plain.lp, `${cfg.name} greedy log-probs (bitwise)`);
    },
  };
}

const parityCase: GpuCase = {
  name: 'binding split: both models on the capped device vs tfjs (logits, loss, all/LoRA gradients within 1e-4)',
  fn: async () => {
    const capped = await cappedGpu(CAP);
    for (const [i, cfg] of cfgs.entries()) {
      const r = await runParity(capped, { name: cfg.name!, cfg, segments: SEGMENTS, lora: LORA, seed: 30 + i });
      for (const [what, e] of [['logits', r.logitsRelErr], ['loss', r.lossRelErr], ['gradient', r.gradsMaxRelErr], ['LoRA logits', r.loraLogitsRelErr],
        ['LoRA loss', r.loraLossRelErr], ['LoRA gradient', r.loraGradsMaxRelErr]] as const) {
        assert.isAtMost(e, 1e-4, `${cfg.name} ${what} vs tfjs: ${e.toExponential(2)}${what === 'gradient' ? ` (${r.worstGrad})` : ''}`);
      }
    }
  },
};

const limitsCase: GpuCase = {
  name: 'binding split: generate refuses more prompts than logits rows fit, engineSampleFn splits them; unsplittable tensors are refused before dispatch',
  fn: async (ctx) => {
    const cfg = GPT2_V1003;
    const params = parityParams(cfg, 5);
    const prompts = Array.from({ length: 9 }, (_, i) => [i + 1, 2 * i + 3, 500 + i]);
    const requests = prompts.map((p, i) => ({ promptTokens: p, maxTokens: 3, temperature: 0, stopTokens: [], stopStrings: [], seed: i }));
    const [plain, capped] = await onBoth(ctx, async (g) => {
      const model = BaseModel.upload(g, cfg, params);
      try {
        if (g !== ctx) {
          // 9 · 1003 · 4 bytes of logits: over CAP (8 rows fit).
          let err: unknown = null;
          await generate(g, model, null, prompts, { maxTokens: 3, temperature: 0, seed: 0 }).catch((e) => (err = e));
          assert.instanceOf(err, LimitError);
          assert.match(String(err), /generate: 9 prompts need logits \[9, 1003\].*at most 8 at once/);
        }
        return await engineSampleFn({ weights: model })(requests);
      } finally {
        model.release();
      }
    });
    assert.deepEqual(capped, plain, 'engineSampleFn results under the cap');
    // A batched product and a table whose aligned rows cannot fit are refused, nothing recorded.
    const g = await cappedGpu(CAP);
    const made: Tensor[] = [];
    const t = (shape: number[], dtype: 'f32' | 'i32' | 'u32' = 'f32') => (made.push(empty(g, shape, dtype)), made[made.length - 1]);
    const rec = new Recorder(g);
    assert.throws(() => matmul(rec, t([2, 400, 8]), t([2, 400, 24]), t([24, 8])), LimitError, /matmul: a \(.*\) is \d+ bytes, over the device's maxStorageBufferBindingSize of 32768; a batched product is not split/);
    assert.throws(() => embeddingForward(rec, t([2, 9000]), t([2], 'i32'), t([3, 9000])), LimitError, /embedding\.forward: out/);
    // Rows of 1025 floats start aligned every 8 rows or more (32.8 kB; minStorageBufferOffsetAlignment ≥ 32): none fits.
    assert.throws(() => embeddingForward(rec, t([2, 1025]), t([2], 'i32'), t([100, 1025])), LimitError, /embedding\.forward: .*no aligned range of 1 of its rows \(4100 bytes each\) fits/);
    assert.strictEqual(rec.pending, 0);
    releaseAll(...made);
  },
};

/** A llama whose KV cache row (4 KV heads · 4 · 4 = 64 bytes per layer) is large next to everything else. */
const LLAMA_KV = validateConfig({
  family: 'llama', name: 'tiny-llama-kv', vocabSize: 64, nLayer: 2, dModel: 16, nHead: 4, nKvHead: 4, headDim: 4, dFF: 32,
  maxSeqLen: 32, normEps: 1e-5, ropeTheta: 10000, tieEmbeddings: false, qkvBias: false, oBias: false, mlpBias: false,
});

const kvCacheCase: GpuCase = {
  name: 'binding split: engineSampleFn splits batches so each KV cache fits one binding; a sequence whose cache cannot is refused before anything runs',
  fn: async (ctx) => {
    // On 1 KiB bindings 16 cache rows fit: 2-token prompts with 5 new tokens (7 rows) go 2 to a
    // batch — fewer than the logits (3 rows of 64) or the prefill (8 rows of 32) would allow.
    const cfg = LLAMA_KV;
    const params = parityParams(cfg, 8);
    const requests = Array.from({ length: 5 }, (_, i) => ({ promptTokens: [i + 1, 40 + i], maxTokens: 5, temperature: 0, stopTokens: [], stopStrings: [], seed: i }));
    const capped = await cappedGpu(1024);
    assert.strictEqual(kvCacheRowLimit(capped, cfg), 16);
    const results: unknown[] = [];
    for (const g of [ctx, capped]) {
      const model = BaseModel.upload(g, cfg, params);
      try {
        let chunks = 0;
        const sample = engineSampleFn({ weights: model, chunk: 8, quantum: (fn) => (chunks++, fn()) });
        results.push(await sample(requests));
        assert.strictEqual(chunks, g === capped ? 3 : 1, 'generate() calls of one chunk each: batches of 2, 2, 1 under the cap');
        if (g === capped) {
          let err: unknown = null;
          await generate(g, model, null, requests.slice(0, 3).map((r) => r.promptTokens), { maxTokens: 5, temperature: 0, seed: 0 }).catch((e) => (err = e));
          assert.instanceOf(err, LimitError);
          assert.match(String(err), /generate: 3 sequences of up to 7 tokens need KV caches \[3, 7, 4, 4\].*at most 16 cache rows/);
          err = null;
          await generate(g, model, null, [[1, 2]], { maxTokens: 20, temperature: 0, seed: 0 }).catch((e) => (err = e));
          assert.match(String(err), /fewer than one sequence needs/);
          err = null;
          const before = g.pool.stats().liveBytes;
          await sample([...requests, { ...requests[0], maxTokens: 20 }]).catch((e) => (err = e));
          assert.instanceOf(err, LimitError);
          assert.match(String(err), /engineSampleFn: requests\[5\] needs 22 KV-cache rows \(2 prompt tokens \+ 20 new\), 64 bytes each per layer: .* holds 16 rows/);
          assert.strictEqual(g.pool.stats().liveBytes, before);
        }
      } finally {
        model.release();
      }
    }
    assert.deepEqual(results[1], results[0], 'engineSampleFn results under the cap equal one batch of 5');
  },
};

export const bindingSplitCases: GpuCase[] = [matmulCase, elementwiseCase, ...cfgs.map(modelCase), parityCase, limitsCase, kvCacheCase];
