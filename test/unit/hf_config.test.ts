import { describe, expect, it } from 'vitest';
import { ModelConfigError } from '../../src/model/errors.ts';
import { configFromHf, configToHf } from '../../src/model/hf_config.ts';
import { countParameters } from '../../src/model/params.ts';
import { PRESETS } from '../../src/model/presets.ts';

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
    ['rope_scaling', { ...TINYLLAMA, rope_scaling: { rope_type: 'llama3', factor: 8 } }],
    ['hidden_act', { ...TINYLLAMA, hidden_act: 'gelu' }],
    ['use_sliding_window', { ...QWEN25_05B, use_sliding_window: true }],
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
