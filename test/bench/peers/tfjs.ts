/**
 * Peer: @tensorflow/tfjs on @tensorflow/tfjs-backend-webgpu, the best equivalent of each kernel
 * composed from tfjs ops, with tfjs autograd (tf.valueAndGrads / tf.grad) for the backward pass.
 *
 * Runs under Deno without a shim: the backend finds `navigator.gpu` and Deno's WebGPU satisfies it
 * (it asks for its own device on the same adapter as ours).
 *
 * Completion: tfjs records kernels into its own command encoder and submits lazily, so one
 * iteration ends with `backend.submitQueue()` and `queue.onSubmittedWorkDone()` — the GPU has
 * finished, nothing is read back (ours is timed the same way).
 * Peak bytes: `tf.profile()` of one iteration, whose `peakBytes` is the largest total of live tensor
 * bytes after any kernel (inputs included) — logical bytes, not the sizes of tfjs's pooled buffers.
 */
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-webgpu';
import type { WebGPUBackend } from '@tensorflow/tfjs-backend-webgpu';
import { type BenchCase, causalBias, type Inputs, OUTPUT_NAMES, type Outputs } from '../cases.ts';
import { type Impl, type Prepared, watchErrors } from '../impl.ts';

/** One iteration: from the uploaded inputs to the output tensors (kept, the caller disposes them). */
type Step = () => tf.Tensor[];

/** The tfjs webgpu backend (after `TfjsPeer.init`). */
export function backend(): WebGPUBackend {
  return tf.backend() as unknown as WebGPUBackend;
}

/** Submit tfjs's pending work and wait until the GPU has finished it (nothing is read back). */
export async function finish(): Promise<void> {
  const b = backend();
  // submitQueue() finishes the open encoder (there may be none, or an open compute pass).
  b.ensureCommandEncoderReady();
  b.endComputePassEncoder();
  b.submitQueue();
  await b.queue.onSubmittedWorkDone();
}

function build(c: BenchCase, inp: Inputs): { step: Step; held: tf.Tensor[] } {
  const f32 = (name: string, shape: number[]) => tf.tensor(inp[name] as Float32Array, shape, 'float32');
  switch (c.name) {
    case 'matmul': {
      const { M, K, N } = c.dims;
      const a = f32('a', [M, K]);
      const b = f32('b', [K, N]);
      return { held: [a, b], step: () => [tf.matMul(a, b)] };
    }
    case 'lora_linear_fwd_bwd': {
      const { N, Cin, Cout, R, alpha } = c.dims;
      const x = f32('x', [N, Cin]);
      const w = f32('w', [Cout, Cin]);
      const a = f32('a', [R, Cin]);
      const b = f32('b', [Cout, R]);
      const dy = f32('dy', [N, Cout]);
      const s = tf.scalar(alpha / R);
      // y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ; W is a constant of f, so tfjs computes no dW.
      const f = (xx: tf.Tensor, aa: tf.Tensor, bb: tf.Tensor) =>
        tf.add(tf.matMul(xx, w, false, true), tf.mul(tf.matMul(tf.matMul(xx, aa, false, true), bb, false, true), s));
      const vg = tf.valueAndGrads(f);
      return {
        held: [x, w, a, b, dy, s],
        step: () => {
          const { value, grads } = vg([x, a, b], dy);
          return [value, ...grads];
        },
      };
    }
    case 'attention_fwd_bwd': {
      const { B, T, H, D } = c.dims;
      const q = f32('q', [B, T, H, D]);
      const k = f32('k', [B, T, H, D]);
      const v = f32('v', [B, T, H, D]);
      const dout = f32('dout', [B, T, H, D]);
      const bias = tf.tensor(causalBias(T), [T, T]);
      const scale = tf.scalar(1 / Math.sqrt(D));
      const heads = (x: tf.Tensor) => tf.transpose(x, [0, 2, 1, 3]); // [B,T,H,D] -> [B,H,T,D]
      const f = (qq: tf.Tensor, kk: tf.Tensor, vv: tf.Tensor) => {
        const s = tf.add(tf.mul(tf.matMul(heads(qq), heads(kk), false, true), scale), bias); // [B,H,T,T]
        return tf.transpose(tf.matMul(tf.softmax(s), heads(vv)), [0, 2, 1, 3]);
      };
      const vg = tf.valueAndGrads(f);
      return {
        held: [q, k, v, dout, bias, scale],
        step: () => {
          const { value, grads } = vg([q, k, v], dout);
          return [value, ...grads];
        },
      };
    }
    case 'policy_loss_fwd_bwd': {
      const { N, V, eps } = c.dims;
      const logits = f32('logits', [N, V]);
      const targets = tf.tensor(inp.targets as Int32Array, [N], 'int32');
      const rowBase = tf.tensor(Int32Array.from({ length: N }, (_, i) => i * V), [N], 'int32');
      const oldLogp = f32('oldLogprobs', [N]);
      const adv = f32('advantages', [N]);
      // PPO clipped surrogate, token mean: −mean(min(r·A, clip(r, 1−ε, 1+ε)·A)), r = exp(logp − old).
      // The target log-prob is a gather from the flattened log-softmax at i·V + target: measured
      // here 8× faster than gather with batchDims = 1 (whose gradient tfjs runs slowly) and faster
      // than a one-hot product.
      const loss = (lg: tf.Tensor) => {
        const logp = tf.gather(tf.reshape(tf.logSoftmax(lg), [N * V]), tf.add(rowBase, targets));
        const ratio = tf.exp(tf.sub(logp, oldLogp));
        const surr = tf.minimum(tf.mul(ratio, adv), tf.mul(tf.clipByValue(ratio, 1 - eps, 1 + eps), adv));
        return tf.neg(tf.mean(surr)) as tf.Scalar;
      };
      const vg = tf.valueAndGrad(loss);
      return {
        held: [logits, targets, rowBase, oldLogp, adv],
        step: () => {
          const { value, grad } = vg(logits);
          return [value, grad];
        },
      };
    }
  }
}

export class TfjsPeer implements Impl {
  readonly name = 'tfjs' as const;
  #errors: { check(): void } | null = null;

  async init(): Promise<void> {
    if (!(await tf.setBackend('webgpu'))) throw new Error('tfjs: the webgpu backend failed to initialize');
    await tf.ready();
    this.#errors = watchErrors(backend().device, 'tfjs');
  }

  missing(): string | null {
    return null;
  }

  prepare(c: BenchCase, inputs: Inputs): Promise<Prepared> {
    const { step, held } = build(c, inputs);
    const names = OUTPUT_NAMES[c.name];
    const iterate = () => tf.tidy(step);
    const errors = this.#errors!;
    return Promise.resolve({
      async run(iterations = 1) {
        const outs: tf.Tensor[] = [];
        for (let i = 0; i < iterations; i++) outs.push(...iterate());
        await finish();
        tf.dispose(outs);
        errors.check();
      },
      async outputs(): Promise<Outputs> {
        const outs = iterate();
        try {
          const data = await Promise.all(outs.map((t) => t.data() as Promise<Float32Array>));
          errors.check();
          return Object.fromEntries(names.map((n, i) => [n, Float32Array.from(data[i])]));
        } finally {
          tf.dispose(outs);
        }
      },
      async peakBytes() {
        let outs: tf.Tensor[] = [];
        const info = await tf.profile(async () => {
          outs = iterate();
          await finish();
          return outs;
        });
        tf.dispose(outs);
        return info.peakBytes;
      },
      dispose() {
        tf.dispose(held);
      },
    });
  }
}
