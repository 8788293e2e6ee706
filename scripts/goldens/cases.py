"""
The tiny twins: each case's config.json in the layout of the published checkpoint's config.json
(every key it has, the v4 layout users download from the Hub), with only the sizes shrunk and
the special-token ids moved into the small vocabulary. Comments name the published value of every
key that was changed.

Sizes: hidden 64..72, 2 layers, intermediate ~2.7x, max_position_embeddings small, vocabularies
of 301..389 (most not a multiple of 4 or 64). Head counts keep the published GQA ratio where they
can; head_dim keeps the published relation to hidden (equal to hidden/heads, or explicitly
different from it for Qwen3 and Gemma 3).
"""

# openai-community/gpt2 (f32 weights: no torch_dtype key in its config.json).
GPT2 = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1,
    "bos_token_id": 330,  # 50256: the last id
    "embd_pdrop": 0.1,
    "eos_token_id": 330,  # 50256
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_ctx": 32,  # 1024
    "n_embd": 64,  # 768
    "n_head": 4,  # 12 (head dim 64 -> 16)
    "n_layer": 2,  # 12
    "n_positions": 32,  # 1024
    "resid_pdrop": 0.1,
    "summary_activation": None,
    "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    "vocab_size": 331,  # 50257
}

# HuggingFaceTB/SmolLM2-135M-Instruct (llama, GQA 9/3, head_dim 64 = 576/9, tied, bf16).
SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "head_dim": 8,  # 64 (= hidden / heads, kept)
    "hidden_act": "silu",
    "hidden_size": 72,  # 576
    "initializer_range": 0.041666666666666664,
    "intermediate_size": 192,  # 1536 (2.67x, kept)
    "is_llama_config": True,
    "max_position_embeddings": 64,  # 8192
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 9,
    "num_hidden_layers": 2,  # 30
    "num_key_value_heads": 3,
    "pad_token_id": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_interleaved": False,
    "rope_scaling": None,
    "rope_theta": 100000,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers.js_config": {"kv_cache_dtype": {"q4f16": "float16", "fp16": "float16"}},
    "transformers_version": "4.42.3",
    "use_cache": True,
    "vocab_size": 320,  # 49152 (a multiple of 64 in both)
}

# meta-llama/Llama-3.2-1B-Instruct (llama3 RoPE scaling, GQA 32/8, tied, bf16).
# original_max_position_embeddings 8192 -> 64 so that at head_dim 16 and theta 5e5 the three
# bands of the llama3 rule all occur: wavelength 2*pi*theta^(2i/D) < 64/4 kept (i = 0),
# in [16, 64] smoothed (i = 1), > 64 divided by the factor 32 (i = 2..7); make_goldens checks it.
LLAMA32 = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 288,  # 128000
    "eos_token_id": [289, 296, 297],  # [128001, 128008, 128009]
    "head_dim": 16,  # 64 (= hidden / heads, kept)
    "hidden_act": "silu",
    "hidden_size": 64,  # 2048
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 8192
    "max_position_embeddings": 128,  # 131072
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 4,  # 32
    "num_hidden_layers": 2,  # 16
    "num_key_value_heads": 1,  # 8 (4 query heads per kv head, kept)
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 64,  # 8192
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0",
    "use_cache": True,
    "vocab_size": 301,  # 128256
}

# Qwen/Qwen2.5-0.5B-Instruct (q/k/v biases, GQA 14/2, tied, bf16).
QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 343,  # 151643
    "eos_token_id": 345,  # 151645
    "hidden_act": "silu",
    "hidden_size": 64,  # 896 (head_dim = hidden / heads = 8; published 64)
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 4864
    "max_position_embeddings": 64,  # 32768
    "max_window_layers": 2,  # 21 (unused: use_sliding_window is false)
    "model_type": "qwen2",
    "num_attention_heads": 8,  # 14
    "num_hidden_layers": 2,  # 24
    "num_key_value_heads": 2,  # 2 (4 query heads per kv head; published 7)
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 64,  # 32768 (= max_position_embeddings, as published; unused)
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 346,  # 151936
}

# Qwen/Qwen3-0.6B (q_norm/k_norm, head_dim 128 with 16 heads over hidden 1024, GQA 16/8, tied, bf16).
QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 386,  # 151643
    "eos_token_id": 388,  # 151645
    "head_dim": 24,  # 128 (heads * head_dim = 96 != hidden 64, as 2048 != 1024)
    "hidden_act": "silu",
    "hidden_size": 64,  # 1024
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 3072
    "max_position_embeddings": 64,  # 40960
    "max_window_layers": 2,  # 28
    "model_type": "qwen3",
    "num_attention_heads": 4,  # 16
    "num_hidden_layers": 2,  # 28
    "num_key_value_heads": 2,  # 8 (2 query heads per kv head, kept)
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 389,  # 151936
}

# google/gemma-3-270m (gemma3_text: (1+w) RMSNorm, 4 norms per block, q/k norms, sqrt(hidden)
# embedding scale, GeGLU tanh, sliding window on local layers with their own RoPE base, tied, bf16).
# query_pre_attn_scalar 256 = head_dim there; here 48 != head_dim 32 (as Gemma 3 27B's 168 != 128),
# so an engine that scales by 1/sqrt(head_dim) instead fails. Layers: 1 local, 1 global (pattern 2,
# published 6); sliding_window 5, so it bites at T = 14.
GEMMA3 = {
    "_sliding_window_pattern": 2,  # 6
    "architectures": ["Gemma3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": None,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "final_logit_softcapping": None,
    "head_dim": 32,  # 256
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 64,  # 640
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 2048
    "layer_types": ["sliding_attention", "full_attention"],  # 18 layers, 5 local : 1 global
    "max_position_embeddings": 64,  # 32768
    "model_type": "gemma3_text",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,  # 18
    "num_key_value_heads": 1,
    "pad_token_id": 0,
    "query_pre_attn_scalar": 48,  # 256
    "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": 5,  # 512
    "torch_dtype": "bfloat16",
    "transformers_version": "4.55.0.dev0",
    "use_bidirectional_attention": False,
    "use_cache": True,
    "vocab_size": 362,  # 262144
}

# name -> (published checkpoint it mimics, config.json, LoRA target modules, seed)
CASES = {
    "gpt2": ("openai-community/gpt2", GPT2, ["c_attn", "c_proj", "c_fc"], 1),
    "smollm2": ("HuggingFaceTB/SmolLM2-135M-Instruct", SMOLLM2, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], 2),
    "llama32": ("meta-llama/Llama-3.2-1B-Instruct", LLAMA32, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], 3),
    "qwen2": ("Qwen/Qwen2.5-0.5B-Instruct", QWEN2, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], 4),
    "qwen3": ("Qwen/Qwen3-0.6B", QWEN3, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], 5),
    "gemma3": ("google/gemma-3-270m", GEMMA3, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], 6),
}
