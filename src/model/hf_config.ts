/**
 * Hugging Face `config.json` ↔ ModelConfig, for model_type gpt2, llama (SmolLM2, Llama 3.x),
 * qwen2 (Qwen2/2.5), qwen3 and gemma3_text (Gemma 3 270M/1B).
 *
 * Every key of these families' configs is either read, or known to leave the model's math alone
 * (metadata, token ids, generation flags), or refused by name with what is supported
 * (ModelConfigError) — a key nobody here knows is refused too, rather than loaded wrong. Dropout
 * rates are read and not applied: webtinker trains without dropout, as RL fine-tuning does.
 *
 * Defaults follow transformers' config classes where a key is absent (GPT2Config: n_inner = 4C,
 * layer_norm_epsilon 1e-5, tied; Llama/Qwen2/Qwen3: num_key_value_heads = heads, head_dim =
 * hidden/heads (Qwen3: 128), rope_theta 1e4, rms_norm_eps 1e-6, untied; Gemma3TextConfig:
 * head_dim 256, query_pre_attn_scalar 256, sliding_window 4096, rope_local_base_freq 1e4, tied).
 *
 * RoPE is read as transformers reads it: `rope_parameters` (v5; per layer type for Gemma 3) before
 * `rope_theta` + `rope_scaling` (v4; Gemma 3's `rope_local_base_freq` for sliding layers). Rope
 * types default, linear and llama3 are implemented; dynamic, yarn, longrope and proportional are
 * refused by name, as is a partial_rotary_factor below 1. Sliding layers come from `layer_types`,
 * else Gemma's `sliding_window_pattern`, else Qwen's `use_sliding_window`/`max_window_layers`.
 */
import { ARCHS } from './arch.ts';
import { type LayerType, type ModelConfig, type ModelFamily, type RopeScaling, validateConfig } from './config.ts';
import { ModelConfigError } from './errors.ts';
import { isJsonObject, parseUntrustedJson, UntrustedJsonError } from './json.ts';

export const HF_MODEL_TYPES = ['gpt2', 'llama', 'qwen2', 'qwen3', 'gemma3_text'] as const;
type HfModelType = (typeof HF_MODEL_TYPES)[number];

const FAMILY: Record<HfModelType, ModelFamily> = { gpt2: 'gpt2', llama: 'llama', qwen2: 'llama', qwen3: 'qwen3', gemma3_text: 'gemma3' };

export interface HfConfigOptions {
  /** Name for the config (default: `_name_or_path`, else the model_type). */
  readonly name?: string;
  /** Shown in errors (default 'config.json'). */
  readonly file?: string;
}

/**
 * Keys that do not change the model's math: metadata, token ids, generation and output flags,
 * dropout rates (not applied), GPT-2's sequence-summary head (not part of the LM), tensor-parallel
 * slicing (`pretraining_tp`: the same products, split), caches.
 */
const NEUTRAL_KEYS = new Set([
  '_name_or_path', 'architectures', 'model_type', 'transformers_version', 'dtype', 'torch_dtype', 'bos_token_id', 'eos_token_id',
  'pad_token_id', 'sep_token_id', 'decoder_start_token_id', 'use_cache', 'initializer_range', 'id2label', 'label2id', 'output_attentions',
  'output_hidden_states', 'return_dict', 'problem_type', 'is_encoder_decoder', 'chunk_size_feed_forward', 'add_cross_attention',
  'tie_encoder_decoder', 'is_decoder', 'tokenizer_class', 'task_specific_params', 'transformers.js_config', 'is_llama_config',
  'cache_implementation', 'unsloth_version', 'attention_dropout', 'attn_pdrop', 'embd_pdrop', 'resid_pdrop', 'summary_activation',
  'summary_first_dropout', 'summary_proj_to_labels', 'summary_type', 'summary_use_proj', 'reorder_and_upcast_attn', 'pretraining_tp',
  'max_window_layers', 'use_return_dict', 'torchscript', 'pruned_heads', 'finetuning_task', 'prefix', 'num_labels', 'tf_legacy_loss',
  'use_bfloat16', 'bad_words_ids', 'begin_suppress_tokens', 'forced_bos_token_id', 'forced_eos_token_id', 'max_length', 'min_length',
  'do_sample', 'num_beams', 'temperature', 'top_k', 'top_p', 'repetition_penalty', 'length_penalty', 'no_repeat_ngram_size',
  'early_stopping', 'num_return_sequences', 'output_scores', 'return_dict_in_generate', 'remove_invalid_values', 'typical_p',
  'diversity_penalty', 'encoder_no_repeat_ngram_size', 'exponential_decay_length_penalty', 'num_beam_groups', 'suppress_tokens',
  'cross_attention_hidden_size', 'architectures_extra', 'use_sliding_window', 'sliding_window', 'sliding_window_pattern',
  '_sliding_window_pattern', 'layer_types',
]);

