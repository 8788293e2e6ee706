/**
 * estimateTrainingMemory against the pool's measured peak, within 10%, on a Qwen2.5-shaped LoRA
 * job (issue 20 item 2): configFromHf on a config.json like Qwen2.5-0.5B's (GQA 2 KV heads of 64,
 * q/k/v bias, tied embedding, a large vocabulary) scaled down to run in seconds, with the binding
 * capped so that — as at the real shape, where one 128 MiB binding holds 220 rows of 151,936
 * logits and the 544 MB embedding is bound a range at a time — the logits are made in blocks and
 * the embedding is over one binding. An f16 base where the device has shader-f16, as a pretrained
 * checkpoint loads; and a full-parameter step on that base (its f32 copy). The real shapes are
 * measured by the `pretrained` bench (test/bench/pretrained.ts).
 */
import { assert } from 'chai';
import { BaseModel } from '../../../src/model/base_model.ts';
import { configFromHf } from '../../../src/model/hf_config.ts';
import { initParameters } from '../../../src/model/init.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import type { LoraConfig } from '../../../src/model/config.ts';
import { estimateTrainingMemory, type TrainingMemoryEstimate, trainingMemoryDevice } from '../../../src/model/memory.ts';
import { Trainer } from '../../../src/model/trainer.ts';
import { Rng } from '../../../src/util/rng.ts';
import type { PackedBatch } from '../../../src/algorithms/pack.ts';
import { cappedGpu } from '../gpu.ts';
import { QWEN25_05B_CONFIG } from '../pretrained_configs.ts';
import type { GpuCase } from '../register.ts';

/** Qwen2.5-0.5B's config.json with the sizes scaled down (head_dim 64 and 2 KV heads kept). */
export const QWEN25_SMALL = {
  ...QWEN25_05B_CONFIG, hidden_size: 256, intermediate_size: 1376, max_window_layers: 2, num_attention_heads: 4, num_hidden_layers: 2, vocab_size: 12000,
};

/** One micro-batch of B full rows of random tokens, every token in a token-mean loss. */
function randomBatch(B: number, T: number, V: number, seed: number): PackedBatch {
  const rng = new Rng(seed, 1);
  const N = B * T;
  const rowOf = Int32Array.from({ length: N }, (_, i) => Math.floor(i / T));
  return {
    rows: B, seqLen: T,
    inputsBT: Int32Array.from({ length: N }, () => rng.nextInt(V)), targetsBT: Int32Array.from({ length: N }, () => rng.nextInt(V)),
    lossMaskBT: new Float32Array(N).fill(1), tokenScaleBT: new Float32Array(N).fill(1 / N),
    oldLogprobsBT: new Float32Array(N), advantagesBT: new Float32Array(N), returnsBT: null, oldValuesBT: null, refLogprobsBT: null,
    seqIdBT: rowOf, sequenceIdBT: rowOf, sequenceIdB: Int32Array.from({ length: B }, (_, b) => b),
    lengthB: new Int32Array(B).fill(T), pairIdB: new Int32Array(B).fill(-1), pairRoleB: new Int8Array(B),
  };
}

const LORA: LoraConfig = { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o', 'up', 'down'] };

/** One step of a fresh job on a fresh f16 (where offered) base: the pool's peak and the estimate. */
async function stepPeak(mode: 'lora' | 'full'): Promise<{ measured: number; est: TrainingMemoryEstimate; kind: string }> {
  const cfg = configFromHf(QWEN25_SMALL);
  const B = 1, T = 72;
  // 2 MiB bindings: a row of logits is 48 kB, so blocks of 43 rows (2 for T = 72); the 12.3 MB
  // embedding is bound in ranges; an f32 MLP weight (1.4 MB, no shader-f16) still fits one.
  const ctx = await cappedGpu(2 * 2 ** 20);
  // As on a fresh device: scratch textures cached by an earlier case may serve a smaller copy (up
  // to CACHE_FIT_SLACK rows more, charged at their size), which the estimate does not count.
  ctx.textureCache.trim();
  const live0 = ctx.pool.stats().liveBytes;
  const model = BaseModel.upload(ctx, cfg, initParameters(cfg, 3), { owner: 'model:fit', f16: true });
  const adapter = mode === 'lora' ? LoraAdapter.init(ctx, cfg, LORA, 5, { owner: 'job:fit' }) : undefined;
  let measured: number;
  try {
    const trainer = await Trainer.create(model, { id: 'fit', trainable: mode === 'lora' ? 'lora' : 'all', ...(adapter ? { adapter } : {}) });
    try {
      ctx.pool.resetPeaks();
      const r = await trainer.forwardBackward(randomBatch(B, T, cfg.vocabSize, 7), { kind: 'cross_entropy', aggregation: 'token_mean' });
      const o = await trainer.optimStep({ lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
      assert.isTrue(Number.isFinite(r.loss) && !o.skipped);
      // Everything live during the step that was not there before the base: the base, its kept
      // texture copies, the job (what estimateTrainingMemory's totalBytes counts).
      measured = ctx.pool.stats().peakLiveBytes - live0;
    } finally {
      trainer.release();
    }
  } finally {
    adapter?.release();
    model.release();
  }
  const est = estimateTrainingMemory(cfg, { batch: B, seqLen: T, mode, lora: LORA, baseWeightBytes: ctx.hasF16 ? 2 : 4, device: trainingMemoryDevice(ctx) });
  assert.isBelow(est.logitsRows, B * T, 'the logits are made in blocks');
  assert.isAbove(4 * cfg.vocabSize * cfg.dModel, ctx.limit('maxStorageBufferBindingSize'), 'the embedding is over one binding');
  console.log(`[memory fit ${ctx.kind}] Qwen2.5-shaped ${mode} B=${B} T=${T}: measured peak ${measured} B, estimate ${est.totalBytes} B (${(est.totalBytes / measured).toFixed(3)}×), logits blocks of ${est.logitsRows} rows`);
  return { measured, est, kind: ctx.kind };
}

export const memoryFitCases: GpuCase[] = [
  {
    name: "memory fit: estimateTrainingMemory is within 10% of a Qwen2.5-shaped LoRA step's measured peak (logits in blocks, embedding over one binding)",
    fn: async () => {
      const { measured, est } = await stepPeak('lora');
      assert.isAtLeast(est.totalBytes, 0.9 * measured);
      assert.isAtMost(est.totalBytes, 1.1 * measured);
    },
  },
  {
    // The job's f32 copy of an f16 base: exact sizes, and its kept texture copies at f32.
    name: "memory fit: and of a full-parameter step's on the same f16 base",
    fn: async () => {
      const { measured, est } = await stepPeak('full');
      assert.isAtLeast(est.totalBytes, 0.9 * measured);
      assert.isAtMost(est.totalBytes, 1.1 * measured);
    },
  },
];
