/**
 * The canonical parameters of a model: names, shapes and order. Every other module (weights I/O,
 * init, the GPU engine, the tfjs reference) speaks these names.
 *
 * Legend: V vocab, L layers, C dModel, Hq/Hkv heads, D headDim, F dFF, P maxSeqLen, R LoRA rank.
 * All tensors are f32, row-major. Linear weights are [out, in] (y = x·Wᵀ + b) for both families,
 * so GPT-2's Conv1D weights ([in, out]) are transposed on load, and its fused c_attn is split into
 * q, k, v. Head h of q/k/v occupies output rows h·D .. h·D+D−1 (Hugging Face's order).
 *
 *   tok_emb.weight                 [V, C]
 *   pos_emb.weight                 [P, C]        gpt2 only
 *   layers.{i}.attn_norm.weight    [C]           (LayerNorm γ, or an RMSNorm weight)
 *   layers.{i}.attn_norm.bias      [C]           LayerNorm families only (β)
 *   layers.{i}.attn.q_norm.weight  [D]           qkNorm families (Qwen3, Gemma 3): per-head RMSNorm
 *   layers.{i}.attn.k_norm.weight  [D]
 *   layers.{i}.attn.q.weight       [Hq·D, C]     .bias [Hq·D]  when qkvBias
 *   layers.{i}.attn.k.weight       [Hkv·D, C]    .bias [Hkv·D] when qkvBias
 *   layers.{i}.attn.v.weight       [Hkv·D, C]    .bias [Hkv·D] when qkvBias
 *   layers.{i}.attn.o.weight       [C, Hq·D]     .bias [C]     when oBias
 *   layers.{i}.attn_post_norm.weight [C]         sandwich families (Gemma 3)
 *   layers.{i}.mlp_norm.weight     [C]           .bias [C] LayerNorm families
 *   layers.{i}.mlp.gate.weight     [F, C]        gated MLPs;   .bias [F] when mlpBias
 *   layers.{i}.mlp.up.weight       [F, C]        .bias [F]     when mlpBias
 *   layers.{i}.mlp.down.weight     [C, F]        .bias [C]     when mlpBias
 *   layers.{i}.mlp_post_norm.weight [C]          sandwich families
 *   final_norm.weight              [C]           .bias [C] LayerNorm families
 *   lm_head.weight                 [V, C]        only when not tieEmbeddings
 *   value_head.weight              [1, C]        optional (PPO critic on the final-norm output)
 *   value_head.bias                [1]           optional
 * LoRA, per target module M (e.g. layers.{i}.attn.q): M.lora_a [R, in], M.lora_b [out, R].
 */
import { archOf, blockLinearsOf } from './arch.ts';
import { type LoraConfig, type LoraTarget, type ModelConfig, loraTargetDims } from './config.ts';
import { numel } from '../gpu/tensor.ts';

export type ParamKind = 'embedding' | 'linear' | 'bias' | 'norm' | 'norm-bias' | 'lora-a' | 'lora-b';

export interface ParamSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly kind: ParamKind;
  /** Block index, for per-layer parameters. */
  readonly layer?: number;
  /** Output projection into the residual stream (attn.o, mlp.down): GPT-2 scales its init. */
  readonly residualProj?: boolean;
}

export interface ParamOptions {
  /** Add value_head.weight [1, C] and value_head.bias [1]. */
  readonly valueHead?: boolean;
}

/** Canonical module path of a LoRA-capable linear layer, e.g. `layers.3.attn.q`, `layers.0.mlp.down`. */
export function moduleName(layer: number, target: LoraTarget): string {
  const group = target === 'q' || target === 'k' || target === 'v' || target === 'o' ? 'attn' : 'mlp';
  return `layers.${layer}.${group}.${target}`;
}

/** The linear modules of one block, in order. */
export function blockLinears(cfg: ModelConfig): LoraTarget[] {
  return blockLinearsOf(archOf(cfg));
}

function hasBias(cfg: ModelConfig, t: LoraTarget): boolean {
  if (t === 'q' || t === 'k' || t === 'v') return cfg.qkvBias;
  if (t === 'o') return cfg.oBias;
  return cfg.mlpBias;
}

