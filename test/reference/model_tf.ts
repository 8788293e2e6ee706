/**
 * The oracle transformer: both families written with tfjs ops on the cpu backend (f32, autograd),
 * independently of any WGSL. The GPU engine is compared against it tensor by tensor: logits,
 * values, loss, and the gradient of every parameter and adapter tensor.
 *
 * It takes the canonical parameter dict of src/model/params.ts (plain Float32Arrays, linear
 * weights [out, in], y = x·Wᵀ + b) and a batch of B rows of T tokens, N = B·T:
 *   plain:  every token sees the earlier tokens of its row;
 *   padded: `lengths[b]` live tokens per row, the rest are padding;
 *   packed: `segments[b, t]` ids; a token sees the earlier tokens of its row with the same id,
 *           a negative id is padding; positions restart at 0 in each segment.
 * Padding tokens take position 0 (in both padded and packed batches), so the two layouts agree.
 * Padding rows have attention output 0 (as the attention kernel), but still flow through the rest
 * of the block, so their logits are defined; a loss mask of 0 keeps them out of the loss.
 *
 * GPT-2: x = tok_emb[tokens] + pos_emb[positions]; per block x += o(attn(LN1(x))),
 *        x += down(gelu_tanh(up(LN2(x)))); logits = LNf(x)·Wheadᵀ.
 * Llama: x = tok_emb[tokens]; per block x += o(attn(rope(q), rope(k), v)) on RMSNorm1(x),
 *        x += down(silu(gate(h)) ⊙ up(h)) with h = RMSNorm2(x); logits = RMSNormf(x)·Wheadᵀ.
 * RoPE: rotate_half convention (Hugging Face Llama): for i < D/2, angle = pos·θ^(−2i/D),
 *       (x_i, x_{i+D/2}) → (x_i cos − x_{i+D/2} sin, x_{i+D/2} cos + x_i sin); angles in f64.
 * GQA: query head h reads kv head floor(h / (Hq/Hkv)). Scale 1/sqrt(D).
 * LoRA on a target module: y += (α/R)·(x·Aᵀ)·Bᵀ. Value head: values = finalNorm(x)·wᵀ + b.
 * Default loss: token-mean cross-entropy, Σ mask·(−log p(target)) / Σ mask (0 when Σ mask = 0).
 */
import { tf } from './tf.ts';
import type { LoraConfig, LoraTarget, ModelConfig } from '../../src/model/config.ts';
import { loraSpecs, moduleName, parameterSpecs } from '../../src/model/params.ts';

export interface RefBatch {
  readonly B: number;
  readonly T: number;
  /** [B, T] token ids. */
  readonly tokens: Int32Array;
  /** [B] live tokens per row (padded batch). */
  readonly lengths?: Int32Array;
  /** [B, T] segment ids, negative = padding (packed batch). */
  readonly segments?: Int32Array;
  /** [B, T] positions; default: index within the segment (packed) or t. */
  readonly positions?: Int32Array;
  /** [B, T] next-token targets for the loss. */
  readonly targets?: Int32Array;
  /** [B, T] loss weights (0 or 1); default: 1 on live tokens. */
  readonly lossMask?: Float32Array;
}

export interface RefLora {
  readonly config: LoraConfig;
  readonly tensors: Readonly<Record<string, Float32Array>>;
}

export interface RefOptions {
  readonly lora?: RefLora;
  /** Compute values from value_head.{weight,bias} (which must be in params). */
  readonly valueHead?: boolean;
}

export interface RefOutputs {
  /** [N, V] */
  logits: tf.Tensor2D;
  /** [N] when valueHead */
  values?: tf.Tensor1D;
}

/** Live rows [B, T] (1/0) and visibility [B, T, T] (1 where row t may attend to key j). */
export function refMasks(batch: RefBatch): { live: Float32Array; visible: Float32Array } {
  const { B, T } = batch;
  const live = new Float32Array(B * T);
  const visible = new Float32Array(B * T * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const seg = batch.segments?.[b * T + t];
      const isLive = batch.segments ? (seg as number) >= 0 : batch.lengths ? t < batch.lengths[b] : true;
      if (!isLive) continue;
      live[b * T + t] = 1;
      for (let j = 0; j <= t; j++) {
        if (!batch.segments || batch.segments[b * T + j] === seg) visible[(b * T + t) * T + j] = 1;
      }
    }
  }
  return { live, visible };
}

