/**
 * Architecture records: a model family is data (nanochat's one `Block.forward`). One record per
 * family says which norm, MLP, positions and extra norms its block uses, and how Hugging Face
 * names its tensors; the block forward and backward (block.ts, backward.ts), the parameter list
 * (params.ts), weight I/O (weight_names.ts), PEFT (peft.ts) and the memory estimate read the
 * record instead of testing the family. Adding a family is a record, its HF config reader
 * (hf_config.ts) and only the kernels it truly lacks.
 *
 * What varies per checkpoint rather than per family (sizes, biases, tied head, RoPE base and
 * scaling, sliding windows, the attention scale) lives in ModelConfig; `layerPlan` turns both into
 * the per-layer settings (window, RoPE frequencies) the block reads.
 *
 * The block, for every family (optional steps in brackets, by the record's flags):
 *   h = norm(x); q, k, v = linear(h); [q, k = qkNorm(q), qkNorm(k) per head]; [rope(q, k)]
 *   a = attention(q, k, v; window, scale); o = linear(a); [o = postNorm(o)]; x = x + o
 *   h = norm(x); m = mlp(h) (gelu: down(gelu(up h)); swiglu/geglu: down(act(gate h)·up h));
 *   [m = postNorm(m)]; x = x + m
 * embeddings: x0 = tok_emb[ids] [· √C] [+ pos_emb[positions]].
 */
import type { LoraTarget, ModelConfig, ModelFamily } from './config.ts';
import { ropeInvFreqFor } from './rope_freq.ts';

/** How Hugging Face names a family's tensors (paths relative to the model prefix and block). */
export interface HfNames {
  /** Prefix of every tensor but lm_head in the published checkpoints (optional on import). */
  readonly prefix: string;
  readonly embed: string;
  /** Learned position table, when `positions` is 'learned'. */
  readonly positions?: string;
  /** Block i lives under `${layers}.${i}`. */
  readonly layers: string;
  readonly finalNorm: string;
  /** Per-block norms, by our name (attn_norm, mlp_norm, attn_post_norm, mlp_post_norm, attn.q_norm, attn.k_norm). */
  readonly norms: Readonly<Record<string, string>>;
  /** Per-block linear modules. Targets that share a module are fused by rows in target order (GPT-2's c_attn). */
  readonly linears: Readonly<Partial<Record<LoraTarget, string>>>;
  /** Linear weights stored [in, out] (GPT-2's Conv1D): transposed on import and export. */
  readonly conv1d: boolean;
  /** Buffers a checkpoint may hold that are not parameters. */
  readonly ignorable: RegExp;
  /** PEFT's target_modules when an adapter_config.json names none (its per-model-type default). */
  readonly peftDefaultTargets: readonly string[];
  /** model_type and architectures of an exported config.json. */
  readonly modelType: string;
  readonly architecture: string;
  /**
   * Writing config.json: the model_type and architecture a config with q/k/v biases only is
   * written as (Qwen2 is the llama record with them), and whether the family's config has
   * `attention_bias` / `mlp_bias` keys and marks sliding layers by `use_sliding_window`
   * (Qwen) rather than by `layer_types` alone (Gemma).
   */
  readonly qkvBiasOnly?: { readonly modelType: string; readonly architecture: string };
  readonly attentionBiasKey: boolean;
  readonly mlpBiasKey: boolean;
  readonly useSlidingWindowKey: boolean;
  /** The config carries the softmax scale as query_pre_attn_scalar (Gemma; read with a default of 256). */
  readonly queryPreAttnScalarKey: boolean;
}