/** Every canonical parameter of `cfg`, in the fixed order used for init, checkpoints and gradients. */
export function parameterSpecs(cfg: ModelConfig, opts: ParamOptions = {}): ParamSpec[] {
  const { vocabSize: V, dModel: C, maxSeqLen: P } = cfg;
  const arch = archOf(cfg);
  const layerNorm = arch.norm === 'layernorm';
  const specs: ParamSpec[] = [{ name: 'tok_emb.weight', shape: [V, C], kind: 'embedding' }];
  if (arch.positions === 'learned') specs.push({ name: 'pos_emb.weight', shape: [P, C], kind: 'embedding' });
  const norm = (prefix: string, layer?: number, width = C) => {
    specs.push({ name: `${prefix}.weight`, shape: [width], kind: 'norm', layer });
    if (layerNorm) specs.push({ name: `${prefix}.bias`, shape: [width], kind: 'norm-bias', layer });
  };
  // The order is the checkpoints' and the init's: existing families keep theirs exactly.
  const firstMlp: LoraTarget = arch.mlp === 'gelu' ? 'up' : 'gate';
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of blockLinears(cfg)) {
      if (t === 'q') norm(`layers.${i}.attn_norm`, i);
      if (t === 'o' && arch.qkNorm) {
        norm(`layers.${i}.attn.q_norm`, i, cfg.headDim);
        norm(`layers.${i}.attn.k_norm`, i, cfg.headDim);
      }
      if (t === firstMlp) {
        if (arch.sandwichNorms) norm(`layers.${i}.attn_post_norm`, i);
        norm(`layers.${i}.mlp_norm`, i);
      }
      const [out, inp] = loraTargetDims(cfg, t);
      const m = moduleName(i, t);
      const residualProj = t === 'o' || t === 'down';
      specs.push({ name: `${m}.weight`, shape: [out, inp], kind: 'linear', layer: i, ...(residualProj ? { residualProj } : {}) });
      if (hasBias(cfg, t)) specs.push({ name: `${m}.bias`, shape: [out], kind: 'bias', layer: i });
    }
    if (arch.sandwichNorms) norm(`layers.${i}.mlp_post_norm`, i);
  }
  norm('final_norm');
  if (!cfg.tieEmbeddings) specs.push({ name: 'lm_head.weight', shape: [V, C], kind: 'linear' });
  if (opts.valueHead) {
    specs.push({ name: 'value_head.weight', shape: [1, C], kind: 'linear' });
    specs.push({ name: 'value_head.bias', shape: [1], kind: 'bias' });
  }
  return specs;
}

/** The adapter's parameters: for each layer and target (canonical order), lora_a then lora_b. */
export function loraSpecs(cfg: ModelConfig, lora: LoraConfig): ParamSpec[] {
  const specs: ParamSpec[] = [];
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of blockLinears(cfg)) {
      if (!lora.targets.includes(t)) continue;
      const [out, inp] = loraTargetDims(cfg, t);
      const m = moduleName(i, t);
      specs.push({ name: `${m}.lora_a`, shape: [lora.rank, inp], kind: 'lora-a', layer: i });
      specs.push({ name: `${m}.lora_b`, shape: [out, lora.rank], kind: 'lora-b', layer: i });
    }
  }
  return specs;
}

// numel (elements of a shape) is the GPU layer's; re-exported for the model code that counts parameters.
export { numel };

/** Exact parameter count (tied embeddings counted once). GPT-2 small: 124,439,808. */
export function countParameters(cfg: ModelConfig, opts: ParamOptions = {}): number {
  return parameterSpecs(cfg, opts).reduce((s, p) => s + numel(p.shape), 0);
}

/** Exact adapter parameter count: Σ over targets and layers of R·(in + out). */
export function countLoraParameters(cfg: ModelConfig, lora: LoraConfig): number {
  return loraSpecs(cfg, lora).reduce((s, p) => s + numel(p.shape), 0);
}
