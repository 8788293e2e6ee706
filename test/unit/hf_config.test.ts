import { describe, expect, it } from 'vitest';
import { ModelConfigError } from '../../src/model/errors.ts';
import { configFromHf, configToHf } from '../../src/model/hf_config.ts';
import { countParameters } from '../../src/model/params.ts';
import { PRESETS } from '../../src/model/presets.ts';
import { layerPlan } from '../../src/model/arch.ts';
import { ropeInvFreq } from '../../src/ops/rope.ts';

// The published config.json files (trimmed of keys we ignore only where noted).
const GPT2 = {
  activation_function: 'gelu_new', architectures: ['GPT2LMHeadModel'], attn_pdrop: 0.1, bos_token_id: 50256, embd_pdrop: 0.1,
  eos_token_id: 50256, initializer_range: 0.02, layer_norm_epsilon: 1e-5, model_type: 'gpt2', n_ctx: 1024, n_embd: 768, n_head: 12,
  n_layer: 12, n_positions: 1024, resid_pdrop: 0.1, summary_activation: null, summary_first_dropout: 0.1, summary_proj_to_labels: true,
  summary_type: 'cls_index', summary_use_proj: true, task_specific_params: { 'text-generation': { do_sample: true, max_length: 50 } }, vocab_size: 50257,
};
const QWEN25_05B = {
  architectures: ['Qwen2ForCausalLM'], attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151643, hidden_act: 'silu', hidden_size: 896,
  initializer_range: 0.02, intermediate_size: 4864, max_position_embeddings: 32768, max_window_layers: 24, model_type: 'qwen2',
  num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000.0, sliding_window: 32768,
  tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.40.1', use_cache: true, use_sliding_window: false, vocab_size: 151936,
};
const TINYLLAMA = {
  architectures: ['LlamaForCausalLM'], attention_bias: false, bos_token_id: 1, eos_token_id: 2, hidden_act: 'silu', hidden_size: 2048,
  initializer_range: 0.02, intermediate_size: 5632, max_position_embeddings: 2048, model_type: 'llama', num_attention_heads: 32,
  num_hidden_layers: 22, num_key_value_heads: 4, pretraining_tp: 1, rms_norm_eps: 1e-5, rope_scaling: null, rope_theta: 10000.0,
  tie_word_embeddings: false, torch_dtype: 'bfloat16', transformers_version: '4.35.0', use_cache: true, vocab_size: 32000,
};

// More published config.json files, verbatim (parameter counts from transformers on the meta device).
const LLAMA32_1B = {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3", "rope_theta": 500000.0}, "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256};
const QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936};
const GEMMA3_270M = {"_sliding_window_pattern": 6, "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2, "eos_token_id": 1, "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 640, "initializer_range": 0.02, "intermediate_size": 2048, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"], "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 18, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": 512, "torch_dtype": "bfloat16", "transformers_version": "4.55.0.dev0", "use_bidirectional_attention": false, "use_cache": true, "vocab_size": 262144};
const SMOLLM2_135M = {"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": true, "max_position_embeddings": 8192, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3, "pad_token_id": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 49152};

function fieldOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    expect((e as Error).message).toContain('config.json');
    return (e as ModelConfigError).field;
  }
  throw new Error('expected a ModelConfigError');
}

