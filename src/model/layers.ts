/**
 * The layer-level pieces of the training passes (forward.ts, backward.ts) beside the one block
 * (block.ts, which holds the forward of a linear layer and a norm): their backward passes, tensor
 * views, and the arena that allocates a call's activations under the job's pool owner.
 *
 * Legend: N = B·T rows, In / Out a linear layer's widths, C model width, R LoRA rank.
 *
 * Gradients live in a `Grads` map from canonical names (`layers.0.attn.q.weight`,
 * `layers.0.attn.q.lora_a`, ...) to tensors; a name that is absent is frozen, and its
 * weight-gradient product is never recorded (that is where LoRA's speed comes from: a frozen
 * linear layer's backward is one product, dx = dy·W). `acc` selects += (a later micro-batch of
 * the step) or = (the first one) for every parameter gradient.
 */
import { ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import { type AnyHostArray, type DType, emptyTensor, type Tensor, tensorFrom } from '../gpu/tensor.ts';
import { layernormBackward, layernormScratchSize } from '../ops/layernorm.ts';
import { loraLinearBackward } from '../ops/lora_linear.ts';
import { matmul } from '../ops/matmul.ts';
import { rmsnormBackward, rmsnormScratchSize } from '../ops/rmsnorm.ts';
import { archOf } from './arch.ts';
import type { NormSaved } from './block.ts';
import type { ModelConfig } from './config.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

/** Gradient tensors of the trainable parameters, by canonical name. */
export type Grads = ReadonlyMap<string, Tensor>;

/** A view of `t`'s buffer with another shape of the same element count (never release a view). */
export function view(t: Tensor, shape: readonly number[]): Tensor {
  let n = 1;
  for (const d of shape) n *= d;
  if (n !== t.size) throw new ShapeError('view', `${t} cannot be viewed as [${shape.join(', ')}]`);
  return t.view(shape);
}

/**
 * Allocations of one call (a forward/backward, a log-prob pass), owned by the job's pool owner so
 * the pool's per-owner peak counts activation memory. Released together after the submission
 * (safe: WebGPU runs submissions in queue order, so a later one reusing a buffer runs after).
 */
export class Arena {
  readonly ctx: GpuContext;
  readonly owner: string;
  #tensors: Tensor[] = [];

  constructor(ctx: GpuContext, owner: string) {
    this.ctx = ctx;
    this.owner = owner;
  }

  alloc(shape: readonly number[], dtype: DType = 'f32', label = 'act'): Tensor {
    const t = emptyTensor(this.ctx, shape, dtype, { owner: this.owner, label });
    this.#tensors.push(t);
    return t;
  }

  upload(data: AnyHostArray, shape: readonly number[], label: string): Tensor {
    const t = tensorFrom(this.ctx, data, shape, { owner: this.owner, label });
    this.#tensors.push(t);
    return t;
  }

  releaseAll(): void {
    for (const t of this.#tensors.splice(0)) t.release();
  }
}

/** Per-call constants the layers need besides the weights. */
export interface LayerEnv {
  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly adapter?: AdapterWeights;
  /** [1, N] of ones: Σ_rows dy as a product (bias gradients of plain linear layers). */
  readonly ones: Tensor;
}

/**
 * Backward of linearForward. dx = dy·W (+ LoRA's term): written (=), or added (+=) with
 * `accumulateDx`; skipped when dx is null. Parameter gradients of `m` present in `grads`
 * (weight, bias, lora_a, lora_b) are written or accumulated (`acc`); absent ones are not computed.
 */
export function linearBackward(rec: Recorder, env: LayerEnv, grads: Grads, dx: Tensor | null, dy: Tensor, x: Tensor, m: string,
  u: Tensor | undefined, accumulateDx: boolean, acc: boolean): void {
  const w = env.weights.param(`${m}.weight`);
  const dW = grads.get(`${m}.weight`) ?? null;
  const db = env.weights.has(`${m}.bias`) ? grads.get(`${m}.bias`) ?? null : null;
  const lora = env.adapter?.module(m);
  if (lora) {
    const dA = grads.get(`${m}.lora_a`);
    const dB = grads.get(`${m}.lora_b`);
    if (!u || !dA || !dB) throw new ShapeError('linear', `${m} is adapted: its backward needs x·Aᵀ and the gradients of lora_a and lora_b`);
    loraLinearBackward(rec, dx, dA, dB, dW, db, dy, x, u, w, lora.a, lora.b, { alpha: env.adapter!.lora.alpha, accumulate: acc, accumulateDx });
    return;
  }
  if (dx) matmul(rec, dx, dy, w, { accumulate: accumulateDx });
  if (dW) matmul(rec, dW, dy, x, { transA: true, accumulate: acc });
  if (db) matmul(rec, view(db, [1, db.size]), env.ones, dy, { accumulate: acc });
}

/** Elements of the f32 scratch normBackward needs for `rows` rows of `width` channels. */
export function normScratchSize(cfg: ModelConfig, rows: number, width = cfg.dModel): number {
  return archOf(cfg).norm === 'layernorm' ? layernormScratchSize(rows, width) : rmsnormScratchSize(rows, width);
}

/**
 * Scratch tensors of the norm backward: the column-sum scratch (sized for the largest norm of
 * the pass: the model's [N, C] or a per-head [N·H, D]) and sinks for frozen norms' gradients.
 */
export interface NormWork {
  readonly scratch: Tensor;
  readonly sinkW: Tensor; // [C]
  readonly sinkB: Tensor; // [C]
  /** [D] sink of a frozen per-head q/k norm (qkNorm families). */
  readonly sinkD: Tensor | null;
}

/**
 * Backward of normForward (block.ts): writes (=) dinp; the norm's weight (and bias) gradients go
 * to `grads` (written or accumulated per `acc`) when trainable, else into throwaway sinks (the
 * kernels always produce them; the column sum is cheap next to the products). Rows are the
 * leading dimensions of inp (per-head norms pass [N·H, D] views).
 */
export function normBackward(rec: Recorder, env: LayerEnv, grads: Grads, work: NormWork, dinp: Tensor, dout: Tensor, inp: Tensor,
  s: NormSaved, prefix: string, acc: boolean): void {
  const { cfg, weights } = env;
  const arch = archOf(cfg);
  const dw = grads.get(`${prefix}.weight`);
  const w = weights.param(`${prefix}.weight`);
  const width = inp.shape[inp.shape.length - 1];
  const rows = inp.size / width;
  const sink = width === cfg.dModel ? work.sinkW : work.sinkD;
  if (!dw && (!sink || sink.size !== width)) throw new ShapeError('norm', `no gradient sink of width ${width} for the frozen norm ${prefix}`);
  const scratch = work.scratch.view([normScratchSize(cfg, rows, width)]);
  const rstd = s.rstd.view([rows]);
  if (arch.norm === 'layernorm') {
    const db = grads.get(`${prefix}.bias`);
    layernormBackward(rec, dinp, dw ?? sink!, db ?? work.sinkB, dout, inp, w, s.mean!.view([rows]), rstd, scratch, { accumulate: Boolean(dw) && acc });
  } else {
    rmsnormBackward(rec, dinp, dw ?? sink!, dout, inp, w, rstd, scratch, { accumulate: Boolean(dw) && acc, offset: arch.normOffset });
  }
}