/** Positions [B, T]: given, or the count of earlier tokens of the same segment (packed), or t; padding rows 0. */
export function refPositions(batch: RefBatch): Int32Array {
  if (batch.positions) return batch.positions;
  const { B, T } = batch;
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    const seen = new Map<number, number>();
    for (let t = 0; t < T; t++) {
      if (!batch.segments) pos[b * T + t] = batch.lengths && t >= batch.lengths[b] ? 0 : t;
      else {
        const s = batch.segments[b * T + t];
        if (s < 0) continue;
        const k = seen.get(s) ?? 0;
        pos[b * T + t] = k;
        seen.set(s, k + 1);
      }
    }
  }
  return pos;
}

type Tensors = Record<string, tf.Tensor>;

function linear(x: tf.Tensor2D, p: Tensors, module: string, lora: { scale: number; targets: ReadonlySet<string> } | undefined): tf.Tensor2D {
  let y: tf.Tensor = tf.matMul(x, p[`${module}.weight`] as tf.Tensor2D, false, true);
  const bias = p[`${module}.bias`];
  if (bias) y = tf.add(y, bias);
  if (lora && lora.targets.has(module)) {
    const xa = tf.matMul(x, p[`${module}.lora_a`] as tf.Tensor2D, false, true);
    y = tf.add(y, tf.mul(tf.matMul(xa, p[`${module}.lora_b`] as tf.Tensor2D, false, true), lora.scale));
  }
  return y as tf.Tensor2D;
}

function norm(cfg: ModelConfig, x: tf.Tensor2D, p: Tensors, prefix: string): tf.Tensor2D {
  if (cfg.family === 'gpt2') {
    const mean = tf.mean(x, -1, true);
    const xc = tf.sub(x, mean);
    const variance = tf.mean(tf.square(xc), -1, true);
    return tf.add(tf.mul(tf.div(xc, tf.sqrt(tf.add(variance, cfg.normEps))), p[`${prefix}.weight`]), p[`${prefix}.bias`]) as tf.Tensor2D;
  }
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.div(x, tf.sqrt(tf.add(ms, cfg.normEps))), p[`${prefix}.weight`]) as tf.Tensor2D;
}

function geluTanh(x: tf.Tensor): tf.Tensor {
  const c = Math.sqrt(2 / Math.PI);
  const inner = tf.mul(tf.add(x, tf.mul(tf.pow(x, 3), 0.044715)), c);
  return tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(inner), 1));
}

/** cos and sin [N, 1, D/2] of the RoPE angles, computed in f64. */
function ropeTables(cfg: ModelConfig, positions: Int32Array): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
  const half = cfg.headDim / 2;
  const N = positions.length;
  const cos = new Float32Array(N * half);
  const sin = new Float32Array(N * half);
  for (let n = 0; n < N; n++) {
    for (let i = 0; i < half; i++) {
      const angle = positions[n] * Math.pow(cfg.ropeTheta!, (-2 * i) / cfg.headDim);
      cos[n * half + i] = Math.cos(angle);
      sin[n * half + i] = Math.sin(angle);
    }
  }
  return { cos: tf.tensor3d(cos, [N, 1, half]), sin: tf.tensor3d(sin, [N, 1, half]) };
}

function rope(x: tf.Tensor2D, heads: number, D: number, t: { cos: tf.Tensor3D; sin: tf.Tensor3D }): tf.Tensor2D {
  const N = x.shape[0];
  const [x1, x2] = tf.split(tf.reshape(x, [N, heads, D]), 2, -1);
  const a = tf.sub(tf.mul(x1, t.cos), tf.mul(x2, t.sin));
  const b = tf.add(tf.mul(x2, t.cos), tf.mul(x1, t.sin));
  return tf.reshape(tf.concat([a, b], -1), [N, heads * D]);
}

