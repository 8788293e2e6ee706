/**
 * config.json objects shaped like those of two small pretrained models' Hub repos (every size,
 * the family's keys; versions and ids as there to our knowledge, unused here), for tests and
 * benches that build these shapes with random weights — nothing is downloaded.
 *   SmolLM2-135M   HuggingFaceTB/SmolLM2-135M: llama, C=576, 30 layers, 9 heads over 3 KV heads
 *                  of 64, F=1536, V=49152, tied embedding (134.5M parameters)
 *   Qwen2.5-0.5B   Qwen/Qwen2.5-0.5B: qwen2, C=896, 24 layers, 14 heads over 2 KV heads of 64,
 *                  F=4864, V=151936, q/k/v bias, tied embedding (494.0M parameters)
 */
export const SMOLLM2_135M_CONFIG = {
  architectures: ['LlamaForCausalLM'], attention_bias: false, attention_dropout: 0, bos_token_id: 0, eos_token_id: 0, hidden_act: 'silu',
  hidden_size: 576, initializer_range: 0.041666666666666664, intermediate_size: 1536, is_llama_config: true, max_position_embeddings: 8192,
  mlp_bias: false, model_type: 'llama', num_attention_heads: 9, num_hidden_layers: 30, num_key_value_heads: 3, pretraining_tp: 1,
  rms_norm_eps: 1e-5, rope_interleaved: false, rope_scaling: null, rope_theta: 100000, tie_word_embeddings: true, torch_dtype: 'bfloat16',
  transformers_version: '4.40.1', use_cache: true, vocab_size: 49152,
} as const;

export const QWEN25_05B_CONFIG = {
  architectures: ['Qwen2ForCausalLM'], attention_dropout: 0, bos_token_id: 151643, eos_token_id: 151643, hidden_act: 'silu',
  hidden_size: 896, initializer_range: 0.02, intermediate_size: 4864, max_position_embeddings: 32768, max_window_layers: 24,
  model_type: 'qwen2', num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000,
  sliding_window: 32768, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.40.1', use_cache: true,
  use_sliding_window: false, vocab_size: 151936,
} as const;
