/**
 * Engine ↔ tfjs reference model parity (test/reference/parity.ts), run by both GPU suites: for
 * tiny-gpt2 and tiny-llama (GQA), a llama MQA variant with tied embeddings and biases, on padded
 * batches and on packed rows of two segments with padding — logits, loss, every parameter
 * gradient (trainable 'all') and every adapter gradient (trainable 'lora') within a relative L2
 * error of 1e-4 per tensor. One case with per-block recomputation; and the PPO value head's
 * gradient (with the policy surrogate and the clipped value loss) against tfjs autograd.
 */
import { assert } from 'chai';
import { ppoLoss, valueLossSpec } from '../../../src/algorithms/loss_spec.ts';
import { BaseModel } from '../../../src/model/base_model.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import { PRESETS } from '../../../src/model/presets.ts';
import { Trainer } from '../../../src/model/trainer.ts';
import { Rng } from '../../../src/util/rng.ts';
import { refBatchOf, parityAdapter, parityBatch, parityParams, PARITY_CASES, type ParityCase, type ParityResult, runParity } from '../../reference/parity.ts';
import { type RefBatch, refLossAndGrads, type RefOutputs } from '../../reference/model_tf.ts';
import { relL2, tf } from '../../reference/tf.ts';
import type { GpuCase } from '../register.ts';

const BOUND = 1e-4;

function check(r: ParityResult): void {
  const msg = (what: string, v: number, extra = '') => `${r.name}: ${what} ${v.toExponential(2)} over ${BOUND}${extra}`;
  assert.isAtMost(r.logitsRelErr, BOUND, msg('logits', r.logitsRelErr));
  assert.isAtMost(r.lossRelErr, BOUND, msg('loss', r.lossRelErr));
  assert.isAtMost(r.gradsMaxRelErr, BOUND, msg('gradient', r.gradsMaxRelErr, ` (${r.worstGrad})`));
  assert.isAtMost(r.loraLogitsRelErr, BOUND, msg('logits with the adapter', r.loraLogitsRelErr));
  assert.isAtMost(r.loraLossRelErr, BOUND, msg('loss with the adapter', r.loraLossRelErr));
  assert.isAtMost(r.loraGradsMaxRelErr, BOUND, msg('adapter gradient', r.loraGradsMaxRelErr, ` (${r.worstLoraGrad})`));
  for (const [name, v] of Object.entries(r.zeroByMath)) assert.isAtMost(v, 1e-5, `${r.name}: ${name} (zero in exact arithmetic) off by ${v} of the gradient RMS`);
}

const results: ParityResult[] = [];

function parityCase(c: ParityCase, recompute = false): GpuCase {
  return {
    name: `model parity: ${c.name}${recompute ? ', per-block recompute' : ''} — logits, loss, all/LoRA gradients vs tfjs`,
    fn: async (ctx) => {
      const r = await runParity(ctx, c, { recompute });
      results.push(r);
      check(r);
    },
  };
}

/** Prints the largest errors per family of the cases that ran (for the report; asserts nothing new). */
const reportCase: GpuCase = {
  name: 'model parity: largest errors per family (report)',
  fn: async (ctx) => {
    for (const family of ['gpt2', 'llama'] as const) {
      const rs = results.filter((r) => r.family === family);
      const max = (f: (r: ParityResult) => number) => Math.max(...rs.map(f)).toExponential(2);
      console.log(`[parity ${ctx.kind}] ${family}: logits ${max((r) => Math.max(r.logitsRelErr, r.loraLogitsRelErr))}, ` +
        `loss ${max((r) => Math.max(r.lossRelErr, r.loraLossRelErr))}, grads ${max((r) => r.gradsMaxRelErr)}, lora grads ${max((r) => r.loraGradsMaxRelErr)} (${rs.length} cases)`);
    }
  },
};

