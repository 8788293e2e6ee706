/**
 * The `model` part's contract: one training job or one greedy decoder per implementation (ours,
 * the tfjs reference model, the same GPT-2 written with jax-js), built from the same host
 * weights, adapter and batch, so every implementation does the same work and must compute the
 * same numbers before anyone times it. Also the seeded inputs. Pure (no GPU): the Node tests cover
 * the input builders.
 *
 * Legend: B rows, T positions, N = B·T, V vocab, C channels, R LoRA rank, P prompt tokens,
 * n new tokens.
 */
import type { LoraConfig, ModelConfig } from '../../src/model/config.ts';
import { initParameters } from '../../src/model/init.ts';
import { loraSpecs, numel } from '../../src/model/params.ts';
import { Rng } from '../../src/util/rng.ts';
import type { ImplName } from './impl.ts';

/** Adam without weight decay and without clipping: the same update in all three (tfjs has no AdamW). */
export interface AdamSettings {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
}

export const ADAM: AdamSettings = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

export interface TrainSetup {
  readonly cfg: ModelConfig;
  /** Canonical parameter dict (src/model/params.ts). */
  readonly params: Readonly<Record<string, Float32Array>>;
  /** The adapter, when the job trains only it ('lora'). */
  readonly lora: { readonly config: LoraConfig; readonly tensors: Readonly<Record<string, Float32Array>> } | null;
  readonly B: number;
  readonly T: number;
  /** [B·T] input ids and next-token targets; every position is in the token-mean loss. */
  readonly inputsBT: Int32Array;
  readonly targetsBT: Int32Array;
  readonly adam: AdamSettings;
}

/** What one training step reports when asked to check (read back after the GPU has finished). */
export interface StepCheck {
  /** Token-mean cross-entropy before the update. */
  readonly loss: number;
  /** ‖gradients of the trainable tensors‖₂ of this step. */
  readonly gradNorm: number;
}

export interface TrainJob {
  /** One step (forward, backward, Adam update), resolved once the GPU has finished it. */
  run(): Promise<void>;
  /** One step with its loss and gradient norm read back. */
  checked(): Promise<StepCheck>;
  /** Peak device bytes of the job's first step (weights included), where measured. */
  readonly firstStepPeakBytes?: number | null;
  dispose(): void;
}

export interface DecodeSetup {
  readonly cfg: ModelConfig;
  readonly params: Readonly<Record<string, Float32Array>>;
  /** B prompts of P tokens each. */
  readonly prompts: readonly (readonly number[])[];
  /** New tokens per prompt. */
  readonly newTokens: number;
}

export interface Decoder {
  /** Greedy decoding of every prompt; the new tokens of each. */
  generate(): Promise<number[][]>;
  /** How it decodes (KV cache, or recomputing the prefix), for the notes. */
  readonly how: string;
  dispose(): void;
}

export interface ModelImpl {
  readonly name: ImplName;
  /** Why this implementation cannot run a job of this kind, or null. */
  missingTrain(setup: TrainSetup): string | null;
  train(setup: TrainSetup): Promise<TrainJob>;
  decoder(setup: DecodeSetup): Promise<Decoder>;
}

/** Every LoRA target of GPT-2, as a user fine-tuning all linears would choose. */
export function benchLora(rank: number): LoraConfig {
  return { rank, alpha: 2 * rank, targets: ['q', 'k', 'v', 'o', 'up', 'down'] };
}

/** The model's weights: the engine's from-scratch init (N(0, 0.02), scaled residual projections). */
export function benchParams(cfg: ModelConfig, seed: number): Record<string, Float32Array> {
  return initParameters(cfg, seed);
}

/**
 * An adapter as after some training: A ~ U(±1/√in) (the init) and B ~ N(0, 0.02) rather than 0,
 * so the adapter changes the forward and every adapter gradient is exercised.
 */
export function benchAdapter(cfg: ModelConfig, lora: LoraConfig, seed: number): Record<string, Float32Array> {
  const rng = new Rng(seed, 0x10b0);
  const out: Record<string, Float32Array> = {};
  loraSpecs(cfg, lora).forEach((s, i) => {
    const n = numel(s.shape);
    const r = rng.fork(i);
    out[s.name] = s.kind === 'lora-a' ? r.uniformArray(n, -1 / Math.sqrt(s.shape[1]), 1 / Math.sqrt(s.shape[1])) : r.normalArray(n, 0.02);
  });
  return out;
}

/** B rows of T+1 random byte tokens: inputs are the first T, targets the last T. */
export function benchBatch(cfg: ModelConfig, B: number, T: number, seed: number): { inputsBT: Int32Array; targetsBT: Int32Array } {
  if (T > cfg.maxSeqLen) throw new RangeError(`benchBatch: T=${T} exceeds ${cfg.name}'s maxSeqLen ${cfg.maxSeqLen}`);
  const rng = new Rng(seed, 0xba7);
  const inputsBT = new Int32Array(B * T);
  const targetsBT = new Int32Array(B * T);
  const vocab = Math.min(256, cfg.vocabSize);
  for (let b = 0; b < B; b++) {
    const row = Array.from({ length: T + 1 }, () => rng.nextInt(vocab));
    for (let t = 0; t < T; t++) {
      inputsBT[b * T + t] = row[t];
      targetsBT[b * T + t] = row[t + 1];
    }
  }
  return { inputsBT, targetsBT };
}

/** B prompts of P random byte tokens. */
export function benchPrompts(cfg: ModelConfig, B: number, P: number, seed: number): number[][] {
  const rng = new Rng(seed, 0x9e0);
  const vocab = Math.min(256, cfg.vocabSize);
  return Array.from({ length: B }, () => Array.from({ length: P }, () => rng.nextInt(vocab)));
}

/**
 * Where the peers cannot run a model (GPT-2 small on llvmpipe): a token embedding larger than one storage binding (154 MB
 * against llvmpipe's 128 MiB) — measured with both there: jax-js's bind group fails validation
 * ("Buffer binding 1 range 154389504 exceeds max_*_buffer_binding_size limit 134217728") and every
 * greedy token comes out 0; tfjs returns 1056964608 for every token (0.5's bits, not a token id);
 * neither throws. Elsewhere (a GPU host) they run.
 */
export function peersCannotBind(ctx: { limit(name: string): number }, cfg: ModelConfig): string | null {
  const emb = 4 * cfg.vocabSize * cfg.dModel;
  const max = ctx.limit('maxStorageBufferBindingSize');
  if (emb <= max) return null;
  return `peers not run at ${cfg.name}: its f32 token embedding (${emb} B) is over this adapter's maxStorageBufferBindingSize (${max} B), ` +
    'and neither peer splits a binding: measured here, jax-js fails validation binding it and greedy-decodes token 0 throughout, tfjs decodes 1056964608 (not a token id); ours binds it a window at a time';
}