/** Causal (masked) attention: q [N, Hq·D], k, v [N, Hkv·D] → [N, Hq·D]. */
function attention(cfg: ModelConfig, batch: RefBatch, q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, masks: { add: tf.Tensor; live: tf.Tensor }): tf.Tensor2D {
  const { B, T } = batch;
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = cfg;
  const G = Hq / Hkv;
  const heads = (x: tf.Tensor, H: number) => tf.transpose(tf.reshape(x, [B, T, H, D]), [0, 2, 1, 3]); // [B, H, T, D]
  // Query head h reads kv head floor(h / G): gather along the head axis (differentiable, unlike tfjs' rank-5 tile).
  const kvOf = tf.tensor1d(Array.from({ length: Hq }, (_, h) => Math.floor(h / G)), 'int32');
  const repeat = (x: tf.Tensor) => (G === 1 ? x : tf.gather(x, kvOf, 1));
  const qh = heads(q, Hq);
  const kh = repeat(heads(k, Hkv));
  const vh = repeat(heads(v, Hkv));
  const scores = tf.add(tf.mul(tf.matMul(qh as tf.Tensor4D, kh as tf.Tensor4D, false, true), 1 / Math.sqrt(D)), masks.add);
  const probs = tf.mul(tf.softmax(scores, -1), masks.live);
  const out = tf.matMul(probs as tf.Tensor4D, vh as tf.Tensor4D); // [B, Hq, T, D]
  return tf.reshape(tf.transpose(out, [0, 2, 1, 3]), [B * T, Hq * D]);
}

/** The forward pass on tf tensors (to be called inside tf.tidy / a gradient function). */
export function refForwardTensors(cfg: ModelConfig, p: Tensors, batch: RefBatch, opts: RefOptions = {}): RefOutputs {
  // The second oracle covers the families it was written for; the others are checked against
  // the transformers goldens (test/goldens).
  if (cfg.family !== 'gpt2' && cfg.family !== 'llama') throw new Error(`the tfjs reference model covers gpt2 and llama, not ${cfg.family}`);
  const { B, T } = batch;
  const N = B * T;
  const positions = refPositions(batch);
  const { live, visible } = refMasks(batch);
  const addMask = new Float32Array(visible.length);
  for (let i = 0; i < visible.length; i++) addMask[i] = visible[i] ? 0 : -1e30;
  const masks = { add: tf.tensor4d(addMask, [B, 1, T, T]), live: tf.tensor4d(live, [B, 1, T, 1]) };
  const lora = opts.lora
    ? { scale: opts.lora.config.alpha / opts.lora.config.rank, targets: new Set(loraSpecs(cfg, opts.lora.config).map((s) => s.name.replace(/\.lora_[ab]$/, ''))) }
    : undefined;
  let x = tf.gather(p['tok_emb.weight'] as tf.Tensor2D, tf.tensor1d(batch.tokens, 'int32')) as tf.Tensor2D;
  if (cfg.family === 'gpt2') x = tf.add(x, tf.gather(p['pos_emb.weight'] as tf.Tensor2D, tf.tensor1d(positions, 'int32')));
  const ropeT = cfg.family === 'llama' ? ropeTables(cfg, positions) : undefined;
  const lin = (h: tf.Tensor2D, i: number, t: LoraTarget) => linear(h, p, moduleName(i, t), lora);
  for (let i = 0; i < cfg.nLayer; i++) {
    const h = norm(cfg, x, p, `layers.${i}.attn_norm`);
    let q = lin(h, i, 'q');
    let k = lin(h, i, 'k');
    const v = lin(h, i, 'v');
    if (ropeT) {
      q = rope(q, cfg.nHead, cfg.headDim, ropeT);
      k = rope(k, cfg.nKvHead, cfg.headDim, ropeT);
    }
    x = tf.add(x, lin(attention(cfg, batch, q, k, v, masks), i, 'o'));
    const h2 = norm(cfg, x, p, `layers.${i}.mlp_norm`);
    let act: tf.Tensor2D;
    if (cfg.family === 'gpt2') act = geluTanh(lin(h2, i, 'up')) as tf.Tensor2D;
    else {
      const g = lin(h2, i, 'gate');
      act = tf.mul(tf.mul(g, tf.sigmoid(g)), lin(h2, i, 'up')); // silu(gate) ⊙ up
    }
    x = tf.add(x, lin(act, i, 'down'));
  }
  const hf = norm(cfg, x, p, 'final_norm');
  const head = (cfg.tieEmbeddings ? p['tok_emb.weight'] : p['lm_head.weight']) as tf.Tensor2D;
  const logits = tf.matMul(hf, head, false, true) as tf.Tensor2D;
  if (!opts.valueHead) return { logits };
  const values = tf.reshape(tf.add(tf.matMul(hf, p['value_head.weight'] as tf.Tensor2D, false, true), p['value_head.bias']), [N]) as tf.Tensor1D;
  return { logits, values };
}