export interface ArchRecord {
  readonly family: ModelFamily;
  /** LayerNorm (weight + bias, mean subtracted) or RMSNorm (weight only). */
  readonly norm: 'layernorm' | 'rmsnorm';
  /** Added to every norm weight as it is applied: Gemma's x·rstd·(1 + w) has 1, others 0. */
  readonly normOffset: 0 | 1;
  /** Learned absolute position table, or RoPE on q and k. */
  readonly positions: 'learned' | 'rope';
  /** 'gelu': down(gelu(up h)); 'swiglu': down(silu(gate h)·up h); 'geglu': down(gelu(gate h)·up h). */
  readonly mlp: 'gelu' | 'swiglu' | 'geglu';
  /** RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3): weights [D]. */
  readonly qkNorm: boolean;
  /** Norms on the attention output and the MLP output before their residual adds (Gemma 3). */
  readonly sandwichNorms: boolean;
  /** Embeddings scaled by √C (Gemma). */
  readonly embedScale: boolean;
  readonly hf: HfNames;
}

const LLAMA_LINEARS = {
  q: 'self_attn.q_proj', k: 'self_attn.k_proj', v: 'self_attn.v_proj', o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj', up: 'mlp.up_proj', down: 'mlp.down_proj',
} as const;

const ROTARY_BUFFER = /^(model\.)?layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

export const ARCHS: Readonly<Record<ModelFamily, ArchRecord>> = Object.freeze({
  gpt2: {
    family: 'gpt2', norm: 'layernorm', normOffset: 0, positions: 'learned', mlp: 'gelu', qkNorm: false, sandwichNorms: false, embedScale: false,
    hf: {
      prefix: 'transformer.', embed: 'wte', positions: 'wpe', layers: 'h', finalNorm: 'ln_f',
      norms: { attn_norm: 'ln_1', mlp_norm: 'ln_2' },
      linears: { q: 'attn.c_attn', k: 'attn.c_attn', v: 'attn.c_attn', o: 'attn.c_proj', up: 'mlp.c_fc', down: 'mlp.c_proj' },
      conv1d: true, ignorable: /^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$/, peftDefaultTargets: ['c_attn'],
      modelType: 'gpt2', architecture: 'GPT2LMHeadModel', attentionBiasKey: false, mlpBiasKey: false, useSlidingWindowKey: false, queryPreAttnScalarKey: false,
    },
  },
  // Llama 2/3.x, SmolLM2 and Qwen2/2.5 (Qwen2 is this record with q/k/v biases).
  llama: {
    family: 'llama', norm: 'rmsnorm', normOffset: 0, positions: 'rope', mlp: 'swiglu', qkNorm: false, sandwichNorms: false, embedScale: false,
    hf: {
      prefix: 'model.', embed: 'embed_tokens', layers: 'layers', finalNorm: 'norm',
      norms: { attn_norm: 'input_layernorm', mlp_norm: 'post_attention_layernorm' },
      linears: LLAMA_LINEARS, conv1d: false, ignorable: ROTARY_BUFFER, peftDefaultTargets: ['q_proj', 'v_proj'],
      modelType: 'llama', architecture: 'LlamaForCausalLM', qkvBiasOnly: { modelType: 'qwen2', architecture: 'Qwen2ForCausalLM' },
      attentionBiasKey: true, mlpBiasKey: true, useSlidingWindowKey: true, queryPreAttnScalarKey: false,
    },
  },
  qwen3: {
    family: 'qwen3', norm: 'rmsnorm', normOffset: 0, positions: 'rope', mlp: 'swiglu', qkNorm: true, sandwichNorms: false, embedScale: false,
    hf: {
      prefix: 'model.', embed: 'embed_tokens', layers: 'layers', finalNorm: 'norm',
      norms: { attn_norm: 'input_layernorm', 'attn.q_norm': 'self_attn.q_norm', 'attn.k_norm': 'self_attn.k_norm', mlp_norm: 'post_attention_layernorm' },
      linears: LLAMA_LINEARS, conv1d: false, ignorable: ROTARY_BUFFER, peftDefaultTargets: ['q_proj', 'v_proj'],
      modelType: 'qwen3', architecture: 'Qwen3ForCausalLM', attentionBiasKey: true, mlpBiasKey: false, useSlidingWindowKey: true, queryPreAttnScalarKey: false,
    },
  },
  // Gemma 3 text (gemma3_text: 270M, 1B): note that HF's post_attention_layernorm is the norm on
  // the attention OUTPUT here, where Llama's of the same name is the MLP's input norm.
  gemma3: {
    family: 'gemma3', norm: 'rmsnorm', normOffset: 1, positions: 'rope', mlp: 'geglu', qkNorm: true, sandwichNorms: true, embedScale: true,
    hf: {
      prefix: 'model.', embed: 'embed_tokens', layers: 'layers', finalNorm: 'norm',
      norms: {
        attn_norm: 'input_layernorm', 'attn.q_norm': 'self_attn.q_norm', 'attn.k_norm': 'self_attn.k_norm',
        attn_post_norm: 'post_attention_layernorm', mlp_norm: 'pre_feedforward_layernorm', mlp_post_norm: 'post_feedforward_layernorm',
      },
      linears: LLAMA_LINEARS, conv1d: false, ignorable: ROTARY_BUFFER, peftDefaultTargets: ['q_proj', 'v_proj'],
      modelType: 'gemma3_text', architecture: 'Gemma3ForCausalLM', attentionBiasKey: true, mlpBiasKey: false, useSlidingWindowKey: false, queryPreAttnScalarKey: true,
    },
  },
});