/** PPO with a value head: policy surrogate + clipped value loss, adapter and value-head gradients vs tfjs. */
const valueHeadCase: GpuCase = {
  name: 'model parity: PPO value head (clipped value loss) and adapter gradients vs tfjs',
  fn: async (ctx) => {
    const cfg = PRESETS['tiny-llama'];
    const lora = { rank: 2, alpha: 4, targets: ['q', 'v', 'up'] as const };
    const params = parityParams(cfg, 7, { valueHead: true });
    const adapterHost = parityAdapter(cfg, { ...lora, targets: [...lora.targets] }, 7);
    const base = parityBatch(cfg, [[0, 0, 0, 0, 1, 1, 1, -1], [2, 2, 2, 2, 2, 2, 2, -1]], 7);
    const model = BaseModel.upload(ctx, cfg, params);
    const adapter = LoraAdapter.fromHost(ctx, cfg, { ...lora, targets: [...lora.targets] }, adapterHost);
    const job = await Trainer.create(model, { trainable: 'lora', adapter, valueHead: true });
    try {
      assert.isTrue(job.hasValueHead);
      assert.deepEqual(job.trainableNames().slice(-2), ['value_head.weight', 'value_head.bias']);
      const scored = await job.computeLogprobs(base);
      const rng = new Rng(7, 99);
      const N = base.rows * base.seqLen;
      const oldValuesBT = Float32Array.from(scored.valuesBT!, (v) => v + 0.3 * rng.normal());
      const batch = { ...base, oldLogprobsBT: scored.logprobsBT, advantagesBT: rng.normalArray(N), returnsBT: rng.normalArray(N), oldValuesBT };
      const spec = ppoLoss({ clipLow: 0.2, clipHigh: 0.3, value: valueLossSpec({ clip: 0.2, coef: 0.7 }) });
      const fb = await job.forwardBackward(batch, spec);
      const grads = await job.readGradients();
      // tfjs: Σ scale·(−ratio·A) (ratio ≈ 1: old log-probs are the current ones) + coef·Σ scale·½·max(u², u_clip²).
      const loss = (out: RefOutputs, b: RefBatch) => {
        const V = cfg.vocabSize;
        const lp = tf.sum(tf.mul(tf.logSoftmax(out.logits, -1), tf.oneHot(tf.tensor1d(b.targets!, 'int32'), V)), -1);
        const scale = tf.tensor1d(batch.tokenScaleBT);
        const ratio = tf.exp(tf.sub(lp, tf.tensor1d(batch.oldLogprobsBT)));
        const policy = tf.neg(tf.sum(tf.mul(scale, tf.mul(ratio, tf.tensor1d(batch.advantagesBT)))));
        const v = out.values!;
        const old = tf.tensor1d(oldValuesBT);
        const ret = tf.tensor1d(batch.returnsBT);
        const vc = tf.minimum(tf.maximum(v, tf.sub(old, 0.2)), tf.add(old, 0.2));
        const per = tf.mul(0.5, tf.maximum(tf.square(tf.sub(v, ret)), tf.square(tf.sub(vc, ret))));
        return tf.add(policy, tf.mul(0.7, tf.sum(tf.mul(scale, per)))) as tf.Scalar;
      };
      const ref = refLossAndGrads(cfg, params, refBatchOf(batch), { trainable: 'lora', valueHead: true, lora: { config: adapter.lora, tensors: adapterHost }, loss });
      assert.isAtMost(Math.abs(fb.loss - ref.loss) / Math.abs(ref.loss), BOUND, `loss ${fb.loss} vs ${ref.loss}`);
      assert.isDefined(fb.stats.valueLoss);
      assert.hasAllKeys(grads, Object.keys(ref.grads));
      for (const [name, want] of Object.entries(ref.grads)) {
        const e = relL2(grads[name], want);
        assert.isAtMost(e, BOUND, `${name}: relative L2 error ${e}`);
      }
    } finally {
      job.release();
      adapter.release();
      model.release();
    }
  },
};

export const modelParityCases: GpuCase[] = [
  ...PARITY_CASES.map((c) => parityCase(c)),
  parityCase(PARITY_CASES[3], true),
  valueHeadCase,
  reportCase,
];