describe('configFromHf', () => {
  it('gpt2 → the gpt2-small preset (124,439,808 parameters)', () => {
    const c = configFromHf(GPT2);
    expect({ ...c, name: 'gpt2-small' }).toEqual(PRESETS['gpt2-small']);
    expect(countParameters(c)).toBe(124_439_808);
    expect(configFromHf(JSON.stringify(GPT2), { name: 'x' }).name).toBe('x');
  });

  it('qwen2 → q/k/v biases, no o bias, tied, θ = 1e6 (494,032,768 parameters)', () => {
    const c = configFromHf(QWEN25_05B);
    expect({ ...c, name: 'qwen2.5-0.5b' }).toEqual(PRESETS['qwen2.5-0.5b']);
    expect(countParameters(c)).toBe(494_032_768);
  });

  it('llama (TinyLlama-1.1B) → GQA 32/4, untied (1,100,048,384 parameters)', () => {
    const c = configFromHf(TINYLLAMA);
    expect(c).toMatchObject({ family: 'llama', nHead: 32, nKvHead: 4, headDim: 64, qkvBias: false, oBias: false, tieEmbeddings: false, ropeTheta: 10000, normEps: 1e-5 });
    expect(countParameters(c)).toBe(1_100_048_384);
    expect(configFromHf({ ...TINYLLAMA, attention_bias: true })).toMatchObject({ qkvBias: true, oBias: true, mlpBias: false });
    expect(configFromHf({ ...TINYLLAMA, head_dim: 128 }).headDim).toBe(128);
    const { rope_theta: _, ...noTheta } = TINYLLAMA;
    expect((configFromHf({ ...noTheta, rope_parameters: { rope_type: 'default', rope_theta: 5e5 } }) as { ropeTheta: number }).ropeTheta).toBe(5e5);
  });

  it.each([
    ['model_type', { ...TINYLLAMA, model_type: 'mistral' }],
    ['model_type', { ...TINYLLAMA, model_type: undefined }],
    ['hidden_size', { ...TINYLLAMA, hidden_size: undefined }],
    ['num_key_value_heads', { ...QWEN25_05B, num_key_value_heads: 5 }],
    ['rope_scaling.low_freq_factor', { ...TINYLLAMA, rope_scaling: { rope_type: 'llama3', factor: 8 } }],
    ['rope_scaling.rope_type', { ...TINYLLAMA, rope_scaling: { rope_type: 'yarn', factor: 4 } }],
    ['rope_scaling.rope_type', { ...TINYLLAMA, rope_scaling: { type: 'dynamic', factor: 2 } }],
    ['rope_parameters.rope_type', { ...TINYLLAMA, rope_parameters: { rope_type: 'longrope', rope_theta: 1e4 } }],
    ['partial_rotary_factor', { ...TINYLLAMA, partial_rotary_factor: 0.5 }],
    ['rope_interleaved', { ...TINYLLAMA, rope_interleaved: true }],
    ['quantization_config', { ...TINYLLAMA, quantization_config: { quant_method: 'bitsandbytes' } }],
    ['some_new_key', { ...TINYLLAMA, some_new_key: 1 }],
    ['hidden_act', { ...TINYLLAMA, hidden_act: 'gelu' }],
    ['sliding_window', { ...QWEN25_05B, use_sliding_window: true, max_window_layers: 20, sliding_window: null }],
    ['activation_function', { ...GPT2, activation_function: 'relu' }],
    ['n_head', { ...GPT2, n_head: 7 }],
    ['scale_attn_by_inverse_layer_idx', { ...GPT2, scale_attn_by_inverse_layer_idx: true }],
    ['vocab_size', { ...GPT2, vocab_size: '50257' }],
    ['config', '{"model_type": "gpt2", "__proto__": {"n_embd": 1}}'],
    ['config', '[1, 2]'],
  ])('names %s', (field, input) => {
    expect(fieldOf(() => configFromHf(input))).toBe(field);
  });
});

describe('configToHf', () => {
  it('round-trips every preset through config.json', () => {
    for (const c of Object.values(PRESETS)) expect(configFromHf(configToHf(c), { name: c.name })).toEqual(c);
  });
  it('writes qwen2 for q/k/v-bias-only llama configs and llama otherwise', () => {
    expect(configToHf(PRESETS['qwen2.5-0.5b']).model_type).toBe('qwen2');
    expect(configToHf(PRESETS['llama-1m'])).toMatchObject({ model_type: 'llama', attention_bias: false, num_key_value_heads: 2 });
    expect(() => configToHf({ ...PRESETS['llama-1m'], qkvBias: true, oBias: false, mlpBias: true })).toThrow(ModelConfigError);
  });
});