export const MODEL_FAMILIES = Object.keys(ARCHS) as ModelFamily[];

/** The record of cfg's family. */
export function archOf(cfg: Pick<ModelConfig, 'family'>): ArchRecord {
  const a = ARCHS[cfg.family];
  if (!a) throw new Error(`no architecture record for family ${JSON.stringify(cfg.family)}`);
  return a;
}

/** The linear modules of one block, in canonical order. */
export function blockLinearsOf(arch: ArchRecord): LoraTarget[] {
  return arch.mlp === 'gelu' ? ['q', 'k', 'v', 'o', 'up', 'down'] : ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];
}

/** Per-layer settings the block reads. */
export interface LayerSettings {
  /** Keys a query sees, itself included (HF's sliding_window), or undefined: all earlier keys. */
  readonly window: number | undefined;
  /** RoPE inverse frequencies [D/2] (rope families), as transformers computes them in f32. */
  readonly invFreq: Float32Array | null;
}

/** Softmax scale of attention: cfg.attnScale, else 1/√D. */
export function attentionScale(cfg: ModelConfig): number {
  return cfg.attnScale ?? 1 / Math.sqrt(cfg.headDim);
}

const planCache = new WeakMap<ModelConfig, readonly LayerSettings[]>();

/**
 * The settings of every layer: sliding layers (cfg.layerTypes) get cfg.slidingWindow and, where
 * given, their own RoPE base (cfg.ropeLocalTheta, unscaled as in transformers' Gemma 3); full
 * layers the global base with cfg.rope's scaling.
 */
export function layerPlan(cfg: ModelConfig): readonly LayerSettings[] {
  let plan = planCache.get(cfg);
  if (plan) return plan;
  const arch = archOf(cfg);
  const global = arch.positions === 'rope' ? ropeInvFreqFor(cfg.headDim, cfg.ropeTheta ?? 10000, cfg.rope) : null;
  const local = arch.positions === 'rope' && cfg.ropeLocalTheta !== undefined ? ropeInvFreqFor(cfg.headDim, cfg.ropeLocalTheta, undefined) : global;
  plan = Object.freeze(Array.from({ length: cfg.nLayer }, (_, l) => {
    const sliding = cfg.layerTypes?.[l] === 'sliding';
    return Object.freeze({ window: sliding ? cfg.slidingWindow : undefined, invFreq: sliding ? local : global });
  }));
  planCache.set(cfg, plan);
  return plan;
}
