/**
 * Hugging Face `config.json` ↔ ModelConfig, for model_type gpt2, llama and qwen2.
 *
 * Defaults follow transformers' config classes where a key is absent (GPT2Config: n_inner = 4C,
 * layer_norm_epsilon 1e-5, tied; LlamaConfig/Qwen2Config: num_key_value_heads = heads, head_dim =
 * hidden/heads, rope_theta 1e4, rms_norm_eps 1e-6, untied). Anything that changes the math and
 * that we do not implement (rope_scaling, sliding windows, other activations, GPT-2's per-layer
 * attention scaling) is refused with a ModelConfigError naming the key, rather than loaded wrong.
 * Llama's `attention_bias` puts biases on q, k, v and o; Qwen2 always has q/k/v biases and no o bias.
 */
import { type ModelConfig, validateConfig } from './config.ts';
import { ModelConfigError } from './errors.ts';
import { isJsonObject, parseUntrustedJson, UntrustedJsonError } from './json.ts';

export const HF_MODEL_TYPES = ['gpt2', 'llama', 'qwen2'] as const;

export interface HfConfigOptions {
  /** Name for the config (default: `_name_or_path`, else the model_type). */
  readonly name?: string;
  /** Shown in errors (default 'config.json'). */
  readonly file?: string;
}

class Reader {
  constructor(readonly json: Record<string, unknown>, readonly file: string) {}

  fail(key: string, message: string): never {
    throw new ModelConfigError(key, `${this.file}: ${key} ${message}`);
  }