describe('configFromHf: the published families', () => {
  it.each([
    ['SmolLM2-135M-Instruct', SMOLLM2_135M, 'llama', 134_515_008],
    ['Llama-3.2-1B-Instruct', LLAMA32_1B, 'llama', 1_235_814_400],
    ['Qwen3-0.6B', QWEN3_06B, 'qwen3', 596_049_920],
    ['Gemma-3-270M-it', GEMMA3_270M, 'gemma3', 268_098_176],
  ])('%s loads as family %s with the parameter count transformers reports', (_n, json, family, params) => {
    const c = configFromHf(json);
    expect(c.family).toBe(family);
    expect(countParameters(c)).toBe(params);
  });

  it('Llama 3.2: the llama3 RoPE rule gives the frequencies transformers computes (17 of 32 differ from plain RoPE)', () => {
    const c = configFromHf(LLAMA32_1B);
    expect(c.rope).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 8192 });
    // _compute_llama3_parameters of transformers 5.18, as float32.
    const hf = [1.0, 0.663601279258728, 0.44036662578582764, 0.2922278344631195, 0.193922758102417, 0.12868738174438477, 0.08539710193872452,
      0.05666961893439293, 0.03760603070259094, 0.02495540864765644, 0.016560440883040428, 0.010989529080688953, 0.00729266507551074,
      0.00483942124992609, 0.0032114461064338684, 0.0012905480107292533, 0.000429556705057621, 9.708286233944818e-05, 1.9461638657958247e-05,
      1.291476746700937e-05, 8.570255886297673e-06, 5.687232260243036e-06, 3.7740544485131977e-06, 2.504467147446121e-06,
      1.6619674170215148e-06, 1.1028836297555245e-06, 7.318749339901842e-07, 4.856731266045244e-07, 3.2229328894572973e-07,
      2.1387423032592778e-07, 1.4192720243499934e-07, 9.418306490260875e-08];
    const ours = layerPlan(c)[0].invFreq!;
    let worst = 0;
    ours.forEach((v, i) => worst = Math.max(worst, Math.abs(v - hf[i]) / hf[i]));
    expect(worst).toBeLessThan(1e-6);
    const plain = ropeInvFreq(64, 5e5);
    expect(hf.filter((v, i) => Math.fround(v) !== plain[i]).length).toBe(17);
  });

  it('Qwen3: q/k norms, head_dim 128 with hidden ≠ heads·head_dim', () => {
    const c = configFromHf(QWEN3_06B);
    expect(c).toMatchObject({ headDim: 128, nHead: 16, nKvHead: 8, dModel: 1024, ropeTheta: 1e6, tieEmbeddings: true, qkvBias: false });
    expect(c.layerTypes).toBeUndefined();
  });

  it('Gemma 3: sliding layers (window 512, local base 1e4), query_pre_attn_scalar, tied, (1 + w) norms from the record', () => {
    const c = configFromHf(GEMMA3_270M);
    expect(c).toMatchObject({ headDim: 256, slidingWindow: 512, ropeTheta: 1e6, ropeLocalTheta: 1e4, attnScale: 1 / 16, tieEmbeddings: true });
    expect(c.layerTypes!.filter((t) => t === 'full').length).toBe(3);
    const plan = layerPlan(c);
    expect(plan[0].window).toBe(512);
    expect(plan[5].window).toBeUndefined();
    expect(plan[0].invFreq).toEqual(ropeInvFreq(256, 1e4));
    expect(plan[5].invFreq).toEqual(ropeInvFreq(256, 1e6));
    // the v5 layout of the same settings, and the pattern instead of the list
    const { rope_theta: _t, rope_local_base_freq: _l, rope_scaling: _s, layer_types: _lt, ...rest } = GEMMA3_270M;
    const v5 = configFromHf({ ...rest, rope_parameters: { sliding_attention: { rope_type: 'default', rope_theta: 1e4 }, full_attention: { rope_type: 'default', rope_theta: 1e6 } } });
    expect(v5).toEqual({ ...c });
    for (const [key, v] of [['final_logit_softcapping', 30], ['attn_logit_softcapping', 50], ['use_bidirectional_attention', true], ['hidden_activation', 'gelu']] as const) {
      expect(fieldOf(() => configFromHf({ ...GEMMA3_270M, [key]: v }))).toBe(key);
    }
    expect(fieldOf(() => configFromHf({ ...GEMMA3_270M, model_type: 'gemma3' }))).toBe('model_type');
  });

  it('round-trips every family through configToHf', () => {
    for (const json of [SMOLLM2_135M, LLAMA32_1B, QWEN3_06B, GEMMA3_270M, QWEN25_05B, GPT2]) {
      const c = configFromHf(json);
      expect(configFromHf(configToHf(c), { name: c.name })).toEqual(c);
    }
  });
});
