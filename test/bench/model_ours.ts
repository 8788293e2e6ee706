/**
 * Ours in the `model` part: the engine as a user drives it — a BaseModel, a LoraAdapter for LoRA
 * jobs, a Trainer (forwardBackward + optimStep, each one recording and one submission, the loss
 * and gradient norm read back as always), and `generate` (prefill, then KV-cache decode in chunks
 * of 8 steps per submission, greedy). Each call resolves once the GPU has finished.
 *
 * Peak bytes of a training job: the pool's peakLiveBytes over the job's first step, reset just
 * before it — everything live on the device during that step (the base, the job's copy of it in
 * a full job, the adapter, gradients, moments, activations and scratch), in pool size classes.
 */
import type { PackedBatch } from '../../src/algorithms/pack.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { BaseModel } from '../../src/model/base_model.ts';
import { generate } from '../../src/model/generate.ts';
import { LoraAdapter } from '../../src/model/lora.ts';
import { Trainer } from '../../src/model/trainer.ts';
import type { Decoder, DecodeSetup, ModelImpl, StepCheck, TrainJob, TrainSetup } from './model_impl.ts';

const CE = { kind: 'cross_entropy', aggregation: 'token_mean' } as const;

/** One micro-batch holding the whole step: every row full, every token in the token-mean loss. */
export function fullBatch(B: number, T: number, inputsBT: Int32Array, targetsBT: Int32Array): PackedBatch {
  const N = B * T;
  const rowOf = Int32Array.from({ length: N }, (_, i) => Math.floor(i / T));
  return {
    rows: B, seqLen: T, inputsBT, targetsBT,
    lossMaskBT: new Float32Array(N).fill(1),
    tokenScaleBT: new Float32Array(N).fill(1 / N),
    oldLogprobsBT: new Float32Array(N), advantagesBT: new Float32Array(N),
    returnsBT: null, oldValuesBT: null, refLogprobsBT: null,
    seqIdBT: rowOf, sequenceIdBT: rowOf,
    sequenceIdB: Int32Array.from({ length: B }, (_, b) => b),
    lengthB: new Int32Array(B).fill(T),
    pairIdB: new Int32Array(B).fill(-1), pairRoleB: new Int8Array(B),
  };
}

export class OursModel implements ModelImpl {
  readonly name = 'ours' as const;
  constructor(readonly ctx: GpuContext) {}

  missingTrain(): string | null {
    return null;
  }

  async train(s: TrainSetup): Promise<TrainJob> {
    const ctx = this.ctx;
    const model = BaseModel.upload(ctx, s.cfg, s.params, { owner: 'bench:model' });
    let adapter: LoraAdapter | undefined;
    let trainer: Trainer | undefined;
    try {
      if (s.lora) adapter = LoraAdapter.fromHost(ctx, s.cfg, s.lora.config, s.lora.tensors, { id: 'bench-adapter', owner: 'job:bench' });
      trainer = await Trainer.create(model, { id: 'bench', trainable: s.lora ? 'lora' : 'all', ...(adapter ? { adapter } : {}) });
    } catch (e) {
      adapter?.release();
      model.release();
      throw e;
    }
    const t = trainer;
    const batch = fullBatch(s.B, s.T, s.inputsBT, s.targetsBT);
    const opt = { lr: s.adam.lr, beta1: s.adam.beta1, beta2: s.adam.beta2, eps: s.adam.eps, weightDecay: 0 };
    const step = async (): Promise<StepCheck> => {
      const r = await t.forwardBackward(batch, CE);
      const o = await t.optimStep(opt);
      if (o.skipped) throw new Error(`ours: the step was skipped (loss ${r.loss}, gradient norm ${r.gradNorm})`);
      return { loss: r.loss, gradNorm: r.gradNorm };
    };
    let first = true;
    const job: TrainJob & { firstStepPeakBytes: number | null } = {
      firstStepPeakBytes: null,
      async run() {
        await step();
      },
      async checked() {
        if (first) ctx.pool.resetPeaks();
        const r = await step();
        if (first) job.firstStepPeakBytes = ctx.pool.stats().peakLiveBytes;
        first = false;
        return r;
      },
      dispose() {
        t.release();
        adapter?.release();
        model.release();
      },
    };
    return job;
  }

  decoder(s: DecodeSetup): Promise<Decoder> {
    const model = BaseModel.upload(this.ctx, s.cfg, s.params, { owner: 'bench:decode' });
    const ctx = this.ctx;
    return Promise.resolve({
      how: 'prefill, then KV-cache decode, 8 steps per submission',
      async generate() {
        const r = await generate(ctx, model, null, s.prompts, { maxTokens: s.newTokens, temperature: 0, seed: 0, owner: 'bench:decode' });
        return r.tokens;
      },
      dispose() {
        model.release();
      },
    });
  }
}
