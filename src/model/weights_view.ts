/**
 * What the engine's passes read: a base model's GPU parameters by canonical name (see params.ts)
 * and, optionally, one LoRA adapter's modules. The training path (BaseModel, LoraAdapter) and the
 * inference path (prefill, decode) meet at these two interfaces, so either can be tested alone.
 */
import type { Tensor } from '../gpu/tensor.ts';
import type { LoraConfig, ModelConfig } from './config.ts';

/** One adapted linear module, e.g. `layers.3.attn.q`: y += scale · (x·Aᵀ)·Bᵀ. */
export interface LoraModule {
  /** [R, in] */
  readonly a: Tensor;
  /** [out, R] */
  readonly b: Tensor;
  /** α / R */
  readonly scale: number;
}

/** A base model's parameters on the GPU (f32, or f16 for frozen linear weights where supported). */
export interface ModelWeights {
  readonly cfg: ModelConfig;
  /** The tensor of a canonical parameter name; throws naming the parameter when it is absent. */
  param(name: string): Tensor;
  /** Whether the model has the parameter (biases, lm_head and value_head are optional). */
  has(name: string): boolean;
}

/** A LoRA adapter's modules on the GPU. */
export interface AdapterWeights {
  readonly id: string;
  readonly lora: LoraConfig;
  /** The adapter of module `name` (e.g. `layers.0.attn.q`), or undefined when it is not adapted. */
  module(name: string): LoraModule | undefined;
}
