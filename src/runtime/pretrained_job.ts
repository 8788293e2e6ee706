/**
 * What a job on a pretrained checkpoint needs beyond a from-scratch one: the checkpoint's own
 * tokenizer, the prompt format its chat template teaches (native tool calls, BOS once, its
 * end-of-turn ids), the reference the service loads the weights from, learning-rate defaults that
 * suit the model's width, and the files an exported adapter carries with it.
 *
 * The page (or the CLI) opens the checkpoint once here — config, tokenizer, generation config;
 * weights stay in the files — and asks the service to load the weights itself from the same
 * commit (`PretrainedRef`): under Deno from the same Hugging Face cache folder, in a browser from
 * the same origin's Cache Storage, on a fleet host from that host's cache.
 */
import { hfChatFormat } from '../env/chat_template.ts';
import { plainFormat, type PromptFormat } from '../env/format.ts';
import type { LoadPretrainedOptions } from '../hub/pretrained.ts';
import type { ModelConfig } from '../model/config.ts';
import { configToHf } from '../model/hf_config.ts';
import { PRESETS } from '../model/presets.ts';
import type { HfTokenizer } from '../model/tokenizer/hf.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { hubOptionsOf, type PretrainedRef } from './clients.ts';

/** A job's pretrained checkpoint: where it is, and (once resolved) the commit it was trained from. */
export interface PretrainedJob extends PretrainedRef {
  /** The commit `revision` resolved to when the job started (absent for a folder); a resumed or fleet job loads this one. */
  readonly commit?: string;
}

/**
 * The system message of a pretrained job's prompts. The built-in environments state only the task
 * ("What is 37*48?"): a from-scratch model learns the answer tag from its demonstrations, an
 * instruct model must be told. Tools are declared by the chat template itself.
 */
export const PRETRAINED_SYSTEM = 'Solve the task. Call a tool when it helps. Give your final answer inside <answer></answer> tags, for example <answer>42</answer>.';

/** Positions a pretrained job's episodes may use (prompt, actions, observations): the model's own, at most this. */
export const PRETRAINED_CONTEXT = 2048;

/**
 * Learning-rate default for a pretrained model: Tinker's recommendation (tinker-cookbook
 * hyperparam_utils.get_lr), LR = 5e-5 · M · (2000 / hidden)^P with M = 10 for LoRA and 1 for full
 * fine-tuning, P = 0.0775 for Qwen and 0.781 for Llama (the two families it was fitted on; Gemma
 * and GPT-2 take Llama's exponent, the steeper and so the more careful of the two for narrow
 * models). For Qwen2.5-0.5B: LoRA 5.3e-4, full 5.3e-5; SmolLM2-135M: LoRA 1.3e-3, full 1.3e-4.
 */
export function pretrainedLr(cfg: ModelConfig, lora: boolean): number {
  // By the checkpoint's model_type, as the rule is keyed (configToHf: Qwen2 is the llama record's q/k/v-bias alias).
  const type = configToHf(cfg).model_type;
  const p = type === 'qwen2' || type === 'qwen3' ? 0.0775 : 0.781;
  return 5e-5 * (lora ? 10 : 1) * (2000 / cfg.dModel) ** p;
}

/**
 * The opened checkpoint a job's model names — a Hub repo id or a folder — or undefined for a
 * from-scratch preset. What train(), `npm run train`, `npm run eval` and fleet workers call.
 */
export async function openUnlessPreset(model: string, hub: Omit<PretrainedJob, 'repo'> = {}): Promise<OpenedPretrained | undefined> {
  if (Object.hasOwn(PRESETS, model)) return undefined;
  return openPretrainedJob({ repo: model, ...hub });
}

/** What the agent side of a pretrained job uses. */
export interface OpenedPretrained {
  readonly config: ModelConfig;
  readonly tokenizer: Tokenizer;
  readonly format: PromptFormat;
  readonly eosTokenIds: readonly number[];
  /** What the service loads (pinned to the resolved commit, from the cache the files are now in). */
  readonly serviceRef: PretrainedRef;
  /** The job's reference with the commit filled in. */
  readonly job: PretrainedJob;
  /** Tokenizer files of the checkpoint (name → bytes) for an exported adapter. */
  readonly tokenizerFiles: Readonly<Record<string, Uint8Array>>;
}

/** Tokenizer files an exported adapter carries, so PEFT, transformers and vLLM load it with its base. */
export const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'generation_config.json'] as const;

/**
 * Opens a job's checkpoint (downloading what the cache lacks): everything but the weights.
 * `onProgress` and `signal` go to loadPretrained (a page shows the download, and can abort it).
 */
export async function openPretrainedJob(ref: PretrainedJob, opts: Pick<LoadPretrainedOptions, 'onProgress' | 'signal'> = {}): Promise<OpenedPretrained> {
  const { loadPretrained } = await import('../hub/pretrained.ts');
  const p = await loadPretrained(ref.repo, { ...hubOptionsOf(ref), ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
  try {
    const format = pretrainedFormat(p.tokenizer);
    const job: PretrainedJob = { ...ref, ...(p.commit !== undefined ? { commit: p.commit } : {}) };
    // The files are in the cache now (or in the folder): the service reads them from there, offline.
    const serviceRef: PretrainedRef = p.commit === undefined
      ? { repo: ref.repo }
      : { repo: ref.repo, revision: p.commit, offline: true, ...(ref.cacheDir !== undefined ? { cacheDir: ref.cacheDir } : {}), ...(ref.endpoint !== undefined ? { endpoint: ref.endpoint } : {}) };
    const tokenizerFiles = Object.fromEntries(TOKENIZER_FILES.filter((f) => p.texts[f] !== undefined).map((f) => [f, new TextEncoder().encode(p.texts[f])]));
    return { config: p.config, tokenizer: p.tokenizer, format, eosTokenIds: p.generation.eosTokenIds, serviceRef, job, tokenizerFiles };
  } finally {
    await p.close();
  }
}

/**
 * A pretrained job's prompt format: the chat template's (tools declared by the template, its native
 * call syntax, Qwen3 without thinking — a think block would spend the action's token budget),
 * else plain text that lists the tools and the tag syntax.
 */
export function pretrainedFormat(tokenizer: HfTokenizer): PromptFormat {
  if (tokenizer.chatTemplate() === undefined) return plainFormat({ system: PRETRAINED_SYSTEM });
  return hfChatFormat(tokenizer, { system: PRETRAINED_SYSTEM, enableThinking: false });
}
