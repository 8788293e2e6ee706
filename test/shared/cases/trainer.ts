/**
 * Trainer cases (src/model/trainer.ts), run by both GPU suites: SFT loss goes down on a fixed
 * batch; identical runs are bitwise identical; export → import → continue equals an uninterrupted
 * run bitwise; a NaN advantage skips the step with parameters and moments untouched; micro-batch
 * accumulation adds up to the whole batch; per-block recompute gives the same gradients bitwise
 * with a lower activation peak; a LoRA job's peak bytes are below a full job's on the same base;
 * f16 base weights where shader-f16 exists; all-or-nothing uploads and typed errors.
 */
import { assert } from 'chai';
import type { PackedBatch } from '../../../src/algorithms/pack.ts';
import { datumFromSequence } from '../../../src/algorithms/datum.ts';
import { importanceSamplingLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { ConfigError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { BaseModel } from '../../../src/model/base_model.ts';
import { type LoraConfig, type ModelConfig, validateConfig } from '../../../src/model/config.ts';
import { WeightsError } from '../../../src/model/errors.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import { estimateTrainingMemory, trainingMemoryDevice } from '../../../src/model/memory.ts';
import type { OptimStepOptions } from '../../../src/model/optimizer.ts';
import { PRESETS } from '../../../src/model/presets.ts';
import { Trainer, type TrainerOptions, type TrainerState } from '../../../src/model/trainer.ts';
import { parityAdapter, parityBatch, parityParams, zeroGradNames } from '../../reference/parity.ts';
import { maxAbsDiff, relL2 } from '../../reference/tf.ts';
import { cappedGpu, firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { Rng } from '../../../src/util/rng.ts';

const CE = { kind: 'cross_entropy', aggregation: 'token_mean' } as const;
const ROWS = [[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, -1, -1]];
const LORA: LoraConfig = { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'up', 'down'] };
const ADAMW: OptimStepOptions = { lr: 1e-2, weightDecay: 0.01, maxGradNorm: 1 };

interface Job {
  model: BaseModel;
  adapter?: LoraAdapter;
  trainer: Trainer;
  release(): void;
}

/** A model (+ adapter) and a trainer on it; everything released by job.release(). */
async function makeJob(ctx: GpuContext, cfg: ModelConfig, opts: Partial<TrainerOptions> & { seed?: number; adapterSeed?: number; model?: BaseModel } = {}): Promise<Job> {
  const seed = opts.seed ?? 1;
  const model = opts.model ?? BaseModel.upload(ctx, cfg, parityParams(cfg, seed));
  const trainable = opts.trainable ?? 'lora';
  const adapter = trainable === 'lora' ? LoraAdapter.fromHost(ctx, cfg, LORA, parityAdapter(cfg, LORA, opts.adapterSeed ?? seed), { owner: `job:${opts.id ?? 'x'}` }) : undefined;
  const trainer = await Trainer.create(model, { ...opts, trainable, adapter });
  return {
    model, adapter, trainer,
    release() {
      trainer.release();
      adapter?.release();
      if (!opts.model) model.release();
    },
  };
}

async function train(t: Trainer, batch: PackedBatch, steps: number, spec: Parameters<Trainer['forwardBackward']>[1] = CE): Promise<Float32Array> {
  const losses = new Float32Array(steps);
  for (let i = 0; i < steps; i++) {
    losses[i] = (await t.forwardBackward(batch, spec)).loss;
    await t.optimStep(ADAMW);
  }
  return losses;
}

function assertStatesEqual(a: TrainerState, b: TrainerState, what: string): void {
  assert.equal(a.step, b.step, `${what}: step`);
  assert.equal(a.skipped, b.skipped, `${what}: skipped`);
  for (const part of ['params', 'm', 'v'] as const) {
    assert.hasAllKeys(a[part], Object.keys(b[part]));
    for (const name of Object.keys(a[part])) assert.equal(firstBitDiff(a[part][name], b[part][name]), -1, `${what}: ${part}["${name}"] differs`);
  }
}

const gpt2 = PRESETS['tiny-gpt2'];
const llama = PRESETS['tiny-llama'];

export const trainerCases: GpuCase[] = [
  {
    name: 'trainer: SFT loss decreases on a fixed batch (LoRA on tiny-gpt2 over 20 steps, full on tiny-llama over 10)',
    fn: async (ctx) => {
      for (const [cfg, trainable, steps] of [[gpt2, 'lora', 20], [llama, 'all', 10]] as const) {
        const job = await makeJob(ctx, cfg, { trainable });
        try {
          const losses = await train(job.trainer, parityBatch(cfg, ROWS, 3), steps);
          console.log(`[trainer ${ctx.kind}] ${cfg.name} ${trainable}: SFT loss ${Array.from(losses, (x) => x.toFixed(3)).join(' ')}`);
          assert.isTrue(losses.every(Number.isFinite));
          assert.isBelow(losses[steps - 1], 0.7 * losses[0], `${cfg.name} ${trainable}: loss ${losses[0]} → ${losses[steps - 1]}`);
          assert.isBelow(losses.slice(-3).reduce((a, x) => a + x, 0), losses.slice(0, 3).reduce((a, x) => a + x, 0));
          assert.equal(job.trainer.step, steps);
        } finally {
          job.release();
        }
      }
    },
  },
  {
    name: 'trainer: two identical runs give bitwise-identical losses and state',
    fn: async (ctx) => {
      const runs: [Float32Array, TrainerState][] = [];
      for (let r = 0; r < 2; r++) {
        const job = await makeJob(ctx, llama, { trainable: 'all' });
        try {
          runs.push([await train(job.trainer, parityBatch(llama, ROWS, 4), 3), await job.trainer.exportState()]);
        } finally {
          job.release();
        }
      }
      assert.equal(firstBitDiff(runs[0][0], runs[1][0]), -1, 'losses differ');
      assertStatesEqual(runs[0][1], runs[1][1], 'two runs');
    },
  },
  {
    name: 'trainer: exportState → importState → continue equals an uninterrupted run bitwise (full gpt2 tied, LoRA + value head)',
    fn: async (ctx) => {
      for (const trainable of ['all', 'lora'] as const) {
        const batch = parityBatch(gpt2, ROWS, 5);
        const a = await makeJob(ctx, gpt2, { trainable, valueHead: trainable === 'lora' });
        const b = await makeJob(ctx, gpt2, { trainable, valueHead: trainable === 'lora' });
        try {
          const straight = await train(a.trainer, batch, 4);
          const first = await train(b.trainer, batch, 2);
          const saved = await b.trainer.exportState();
          b.release();
          // Other initial values of what the state holds (a frozen base is not state: same base).
          const c = await makeJob(ctx, gpt2, trainable === 'all' ? { trainable, seed: 9 } : { trainable, valueHead: true, adapterSeed: 9 });
          try {
            c.trainer.importState(structuredClone(saved));
            assert.equal(c.trainer.step, 2);
            const rest = await train(c.trainer, batch, 2);
            assert.equal(firstBitDiff(straight, Float32Array.of(...first, ...rest)), -1, `${trainable}: losses differ`);
            assertStatesEqual(await a.trainer.exportState(), await c.trainer.exportState(), trainable);
          } finally {
            c.release();
          }
        } finally {
          a.release();
        }
      }
    },
  },
  {
    name: 'trainer: a NaN advantage skips the step, parameters and moments untouched; the next clean step applies',
    fn: async (ctx) => {
      const job = await makeJob(ctx, llama, { trainable: 'lora' });
      try {
        const clean = parityBatch(llama, ROWS, 6);
        await train(job.trainer, clean, 1);
        const before = await job.trainer.exportState();
        const advantagesBT = Float32Array.from(clean.advantagesBT, (_, i) => (i === 2 ? NaN : 0.5));
        const r = await job.trainer.forwardBackward({ ...clean, advantagesBT }, importanceSamplingLoss());
        assert.isNaN(r.loss);
        const step = await job.trainer.optimStep(ADAMW);
        assert.isTrue(step.skipped);
        assert.equal(job.trainer.skippedSteps, 1);
        const after = await job.trainer.exportState();
        assertStatesEqual(before, { ...after, skipped: before.skipped }, 'after a skipped step');
        const next = await job.trainer.forwardBackward({ ...clean, advantagesBT: advantagesBT.map(() => 0.5) }, importanceSamplingLoss());
        assert.isTrue(Number.isFinite(next.loss) && Number.isFinite(next.gradNorm));
        assert.isFalse((await job.trainer.optimStep(ADAMW)).skipped);
        assert.equal(job.trainer.step, 2);
      } finally {
        job.release();
      }
    },
  },
  {
    name: 'trainer: an update that would make weights non-finite (finite loss and gradients, lr 1e38) is never applied',
    fn: async (ctx) => {
      const job = await makeJob(ctx, llama, { trainable: 'lora' });
      try {
        const clean = parityBatch(llama, ROWS, 6);
        await train(job.trainer, clean, 1);
        const before = await job.trainer.exportState();
        const r = await job.trainer.forwardBackward(clean, importanceSamplingLoss());
        assert.isTrue(Number.isFinite(r.loss) && Number.isFinite(r.gradNorm), 'the loss and the gradients are finite');
        // lr / (1 − β1) = 1e39 is not an f32: every updated weight would be ±Inf or NaN.
        const step = await job.trainer.optimStep({ ...ADAMW, lr: 1e38 });
        assert.isTrue(step.skipped);
        assert.equal(job.trainer.skippedSteps, 1);
        const after = await job.trainer.exportState();
        assertStatesEqual(before, { ...after, skipped: before.skipped }, 'after a refused update');
        for (const a of Object.values(after.params)) assert.isTrue(a.every(Number.isFinite));
        await job.trainer.forwardBackward(clean, importanceSamplingLoss());
        assert.isFalse((await job.trainer.optimStep(ADAMW)).skipped);
        assert.equal(job.trainer.step, 2);
      } finally {
        job.release();
      }
    },
  },
  {
    name: 'trainer: two micro-batches accumulate to the whole batch (loss and gradients); computeLogprobs equals the training pass bitwise',
    fn: async (ctx) => {
      const whole = parityBatch(gpt2, [...ROWS, [2, 2, 2, 3, 3, 3, 3, 3], [4, 4, 4, 4, -1, -1, -1, -1]], 8);
      const T = whole.seqLen;
      const half = (r0: number): PackedBatch => {
        const s = <A extends Int32Array | Float32Array>(a: A) => a.slice(r0 * T, (r0 + 2) * T) as A;
        return { ...whole, rows: 2, inputsBT: s(whole.inputsBT), targetsBT: s(whole.targetsBT), lossMaskBT: s(whole.lossMaskBT), tokenScaleBT: s(whole.tokenScaleBT),
          oldLogprobsBT: s(whole.oldLogprobsBT), advantagesBT: s(whole.advantagesBT), seqIdBT: s(whole.seqIdBT) };
      };
      const job = await makeJob(ctx, gpt2, { trainable: 'all' });
      try {
        const one = await job.trainer.forwardBackward(whole, CE, { logprobs: true });
        const g1 = await job.trainer.readGradients();
        const scored = await job.trainer.computeLogprobs(whole);
        assert.equal(firstBitDiff(scored.logprobsBT, one.logprobsBT!), -1, 'computeLogprobs differs from the training forward');
        job.trainer.zeroGrad();
        const a = await job.trainer.forwardBackward(half(0), CE);
        const b = await job.trainer.forwardBackward(half(2), CE);
        assert.equal(job.trainer.pendingMicroBatches, 2);
        const g2 = await job.trainer.readGradients();
        assert.closeTo(a.loss + b.loss, one.loss, 1e-6 * Math.abs(one.loss));
        assert.equal(a.tokens + b.tokens, one.tokens);
        const zero = zeroGradNames(gpt2); // zero in exact arithmetic: compare absolutely
        for (const name of Object.keys(g1)) {
          if (zero.has(name)) assert.isAtMost(maxAbsDiff(g2[name], g1[name]), 1e-6, name);
          else assert.isAtMost(relL2(g2[name], g1[name]), 1e-5, name);
        }
      } finally {
        job.release();
      }
    },
  },
  {
    name: 'trainer: datums concatenated into shared rows (packDatums concat) give the loss and gradients of one datum per row',
    fn: async (ctx) => {
      const rng = new Rng(21, 0xc0c);
      const datums = [3, 17, 9, 2, 12, 20, 5].map((L, i) => {
        const tokens = Array.from({ length: L + 1 }, () => rng.nextInt(gpt2.vocabSize - 3));
        const mask = tokens.map((_, k) => (k >= 2 ? 1 : 0));
        return datumFromSequence(i, tokens, mask, mask.map(() => 0));
      });
      const base = { seed: 3, padId: 256, aggregation: 'token_mean' as const, shuffle: false };
      const rowWise = packDatums(datums, { ...base, rows: 7, seqLen: 20 });
      const packed = packDatums(datums, { ...base, rows: 7, seqLen: 32, concat: true });
      assert.equal(rowWise.batches.length, 1);
      assert.equal(packed.batches.length, 1);
      assert.isBelow(packed.batches[0].rows * 32, 7 * 20, 'concat computes fewer positions');
      const job = await makeJob(ctx, gpt2, { trainable: 'all' });
      try {
        const one = await job.trainer.forwardBackward(rowWise.batches[0], CE);
        const g1 = await job.trainer.readGradients();
        job.trainer.zeroGrad();
        const two = await job.trainer.forwardBackward(packed.batches[0], CE);
        const g2 = await job.trainer.readGradients();
        assert.closeTo(two.loss, one.loss, 1e-5 * Math.abs(one.loss));
        assert.equal(two.tokens, one.tokens);
        const zero = zeroGradNames(gpt2);
        for (const name of Object.keys(g1)) {
          if (zero.has(name)) assert.isAtMost(maxAbsDiff(g2[name], g1[name]), 1e-6, name);
          else assert.isAtMost(relL2(g2[name], g1[name]), 1e-5, name);
        }
      } finally {
        job.release();
      }
    },
  },
  {
    name: 'trainer: per-block recompute gives bitwise-identical gradients with a lower activation peak',
    fn: async (ctx) => {
      const cfg = validateConfig({ ...llama, name: 'llama-4-layers', nLayer: 4 });
      const model = BaseModel.upload(ctx, cfg, parityParams(cfg, 2));
      const batch = parityBatch(cfg, ROWS, 2);
      const peaks: number[] = [];
      const grads: Record<string, Float32Array>[] = [];
      try {
        for (const recompute of [false, true]) {
          const job = await makeJob(ctx, cfg, { trainable: 'lora', recompute, model, id: `recompute-${recompute}` });
          try {
            ctx.pool.resetPeaks();
            await job.trainer.forwardBackward(batch, CE);
            peaks.push(job.trainer.memory().peakBytes);
            grads.push(await job.trainer.readGradients());
          } finally {
            job.release();
          }
        }
      } finally {
        model.release();
      }
      for (const name of Object.keys(grads[0])) assert.equal(firstBitDiff(grads[0][name], grads[1][name]), -1, name);
      console.log(`[trainer ${ctx.kind}] 4-layer llama LoRA job peak: ${peaks[0]} B saved activations, ${peaks[1]} B with recompute`);
      assert.isBelow(peaks[1], peaks[0]);
    },
  },
  {
    name: "trainer: a LoRA job's peak pool bytes are below a full-parameter job's on the same base",
    fn: async (ctx) => {
      const model = BaseModel.upload(ctx, llama, parityParams(llama, 3));
      const batch = parityBatch(llama, ROWS, 3);
      const peak: Record<string, number> = {};
      try {
        for (const trainable of ['lora', 'all'] as const) {
          const job = await makeJob(ctx, llama, { trainable, model, id: `mem-${trainable}` });
          try {
            await train(job.trainer, batch, 1);
            peak[trainable] = job.trainer.memory().peakBytes;
          } finally {
            job.release();
          }
          assert.equal(ctx.pool.owner(`job:mem-${trainable}`).currentBytes, 0, 'the job released everything');
        }
      } finally {
        model.release();
      }
      console.log(`[trainer ${ctx.kind}] tiny-llama peak bytes: LoRA job ${peak.lora}, full job ${peak.all} (${(100 * peak.lora / peak.all).toFixed(1)}%)`);
      assert.isBelow(peak.lora, peak.all);
    },
  },
  {
    name: "trainer: estimateTrainingMemory bounds a step's measured peak within 30% (LoRA, full, recompute + value head, logits in blocks on 32 KiB bindings)",
    fn: async (ctx) => {
      const long = Array.from({ length: 4 }, (_, b) => new Array<number>(16).fill(b));
      const cases: { cfg: ModelConfig; trainable: 'lora' | 'all'; rows: number[][]; recompute?: boolean; valueHead?: boolean; cap?: number }[] = [
        { cfg: gpt2, trainable: 'lora', rows: ROWS },
        { cfg: gpt2, trainable: 'all', rows: ROWS },
        { cfg: llama, trainable: 'lora', rows: ROWS, recompute: true, valueHead: true },
        { cfg: llama, trainable: 'all', rows: long, cap: 32 * 1024 },
        { cfg: gpt2, trainable: 'lora', rows: long, cap: 32 * 1024 },
      ];
      for (const c of cases) {
        const dev = c.cap ? await cappedGpu(c.cap) : ctx;
        const batch = parityBatch(c.cfg, c.rows, 6);
        const live0 = dev.pool.stats().liveBytes;
        const job = await makeJob(dev, c.cfg, { trainable: c.trainable, id: 'estimate', ...(c.recompute ? { recompute: true } : {}), ...(c.valueHead ? { valueHead: true } : {}) });
        let measured: number;
        try {
          dev.pool.resetPeaks();
          await train(job.trainer, batch, 1);
          measured = dev.pool.stats().peakLiveBytes - live0;
        } finally {
          job.release();
        }
        const est = estimateTrainingMemory(c.cfg, {
          batch: c.rows.length, seqLen: c.rows[0].length, mode: c.trainable === 'all' ? 'full' : 'lora', lora: LORA,
          recompute: c.recompute, valueHead: c.valueHead, device: trainingMemoryDevice(dev),
        });
        const what = `${c.cfg.name} ${c.trainable}${c.recompute ? ' recompute' : ''}${c.valueHead ? ' value head' : ''} N=${c.rows.length * c.rows[0].length}` +
          `${c.cap ? ` (bindings ≤ ${c.cap} B: logits blocks of ${est.logitsRows} rows)` : ''}`;
        console.log(`[trainer ${ctx.kind}] ${what}: measured peak ${measured} B, estimate ${est.totalBytes} B (${(est.totalBytes / measured).toFixed(3)}×)`);
        assert.isAtLeast(est.totalBytes, measured, what);
        assert.isAtMost(est.totalBytes, 1.3 * measured, what);
      }
    },
  },
  {
    name: 'trainer: f16 base weights where shader-f16 exists (f32 fallback elsewhere); LoRA trains on them',
    fn: async (ctx) => {
      const params = parityParams(llama, 4);
      const m16 = BaseModel.upload(ctx, llama, params, { f16: true });
      const m32 = BaseModel.upload(ctx, llama, params);
      try {
        assert.equal(m16.f16, ctx.hasF16);
        assert.equal(m16.param('layers.0.attn.q.weight').dtype, ctx.hasF16 ? 'f16' : 'f32');
        assert.equal(m16.param('tok_emb.weight').dtype, 'f32');
        assert.isBelow(m16.byteLength, ctx.hasF16 ? m32.byteLength : m32.byteLength + 1);
        const batch = parityBatch(llama, ROWS, 4);
        const logits: Float32Array[] = [];
        for (const model of [m16, m32]) {
          const job = await makeJob(ctx, llama, { trainable: 'lora', model });
          try {
            logits.push((await job.trainer.computeLogprobs(batch, { logits: true })).logits!);
            const losses = await train(job.trainer, batch, 3);
            assert.isTrue(losses.every(Number.isFinite) && losses[2] < losses[0]);
          } finally {
            job.release();
          }
        }
        assert.isAtMost(relL2(logits[0], logits[1]), ctx.hasF16 ? 5e-3 : 0);
      } finally {
        m16.release();
        m32.release();
      }
    },
  },
  {
    name: 'trainer: uploads are all or nothing, release frees every byte, bad requests are typed errors',
    fn: async (ctx) => {
      const params = parityParams(gpt2, 5);
      const { ['layers.1.mlp.down.bias']: _dropped, ...missing } = params;
      assert.throws(() => BaseModel.upload(ctx, gpt2, missing, { owner: 'model:bad' }), WeightsError, /layers\.1\.mlp\.down\.bias/);
      assert.throws(() => BaseModel.upload(ctx, gpt2, { ...params, 'layers.0.attn.q.weight': new Float32Array(3) }, { owner: 'model:bad' }), WeightsError, /attn\.q\.weight/);
      assert.throws(() => BaseModel.upload(ctx, gpt2, { ...params, 'extra.weight': new Float32Array(1) }, { owner: 'model:bad' }), WeightsError, /extra\.weight/);
      assert.equal(ctx.pool.owner('model:bad').currentBytes, 0);
      assert.throws(() => LoraAdapter.fromHost(ctx, gpt2, LORA, {}, { owner: 'adapter:bad' }), WeightsError, /lora_a/);
      assert.equal(ctx.pool.owner('adapter:bad').currentBytes, 0);
      const model = BaseModel.upload(ctx, gpt2, params, { owner: 'model:ok' });
      assert.isAbove(ctx.pool.owner('model:ok').currentBytes, 0);
      try {
        // host round trips are exact; a fresh (seeded) adapter has B = 0 and leaves the logits unchanged
        const back = await model.toHost();
        for (const [name, a] of Object.entries(params)) assert.equal(firstBitDiff(back[name], a), -1, name);
        const fresh = LoraAdapter.init(ctx, gpt2, LORA, 11);
        try {
          const host = await fresh.toHost();
          assert.hasAllKeys(host, fresh.names());
          assert.isTrue(Object.entries(host).every(([n, a]) => n.endsWith('lora_a') ? a.some((x) => x !== 0) : a.every((x) => x === 0)));
          const batch = parityBatch(gpt2, ROWS, 5);
          const plain = await Trainer.create(model, { trainable: 'all' });
          const adapted = await Trainer.create(model, { trainable: 'lora', adapter: fresh });
          const [l0, l1] = [(await plain.computeLogprobs(batch, { logits: true })).logits!, (await adapted.computeLogprobs(batch, { logits: true })).logits!];
          plain.release();
          adapted.release();
          assert.equal(firstBitDiff(l0, l1), -1, 'a fresh adapter changed the logits');
        } finally {
          fresh.release();
        }
        await assertRejects(() => Trainer.create(model, { trainable: 'lora' }), ConfigError, /adapter/);
        const job = await makeJob(ctx, gpt2, { trainable: 'all', model, id: 'errors' });
        try {
          const batch = parityBatch(gpt2, ROWS, 5);
          await assertRejects(() => job.trainer.forwardBackward(batch, { kind: 'dpo', beta: 0.1 }), ConfigError, /dpo/);
          await assertRejects(() => job.trainer.forwardBackward(batch, { kind: 'ppo', clipLow: 0.2, clipHigh: 0.2, entropyCoef: 0, aggregation: 'token_mean', value: { clip: null, coef: 1 } }), ConfigError, /value head/);
          await assertRejects(() => job.trainer.optimStep(ADAMW), Error, /forwardBackward/);
          await assertRejects(() => job.trainer.forwardBackward({ ...batch, inputsBT: batch.inputsBT.map(() => 999) }, CE), Error, /vocabulary/);
        } finally {
          job.release();
        }
        assert.equal(ctx.pool.owner('job:errors').currentBytes, 0);
      } finally {
        model.release();
      }
      assert.equal(ctx.pool.owner('model:ok').currentBytes, 0);
      assert.throws(() => model.param('tok_emb.weight'), /released/);
    },
  },
];

// deno-lint-ignore no-explicit-any
async function assertRejects(f: () => Promise<unknown>, type: new (...a: any[]) => Error, pattern: RegExp): Promise<void> {
  try {
    await f();
  } catch (e) {
    assert.instanceOf(e, type);
    assert.match((e as Error).message, pattern);
    return;
  }
  assert.fail(`expected a ${type.name} matching ${pattern}`);
}
