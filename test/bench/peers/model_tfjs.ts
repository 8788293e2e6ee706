/**
 * Peer in the `model` part: the tfjs reference model (test/reference/model_tf.ts, both families
 * written with tfjs ops) on the tfjs webgpu backend, trained as a tfjs user would: the trainable
 * tensors are `tf.variable`s, `tf.variableGrads` differentiates the token-mean cross-entropy, and
 * `tf.train.adam` applies the update. A LoRA job makes only the adapter variables (the base stays
 * constant tensors, so tfjs computes no base weight gradients).
 *
 * Decoding: the reference model has no KV cache, so each new token recomputes the forward of the
 * whole prefix [B, t] (its logits at every position) and takes the argmax of the last position's
 * logits, read back to extend the prompt.
 *
 * Completion: `finish()` of peers/tfjs.ts (tfjs's queue submitted, then onSubmittedWorkDone).
 */
import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from '../../../src/model/config.ts';
import { loraSpecs, parameterSpecs } from '../../../src/model/params.ts';
import { maskedCrossEntropy, type RefBatch, refForwardTensors, type RefLora } from '../../reference/model_tf.ts';
import type { Decoder, DecodeSetup, ModelImpl, StepCheck, TrainJob, TrainSetup } from '../model_impl.ts';
import { finish } from './tfjs.ts';

function upload(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, lora: RefLora | undefined): Record<string, tf.Tensor> {
  const specs = [...parameterSpecs(cfg), ...(lora ? loraSpecs(cfg, lora.config) : [])];
  const all = { ...params, ...(lora?.tensors ?? {}) };
  const out: Record<string, tf.Tensor> = {};
  for (const s of specs) {
    const data = all[s.name];
    if (!data) throw new Error(`tfjs model: parameter ${s.name} is missing`);
    out[s.name] = tf.tensor(data, [...s.shape], 'float32');
  }
  return out;
}

export class TfjsModel implements ModelImpl {
  readonly name = 'tfjs' as const;

  missingTrain(): string | null {
    return null;
  }

  train(s: TrainSetup): Promise<TrainJob> {
    const lora: RefLora | undefined = s.lora ? { config: s.lora.config, tensors: s.lora.tensors } : undefined;
    const consts = upload(s.cfg, s.params, lora);
    const trainable = Object.keys(consts).filter((n) => !lora || /\.lora_[ab]$/.test(n));
    const vars = new Map(trainable.map((n) => [n, tf.variable(consts[n], true)]));
    for (const n of trainable) consts[n].dispose();
    const p: Record<string, tf.Tensor> = { ...consts, ...Object.fromEntries(vars) };
    const varList = [...vars.values()];
    const batch: RefBatch = { B: s.B, T: s.T, tokens: s.inputsBT, targets: s.targetsBT };
    const mask = new Float32Array(s.B * s.T).fill(1);
    const opt = tf.train.adam(s.adam.lr, s.adam.beta1, s.adam.beta2, s.adam.eps);
    const loss = () => maskedCrossEntropy(refForwardTensors(s.cfg, p, batch, lora ? { lora } : {}).logits, s.targetsBT, mask);
    // One step inside a tidy: the gradients and every intermediate are freed, the variables and
    // Adam's moments kept. With `check`, the loss and ‖g‖₂ are kept and returned.
    const step = (check: boolean): tf.Tensor[] => tf.tidy(() => {
      const { value, grads } = tf.variableGrads(loss as () => tf.Scalar, varList);
      // ‖g‖₂ over one concatenated vector: tf.addN of the per-tensor sums returns 0 on the webgpu backend here.
      const norm = check ? tf.norm(tf.concat(Object.values(grads).map((g) => tf.reshape(g, [-1])))) : null;
      opt.applyGradients(grads);
      return check ? [value, norm!] : [];
    });
    return Promise.resolve({
      async run() {
        step(false);
        await finish();
      },
      async checked(): Promise<StepCheck> {
        const [value, norm] = step(true);
        try {
          const [l, g] = await Promise.all([value.data(), norm.data()]);
          return { loss: l[0], gradNorm: g[0] };
        } finally {
          tf.dispose([value, norm]);
        }
      },
      firstStepPeakBytes: null,
      dispose() {
        tf.dispose(Object.values(consts).filter((t) => !t.isDisposed));
        for (const v of varList) v.dispose();
        opt.dispose();
      },
    });
  }

  decoder(s: DecodeSetup): Promise<Decoder> {
    const p = upload(s.cfg, s.params, undefined);
    const B = s.prompts.length;
    const V = s.cfg.vocabSize;
    return Promise.resolve({
      how: 'no KV cache: the reference model\'s forward over the whole prefix per token (logits at every position), argmax of the last',
      async generate() {
        const rows = s.prompts.map((r) => [...r]);
        for (let k = 0; k < s.newTokens; k++) {
          const T = rows[0].length;
          const next = tf.tidy(() => {
            const tokens = Int32Array.from(rows.flat());
            const logits = refForwardTensors(s.cfg, p, { B, T, tokens }).logits; // [B·T, V]
            return tf.argMax(tf.reshape(tf.slice(tf.reshape(logits, [B, T, V]), [0, T - 1, 0], [B, 1, V]), [B, V]), -1);
          });
          const ids = await next.data();
          next.dispose();
          rows.forEach((r, b) => r.push(ids[b]));
        }
        return rows.map((r) => r.slice(s.prompts[0].length));
      },
      dispose() {
        tf.dispose(Object.values(p));
      },
    });
  }
}