/** Token-mean cross-entropy over a mask: Σ mask·(−log softmax(logits)[target]) / Σ mask. */
export function maskedCrossEntropy(logits: tf.Tensor2D, targets: Int32Array, mask: Float32Array): tf.Scalar {
  const V = logits.shape[1];
  const logp = tf.logSoftmax(logits, -1);
  const picked = tf.sum(tf.mul(logp, tf.oneHot(tf.tensor1d(targets, 'int32'), V)), -1);
  let total = 0;
  for (const m of mask) total += m;
  return tf.div(tf.neg(tf.sum(tf.mul(picked, tf.tensor1d(mask)))), total === 0 ? 1 : total) as tf.Scalar;
}

/** The loss mask of a batch: lossMask, or 1 on every live token. */
export function refLossMask(batch: RefBatch): Float32Array {
  return batch.lossMask ?? refMasks(batch).live;
}

function shapesOf(cfg: ModelConfig, opts: RefOptions): Map<string, readonly number[]> {
  const specs = [...parameterSpecs(cfg, { valueHead: opts.valueHead }), ...(opts.lora ? loraSpecs(cfg, opts.lora.config) : [])];
  return new Map(specs.map((s) => [s.name, s.shape]));
}

function toTensors(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, opts: RefOptions): Tensors {
  const all: Record<string, Float32Array> = { ...params, ...(opts.lora?.tensors ?? {}) };
  const out: Tensors = {};
  for (const [name, shape] of shapesOf(cfg, opts)) {
    const data = all[name];
    if (!data) throw new Error(`model_tf: parameter ${name} is missing`);
    out[name] = tf.tensor(data, [...shape]);
  }
  return out;
}

/** Forward only: logits [N·V] and values [N] as plain arrays. */
export function refForward(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, batch: RefBatch, opts: RefOptions = {}): { logits: Float32Array; values?: Float32Array } {
  return tf.tidy(() => {
    const out = refForwardTensors(cfg, toTensors(cfg, params, opts), batch, opts);
    return { logits: out.logits.dataSync() as Float32Array, ...(out.values ? { values: out.values.dataSync() as Float32Array } : {}) };
  });
}

export interface RefGradOptions extends RefOptions {
  /** Which tensors get gradients: every parameter and adapter tensor ('all'), or the adapter (and value head) only. Default 'all'. */
  readonly trainable?: 'all' | 'lora';
  /** Loss from the outputs; default maskedCrossEntropy with batch.targets and refLossMask(batch). */
  readonly loss?: (out: RefOutputs, batch: RefBatch) => tf.Scalar;
}

/** Loss and the gradient of every trainable tensor, by tfjs autograd. */
export function refLossAndGrads(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, batch: RefBatch, opts: RefGradOptions = {}): { loss: number; grads: Record<string, Float32Array> } {
  const lossFn = opts.loss ?? ((out: RefOutputs, b: RefBatch) => {
    if (!b.targets) throw new Error('model_tf: the default loss needs batch.targets');
    return maskedCrossEntropy(out.logits, b.targets, refLossMask(b));
  });
  const names = [...shapesOf(cfg, opts).keys()];
  const trainable = names.filter((n) => opts.trainable !== 'lora' || /\.lora_[ab]$/.test(n) || n.startsWith('value_head.'));
  const { value, grads } = tf.tidy(() => {
    const all = toTensors(cfg, params, opts);
    const r = tf.valueAndGrads((...xs: tf.Tensor[]) => {
      const p: Tensors = { ...all };
      trainable.forEach((n, i) => (p[n] = xs[i]));
      return lossFn(refForwardTensors(cfg, p, batch, opts), batch);
    })(trainable.map((n) => all[n]));
    return { value: r.value, grads: r.grads };
  });
  const out: Record<string, Float32Array> = {};
  trainable.forEach((n, i) => (out[n] = grads[i].dataSync() as Float32Array));
  const loss = value.dataSync()[0];
  tf.dispose([value, ...grads]);
  return { loss, grads: out };
}