  has(key: string): boolean {
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  int(key: string, fallback?: number): number {
    const v = this.has(key) ? this.json[key] : fallback;
    if (v === undefined) this.fail(key, 'is missing');
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) this.fail(key, `must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  }

  num(key: string, fallback: number): number {
    const v = this.has(key) ? this.json[key] : fallback;
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
}

function gpt2FromHf(r: Reader, name: string): ModelConfig {
  const act = r.str('activation_function', 'gelu_new');
  if (act !== 'gelu_new' && act !== 'gelu_pytorch_tanh') r.fail('activation_function', `"${act}" is not supported (GPT-2 uses the tanh GELU, "gelu_new")`);
  if (r.bool('scale_attn_by_inverse_layer_idx', false)) r.fail('scale_attn_by_inverse_layer_idx', 'true is not supported');
  if (!r.bool('scale_attn_weights', true)) r.fail('scale_attn_weights', 'false is not supported (attention is scaled by 1/sqrt(D))');
  const C = r.int('n_embd');
  const H = r.int('n_head');
  if (C % H !== 0) r.fail('n_head', `must divide n_embd (${C}), got ${H}`);
  return validate(r, {
    family: 'gpt2', name, vocabSize: r.int('vocab_size'), nLayer: r.int('n_layer'), dModel: C, nHead: H, nKvHead: H, headDim: C / H,
    dFF: r.int('n_inner', 4 * C), maxSeqLen: r.int('n_positions', r.has('n_ctx') ? r.int('n_ctx') : 1024),
    normEps: r.num('layer_norm_epsilon', 1e-5), tieEmbeddings: r.bool('tie_word_embeddings', true),
    qkvBias: true, oBias: true, mlpBias: true,
  });
}

function llamaFromHf(r: Reader, name: string, type: 'llama' | 'qwen2'): ModelConfig {
  const act = r.str('hidden_act', 'silu');
  if (act !== 'silu') r.fail('hidden_act', `"${act}" is not supported (SwiGLU with silu)`);
  const scaling = r.json.rope_scaling;
  if (scaling !== undefined && scaling !== null) r.fail('rope_scaling', 'is not supported (plain RoPE only); remove it to run at the base context length');
  let theta = 10000;
  const params = r.json.rope_parameters;
  if (r.has('rope_theta')) theta = r.num('rope_theta', 10000);
  else if (isJsonObject(params)) {
    if (params.rope_type !== undefined && params.rope_type !== 'default') r.fail('rope_parameters', `rope_type ${JSON.stringify(params.rope_type)} is not supported`);
    theta = new Reader(params, r.file).num('rope_theta', 10000);
  }
  if (type === 'qwen2' && r.bool('use_sliding_window', false)) r.fail('use_sliding_window', 'true is not supported');
  const C = r.int('hidden_size');
  const H = r.int('num_attention_heads');
  if (!r.has('head_dim') && C % H !== 0) r.fail('num_attention_heads', `must divide hidden_size (${C}) when head_dim is absent`);
  const attnBias = type === 'llama' && r.bool('attention_bias', false);
  const mlpBias = type === 'llama' && r.bool('mlp_bias', false);
  return validate(r, {
    family: 'llama', name, vocabSize: r.int('vocab_size'), nLayer: r.int('num_hidden_layers'), dModel: C, nHead: H,
    nKvHead: r.int('num_key_value_heads', H), headDim: r.int('head_dim', C / H), dFF: r.int('intermediate_size'),
    maxSeqLen: r.int('max_position_embeddings', type === 'llama' ? 2048 : 32768), normEps: r.num('rms_norm_eps', 1e-6),
    ropeTheta: theta, tieEmbeddings: r.bool('tie_word_embeddings', false),
    qkvBias: type === 'qwen2' ? true : attnBias, oBias: attnBias, mlpBias,
  });
}

const OUR_TO_HF: Record<string, Record<string, string>> = {
  gpt2: { vocabSize: 'vocab_size', nLayer: 'n_layer', dModel: 'n_embd', nHead: 'n_head', dFF: 'n_inner', maxSeqLen: 'n_positions', normEps: 'layer_norm_epsilon' },
  llama: {
    vocabSize: 'vocab_size', nLayer: 'num_hidden_layers', dModel: 'hidden_size', nHead: 'num_attention_heads', nKvHead: 'num_key_value_heads',
    headDim: 'head_dim', dFF: 'intermediate_size', maxSeqLen: 'max_position_embeddings', normEps: 'rms_norm_eps', ropeTheta: 'rope_theta',
  },
};

/** Our validation, with the field translated back to the HF key the user can fix. */
function validate(r: Reader, c: Record<string, unknown>): ModelConfig {
  try {
    return validateConfig(c);
  } catch (e) {
    if (!(e instanceof ModelConfigError)) throw e;
    const key = OUR_TO_HF[c.family as string]?.[e.field] ?? e.field;
    throw new ModelConfigError(key, `${r.file}: ${key}: ${e.message}`);
  }
}

/**
 * A Hugging Face config.json (parsed object or its text) as our ModelConfig.
 * Unknown or missing model_type, and unsupported features, throw ModelConfigError naming the key.
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
  if (type !== 'gpt2' && type !== 'llama' && type !== 'qwen2') {
    throw new ModelConfigError('model_type', `${file}: model_type ${JSON.stringify(type)} is not supported (supported: ${HF_MODEL_TYPES.join(', ')})`);
  }
  const name = opts.name ?? (typeof json._name_or_path === 'string' && json._name_or_path !== '' ? json._name_or_path : type);
  return type === 'gpt2' ? gpt2FromHf(r, name) : llamaFromHf(r, name, type);
}

/**
 * Our config as a Hugging Face config.json object (for exporting merged weights, or naming the
 * base of a PEFT adapter). Llama-family configs with q/k/v biases but none on o or the MLP become
 * qwen2; others llama (which ties the q/k/v and o biases together in `attention_bias`).
 */
export function configToHf(cfg: ModelConfig): Record<string, unknown> {
  if (cfg.family === 'gpt2') {
    return {
      model_type: 'gpt2', architectures: ['GPT2LMHeadModel'], vocab_size: cfg.vocabSize, n_embd: cfg.dModel, n_layer: cfg.nLayer,
      n_head: cfg.nHead, n_inner: cfg.dFF, n_positions: cfg.maxSeqLen, n_ctx: cfg.maxSeqLen, layer_norm_epsilon: cfg.normEps,
      activation_function: 'gelu_new', tie_word_embeddings: cfg.tieEmbeddings, torch_dtype: 'float32',
    };
  }
  const qwen = cfg.qkvBias && !cfg.oBias && !cfg.mlpBias;
  if (!qwen && cfg.qkvBias !== cfg.oBias) {
    throw new ModelConfigError('oBias', 'a llama config.json has one attention_bias for q, k, v and o: qkvBias and oBias must agree (or qkvBias alone, which is qwen2)');
  }
  return {
    model_type: qwen ? 'qwen2' : 'llama', architectures: [qwen ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    vocab_size: cfg.vocabSize, hidden_size: cfg.dModel, num_hidden_layers: cfg.nLayer, num_attention_heads: cfg.nHead,
    num_key_value_heads: cfg.nKvHead, head_dim: cfg.headDim, intermediate_size: cfg.dFF, max_position_embeddings: cfg.maxSeqLen,
    rms_norm_eps: cfg.normEps, rope_theta: cfg.ropeTheta, tie_word_embeddings: cfg.tieEmbeddings, hidden_act: 'silu',
    ...(qwen ? {} : { attention_bias: cfg.qkvBias, mlp_bias: cfg.mlpBias }), torch_dtype: 'float32',
  };
}
