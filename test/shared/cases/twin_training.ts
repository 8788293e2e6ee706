/**
 * Pretrained-layout twins train: each tiny twin of a published checkpoint (test/goldens/<case>,
 * written by transformers in the checkpoint's own dtype and names) loads as a user's would —
 * configFromHf + importHfWeights — and takes LoRA steps (a fresh adapter on every target the
 * family has, AdamW) on its golden batch: the loss falls step by step, the frozen base is
 * bitwise unchanged, and the adapter moved. The goldens (goldens.ts) check that each step's
 * gradients are transformers'; this checks the training loop closes on the new families.
 */
import { assert } from 'chai';
import { readTensor } from '../../../src/gpu/recorder.ts';
import { BaseModel } from '../../../src/model/base_model.ts';
import { configFromHf } from '../../../src/model/hf_config.ts';
import { initLora } from '../../../src/model/init.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import { blockLinears } from '../../../src/model/params.ts';
import { Trainer } from '../../../src/model/trainer.ts';
import { importHfWeights } from '../../../src/model/weight_names.ts';
import { firstBitDiff } from '../gpu.ts';
import { type GoldenName, loadGolden } from '../goldens.ts';
import type { GpuCase } from '../register.ts';
import { nextTokenBatch } from './goldens.ts';

const TWINS: readonly GoldenName[] = ['llama32', 'qwen3', 'gemma3'];
const STEPS = 4;

function twinCase(name: GoldenName): GpuCase {
  return {
    name: `twin training: ${name} in its published HF layout loads and takes ${STEPS} LoRA steps — loss falls, the base is untouched`,
    async fn(ctx) {
      const g = await loadGolden(name);
      try {
        const cfg = configFromHf(g.config, { name });
        const params = await importHfWeights(cfg, g.checkpoint);
        const model = BaseModel.upload(ctx, cfg, params);
        const lora = { rank: 4, alpha: 8, targets: blockLinears(cfg) };
        const init = initLora(cfg, lora, 7);
        // A fresh adapter has B = 0; give B a small start so every module's A also gets a gradient.
        for (const [k, v] of Object.entries(init)) if (k.endsWith('.lora_b')) v.forEach((_, i) => v[i] = 0.01 * Math.sin(i + 1));
        const adapter = LoraAdapter.fromHost(ctx, cfg, lora, init);
        const trainer = await Trainer.create(model, { trainable: 'lora', adapter });
        const batch = nextTokenBatch(g);
        const probe = 'layers.0.attn.q.weight';
        const before = await readTensor(model.param(probe)) as Float32Array;
        try {
          const losses: number[] = [];
          for (let s = 0; s < STEPS; s++) {
            const fb = await trainer.forwardBackward(batch, { kind: 'cross_entropy', aggregation: 'token_mean' });
            losses.push(fb.loss);
            const { skipped } = await trainer.optimStep({ lr: 3e-2, weightDecay: 0 });
            assert.isFalse(skipped, `${name}: step ${s} skipped`);
          }
          for (let s = 1; s < STEPS; s++) assert.isBelow(losses[s], losses[s - 1], `${name}: loss ${losses.join(' → ')}`);
          const after = await readTensor(model.param(probe)) as Float32Array;
          assert.strictEqual(firstBitDiff(after, before), -1, `${name}: the frozen base changed`);
          const a = await readTensor(adapter.module('layers.0.attn.q')!.a) as Float32Array;
          assert.isAbove(Math.max(...a.map((v, i) => Math.abs(v - init['layers.0.attn.q.lora_a'][i]))), 0, `${name}: lora_a did not move`);
          assert.isTrue(a.every(Number.isFinite));
        } finally {
          trainer.release();
          adapter.release();
          model.release();
        }
      } finally {
        await g.close();
      }
    },
  };
}

/** BaseModel.load: a bf16 checkpoint streamed tensor by tensor, as upload would hold it. */
const streamCase: GpuCase = {
  name: 'BaseModel.load streams a bf16 checkpoint: an f16 base where shader-f16 exists, tensors equal to the upload path, exact buffer sizes',
  async fn(ctx) {
    const g = await loadGolden('qwen3');
    try {
      const cfg = configFromHf(g.config, { name: 'qwen3' });
      const loaded = await BaseModel.load(ctx, cfg, g.checkpoint, { f16: 'auto' });
      const uploaded = BaseModel.upload(ctx, cfg, await importHfWeights(cfg, g.checkpoint), { f16: ctx.hasF16 });
      try {
        assert.strictEqual(loaded.f16, ctx.hasF16, 'a bf16 checkpoint becomes an f16 base where the device can read it');
        const a = await loaded.toHost(), b = await uploaded.toHost();
        for (const n of loaded.names()) assert.strictEqual(firstBitDiff(a[n], b[n]), -1, n);
        // Frozen weights at their own size (16-byte rounded), not a pool class.
        const elemBytes = (n: string) => (loaded.f16 && loaded.param(n).dtype === 'f16' ? 2 : 4);
        const want = loaded.names().reduce((s, n) => s + Math.max(16, Math.ceil((elemBytes(n) * a[n].length) / 16) * 16), 0);
        assert.strictEqual(ctx.pool.owner(loaded.owner).currentBytes, want);
        const f32 = await BaseModel.load(ctx, cfg, g.checkpoint, { f16: false });
        assert.isFalse(f32.f16);
        f32.release();
      } finally {
        loaded.release();
        uploaded.release();
      }
    } finally {
      await g.close();
    }
  },
};

export const twinTrainingCases: GpuCase[] = [...TWINS.map(twinCase), streamCase];