class Reader {
  readonly used = new Set<string>();
  constructor(readonly json: Record<string, unknown>, readonly file: string, readonly where = '') {}

  fail(key: string, message: string): never {
    throw new ModelConfigError(`${this.where}${key}`, `${this.file}: ${this.where}${key} ${message}`);
  }

  has(key: string): boolean {
    this.used.add(key);
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  int(key: string, fallback?: number): number {
    const v = this.has(key) ? this.json[key] : fallback;
    if (v === undefined) this.fail(key, 'is missing');
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) this.fail(key, `must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  }

  num(key: string, fallback?: number): number {
    const v = this.has(key) ? this.json[key] : fallback;
    if (v === undefined) this.fail(key, 'is missing');
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.fail(key, `must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.has(key) ? this.json[key] : fallback;
    if (typeof v !== 'boolean') this.fail(key, `must be a boolean, got ${JSON.stringify(v)}`);
    return v;
  }

  str(key: string, fallback: string): string {
    const v = this.has(key) ? this.json[key] : fallback;
    if (typeof v !== 'string') this.fail(key, `must be a string, got ${JSON.stringify(v)}`);
    return v;
  }

  /** Refuses `key` unless it is absent, null, or `ok`. */
  only(key: string, ok: unknown, what: string): void {
    if (this.has(key) && this.json[key] !== ok) this.fail(key, `${JSON.stringify(this.json[key])} is not supported (${what})`);
  }

  /** After reading: every key read, neutral, or refused by name. */
  rest(neutral: ReadonlySet<string>): void {
    for (const key of Object.keys(this.json)) {
      if (this.used.has(key) || neutral.has(key)) continue;
      this.fail(key, 'is not a setting webtinker knows; it may change the model, so the config is refused rather than loaded wrong');
    }
  }
}

function gpt2FromHf(r: Reader, name: string): Record<string, unknown> {
  const act = r.str('activation_function', 'gelu_new');
  if (act !== 'gelu_new' && act !== 'gelu_pytorch_tanh') r.fail('activation_function', `"${act}" is not supported (GPT-2 uses the tanh GELU, "gelu_new")`);
  if (r.bool('scale_attn_by_inverse_layer_idx', false)) r.fail('scale_attn_by_inverse_layer_idx', 'true is not supported');
  if (!r.bool('scale_attn_weights', true)) r.fail('scale_attn_weights', 'false is not supported (attention is scaled by 1/sqrt(D))');
  const C = r.int('n_embd');
  const H = r.int('n_head');
  if (C % H !== 0) r.fail('n_head', `must divide n_embd (${C}), got ${H}`);
  return {
    family: 'gpt2', name, vocabSize: r.int('vocab_size'), nLayer: r.int('n_layer'), dModel: C, nHead: H, nKvHead: H, headDim: C / H,
    dFF: r.int('n_inner', 4 * C), maxSeqLen: r.int('n_positions', r.has('n_ctx') ? r.int('n_ctx') : 1024),
    normEps: r.num('layer_norm_epsilon', 1e-5), tieEmbeddings: r.bool('tie_word_embeddings', true),
    qkvBias: true, oBias: true, mlpBias: true,
  };
}

/** One rope_parameters / rope_scaling object: its θ (when it has one) and scaling rule. */
function ropeEntry(r: Reader, obj: unknown, key: string, maxPositions: number): { theta?: number; scaling?: RopeScaling } {
  if (!isJsonObject(obj)) r.fail(key, `must be an object, got ${JSON.stringify(obj)}`);
  const o = new Reader(obj, r.file, `${r.where}${key}.`);
  const type = o.has('rope_type') ? o.str('rope_type', 'default') : o.str('type', 'default');
  const theta = o.has('rope_theta') ? o.num('rope_theta') : undefined;
  if (o.has('partial_rotary_factor') && o.num('partial_rotary_factor') !== 1) o.fail('partial_rotary_factor', 'below 1 is not supported (RoPE over the whole head only)');
  let scaling: RopeScaling | undefined;
  if (type === 'linear') scaling = { type: 'linear', factor: o.num('factor') };
  else if (type === 'llama3') {
    scaling = {
      type: 'llama3', factor: o.num('factor'), lowFreqFactor: o.num('low_freq_factor'), highFreqFactor: o.num('high_freq_factor'),
      originalMaxPositions: o.int('original_max_position_embeddings', maxPositions),
    };
  } else if (type !== 'default') {
    o.fail('rope_type', `"${type}" is not supported (supported: default, linear, llama3; dynamic, yarn, longrope and proportional are not)`);
  }
  o.rest(new Set(['rope_type', 'type']));
  return { theta, scaling };
}

interface RopeSettings {
  theta: number;
  scaling?: RopeScaling;
  localTheta?: number;
}

function readRope(r: Reader, type: HfModelType, maxPositions: number): RopeSettings {
  if (r.has('partial_rotary_factor') && r.num('partial_rotary_factor') !== 1) r.fail('partial_rotary_factor', 'below 1 is not supported (RoPE over the whole head only)');
  const defaultTheta = type === 'gemma3_text' ? 1e6 : 10000;
  if (r.has('rope_parameters')) {
    // rope_parameters takes priority over the v4 keys, as in transformers v5.
    r.has('rope_theta');
    r.has('rope_scaling');
    const p = r.json.rope_parameters;
    if (isJsonObject(p) && (isJsonObject(p.full_attention) || isJsonObject(p.sliding_attention))) {
      const pr = new Reader(p, r.file, 'rope_parameters.');
      const full = pr.has('full_attention') ? ropeEntry(pr, p.full_attention, 'full_attention', maxPositions) : {};
      const slide = pr.has('sliding_attention') ? ropeEntry(pr, p.sliding_attention, 'sliding_attention', maxPositions) : {};
      pr.rest(new Set());
      if (slide.scaling) r.fail('rope_parameters', 'scaling on sliding_attention layers is not supported');
      return { theta: full.theta ?? defaultTheta, scaling: full.scaling, localTheta: slide.theta };
    }
    const e = ropeEntry(r, p, 'rope_parameters', maxPositions);
    return { theta: e.theta ?? (r.has('rope_theta') ? r.num('rope_theta') : defaultTheta), scaling: e.scaling, localTheta: localThetaV4(r, type) };
  }
  const theta = r.num('rope_theta', defaultTheta);
  const scaling = r.has('rope_scaling') ? ropeEntry(r, r.json.rope_scaling, 'rope_scaling', maxPositions).scaling : undefined;
  return { theta, scaling, localTheta: localThetaV4(r, type) };
}

function localThetaV4(r: Reader, type: HfModelType): number | undefined {
  return type === 'gemma3_text' ? r.num('rope_local_base_freq', 10000) : undefined;
}

/** Per layer 'full' | 'sliding' and the window, or undefined when every layer is full. */
function readLayers(r: Reader, type: HfModelType, L: number): { layerTypes?: LayerType[]; window?: number } {
  let types: LayerType[] | undefined;
  if (r.has('layer_types')) {
    const lt = r.json.layer_types;
    if (!Array.isArray(lt) || lt.length !== L) r.fail('layer_types', `must list num_hidden_layers (${L}) entries, got ${JSON.stringify(lt)}`);
    types = lt.map((t) => {
      if (t === 'full_attention') return 'full';
      if (t === 'sliding_attention') return 'sliding';
      return r.fail('layer_types', `entry ${JSON.stringify(t)} is not supported (full_attention, sliding_attention)`);
    });
  } else if (type === 'gemma3_text') {
    const pattern = r.has('sliding_window_pattern') ? r.int('sliding_window_pattern') : r.int('_sliding_window_pattern', 6);
    types = Array.from({ length: L }, (_, i) => ((i + 1) % pattern ? 'sliding' : 'full'));
  } else if ((type === 'qwen2' || type === 'qwen3') && r.bool('use_sliding_window', false)) {
    const from = r.has('max_window_layers') ? r.int('max_window_layers') : L;
    types = Array.from({ length: L }, (_, i) => (i >= from ? 'sliding' : 'full'));
  }
  if (type === 'qwen2' || type === 'qwen3') r.bool('use_sliding_window', false);
  if (!types?.includes('sliding')) return {};
  const window = r.int('sliding_window', type === 'gemma3_text' ? 4096 : undefined);
  return { layerTypes: types, window };
}

function ropeFamilyFromHf(r: Reader, name: string, type: Exclude<HfModelType, 'gpt2'>): Record<string, unknown> {
  const gemma = type === 'gemma3_text';
  const actKey = gemma ? 'hidden_activation' : 'hidden_act';
  const act = r.str(actKey, gemma ? 'gelu_pytorch_tanh' : 'silu');
  const wantAct = gemma ? 'gelu_pytorch_tanh' : 'silu';
  if (act !== wantAct) r.fail(actKey, `"${act}" is not supported (${gemma ? 'GeGLU with the tanh GELU, "gelu_pytorch_tanh"' : 'SwiGLU with silu'})`);
  if (gemma && r.has('hidden_act') && r.json.hidden_act !== 'gelu_pytorch_tanh') r.fail('hidden_act', `"${String(r.json.hidden_act)}" is not supported (gelu_pytorch_tanh)`);
  r.only('rope_interleaved', false, 'RoPE pairs (d, d + D/2), not interleaved ones');
  if (gemma) {
    r.only('final_logit_softcapping', null, 'no logit soft-capping');
    r.only('attn_logit_softcapping', null, 'no attention soft-capping');
    r.only('use_bidirectional_attention', false, 'causal attention only');
  }
  const L = r.int('num_hidden_layers');
  const C = r.int('hidden_size');
  const H = r.int('num_attention_heads');
  const defaultHeadDim = gemma ? 256 : type === 'qwen3' ? 128 : undefined;
  if (!r.has('head_dim') && defaultHeadDim === undefined && C % H !== 0) r.fail('num_attention_heads', `must divide hidden_size (${C}) when head_dim is absent`);
  const headDim = r.int('head_dim', defaultHeadDim ?? C / H);
  const maxSeqLen = r.int('max_position_embeddings', { llama: 2048, qwen2: 32768, qwen3: 32768, gemma3_text: 131072 }[type]);
  const rope = readRope(r, type, maxSeqLen);
  const layers = readLayers(r, type, L);
  const attnBias = type !== 'qwen2' && r.bool('attention_bias', false);
  const mlpBias = type === 'llama' && r.bool('mlp_bias', false);
  return {
    family: FAMILY[type], name, vocabSize: r.int('vocab_size'), nLayer: L, dModel: C, nHead: H,
    nKvHead: r.int('num_key_value_heads', H), headDim, dFF: r.int('intermediate_size'), maxSeqLen, normEps: r.num('rms_norm_eps', 1e-6),
    ropeTheta: rope.theta, ...(rope.scaling ? { rope: rope.scaling } : {}),
    ...(layers.layerTypes ? { layerTypes: layers.layerTypes, slidingWindow: layers.window, ...(rope.localTheta !== undefined ? { ropeLocalTheta: rope.localTheta } : {}) } : {}),
    ...(gemma ? { attnScale: Math.pow(r.num('query_pre_attn_scalar', 256), -0.5) } : {}),
    tieEmbeddings: r.bool('tie_word_embeddings', gemma),
    qkvBias: type === 'qwen2' ? true : attnBias, oBias: attnBias, mlpBias,
  };
}

const OUR_TO_HF: Record<string, Record<string, string>> = {
  gpt2: { vocabSize: 'vocab_size', nLayer: 'n_layer', dModel: 'n_embd', nHead: 'n_head', dFF: 'n_inner', maxSeqLen: 'n_positions', normEps: 'layer_norm_epsilon' },
  rope: {
    vocabSize: 'vocab_size', nLayer: 'num_hidden_layers', dModel: 'hidden_size', nHead: 'num_attention_heads', nKvHead: 'num_key_value_heads',
    headDim: 'head_dim', dFF: 'intermediate_size', maxSeqLen: 'max_position_embeddings', normEps: 'rms_norm_eps', ropeTheta: 'rope_theta',
    slidingWindow: 'sliding_window', layerTypes: 'layer_types', attnScale: 'query_pre_attn_scalar', ropeLocalTheta: 'rope_local_base_freq',
  },
};

/** Our validation, with the field translated back to the HF key the user can fix. */
function validate(r: Reader, c: Record<string, unknown>): ModelConfig {
  try {
    return validateConfig(c);
  } catch (e) {
    if (!(e instanceof ModelConfigError)) throw e;
    const key = OUR_TO_HF[ARCHS[c.family as ModelFamily].positions === 'learned' ? 'gpt2' : 'rope'][e.field] ?? e.field;
    throw new ModelConfigError(key, `${r.file}: ${key}: ${e.message}`);
  }
}

/**
 * A Hugging Face config.json (parsed object or its text) as our ModelConfig.
 * Unknown or missing model_type, unsupported features and unknown keys throw ModelConfigError naming the key.
 */
export function configFromHf(input: unknown, opts: HfConfigOptions = {}): ModelConfig {
  const file = opts.file ?? 'config.json';
  let json = input;
  if (typeof input === 'string') {
    try {
      json = parseUntrustedJson(input);
    } catch (e) {
      throw new ModelConfigError('config', `${file}: ${(e as UntrustedJsonError).message}`);
    }
  }
  if (!isJsonObject(json)) throw new ModelConfigError('config', `${file}: expected a JSON object`);
  const r = new Reader(json, file);
  const type = json.model_type;
  if (!(HF_MODEL_TYPES as readonly unknown[]).includes(type)) {
    const hint = type === 'gemma3' ? ' (that is the multimodal Gemma 3; its text model is gemma3_text)' : '';
    throw new ModelConfigError('model_type', `${file}: model_type ${JSON.stringify(type)} is not supported${hint} (supported: ${HF_MODEL_TYPES.join(', ')})`);
  }
  const t = type as HfModelType;
  const name = opts.name ?? (typeof json._name_or_path === 'string' && json._name_or_path !== '' ? json._name_or_path : t);
  const c = t === 'gpt2' ? gpt2FromHf(r, name) : ropeFamilyFromHf(r, name, t);
  r.rest(NEUTRAL_KEYS);
  return validate(r, c);
}

/**
 * Our config as a Hugging Face config.json object (for exporting merged weights, or naming the
 * base of a PEFT adapter), in the keys transformers 4.x and 5.x both read. Llama-family configs
 * with q/k/v biases but none on o or the MLP become qwen2; others llama (which ties the q/k/v and
 * o biases together in `attention_bias`).
 */
export function configToHf(cfg: ModelConfig): Record<string, unknown> {
  const arch = ARCHS[cfg.family];
  const hf = arch.hf;
  if (arch.positions === 'learned') {
    return {
      model_type: hf.modelType, architectures: [hf.architecture], vocab_size: cfg.vocabSize, n_embd: cfg.dModel, n_layer: cfg.nLayer,
      n_head: cfg.nHead, n_inner: cfg.dFF, n_positions: cfg.maxSeqLen, n_ctx: cfg.maxSeqLen, layer_norm_epsilon: cfg.normEps,
      activation_function: 'gelu_new', tie_word_embeddings: cfg.tieEmbeddings, torch_dtype: 'float32',
    };
  }
  const alias = hf.qkvBiasOnly && cfg.qkvBias && !cfg.oBias && !cfg.mlpBias ? hf.qkvBiasOnly : null;
  if (!alias && cfg.qkvBias !== cfg.oBias) {
    throw new ModelConfigError('oBias', `a ${hf.modelType} config.json has one attention_bias for q, k, v and o: qkvBias and oBias must agree${hf.qkvBiasOnly ? ` (or qkvBias alone, which is ${hf.qkvBiasOnly.modelType})` : ''}`);
  }
  if (!hf.mlpBiasKey && cfg.mlpBias) throw new ModelConfigError('mlpBias', `${hf.modelType} has no MLP biases`);
  const rope = cfg.rope?.type === 'llama3'
    ? { rope_type: 'llama3', factor: cfg.rope.factor, low_freq_factor: cfg.rope.lowFreqFactor, high_freq_factor: cfg.rope.highFreqFactor, original_max_position_embeddings: cfg.rope.originalMaxPositions }
    : cfg.rope ? { rope_type: 'linear', factor: cfg.rope.factor } : null;
  return {
    model_type: alias?.modelType ?? hf.modelType, architectures: [alias?.architecture ?? hf.architecture],
    vocab_size: cfg.vocabSize, hidden_size: cfg.dModel, num_hidden_layers: cfg.nLayer, num_attention_heads: cfg.nHead,
    num_key_value_heads: cfg.nKvHead, head_dim: cfg.headDim, intermediate_size: cfg.dFF, max_position_embeddings: cfg.maxSeqLen,
    rms_norm_eps: cfg.normEps, rope_theta: cfg.ropeTheta, rope_scaling: rope, tie_word_embeddings: cfg.tieEmbeddings,
    // The MLP's activation key and value follow its kind (GeGLU: Gemma's hidden_activation).
    ...(arch.mlp === 'geglu' ? { hidden_activation: 'gelu_pytorch_tanh' } : { hidden_act: 'silu' }),
    ...(hf.queryPreAttnScalarKey ? { query_pre_attn_scalar: Math.pow(cfg.attnScale ?? 1 / Math.sqrt(cfg.headDim), -2) } : {}),
    ...(cfg.layerTypes ? { layer_types: cfg.layerTypes.map((t) => `${t}_attention`), sliding_window: cfg.slidingWindow } : {}),
    ...(cfg.ropeLocalTheta !== undefined ? { rope_local_base_freq: cfg.ropeLocalTheta } : {}),
    ...(cfg.layerTypes && hf.useSlidingWindowKey ? { use_sliding_window: true } : {}),
    ...(hf.attentionBiasKey && !alias ? { attention_bias: cfg.qkvBias } : {}), ...(hf.mlpBiasKey && !alias ? { mlp_bias: cfg.mlpBias } : {}),
    torch_dtype: 'float32',
  };
}
