/**
 * Model and LoRA configuration: one type for every transformer family, with validation that
 * names the field at fault. What a family's block looks like is its architecture record
 * (arch.ts); this file holds what varies per checkpoint.
 *
 * Legend: V vocab, L layers, C model width (dModel), Hq query heads, Hkv key/value heads, D head
 * dim, F MLP hidden width (dFF), P max positions (maxSeqLen), R LoRA rank.
 *
 * Families:
 *   - 'gpt2':  LayerNorm (weight + bias) before attention and MLP and at the end; learned
 *              absolute positions; GELU (tanh approximation, HF "gelu_new"); biases on every
 *              linear layer; Hkv = Hq and Hq·D = C; output head tied to the embedding or not.
 *   - 'llama': RMSNorm (weight only); RoPE (rotate_half convention, base `ropeTheta`, optional
 *              `rope` scaling: Llama 3.x's band rule or linear); SwiGLU MLP
 *              (down(silu(gate(x)) ⊙ up(x))); grouped-query attention (Hkv divides Hq); optional
 *              biases on q/k/v (Qwen2 has them), on o, and on the MLP (Llama's attention_bias /
 *              mlp_bias); tied or separate lm_head. Qwen2 is this family with qkvBias = true.
 *   - 'qwen3': llama plus a per-head RMSNorm of q and k before RoPE; Hq·D may differ from C.
 *   - 'gemma3': Gemma 3 text — (1 + w) RMSNorms, four per block (input, post-attention,
 *              pre- and post-feed-forward) plus q/k norms, embeddings scaled by √C, GeGLU (tanh),
 *              sliding-window attention on the layers `layerTypes` marks 'sliding' (their own
 *              RoPE base `ropeLocalTheta`), the softmax scale query_pre_attn_scalar^−½.
 * Attention is causal with scale `attnScale` (default 1/sqrt(D)). Linear layers compute y = x·Wᵀ + b.
 */
import { ARCHS, blockLinearsOf, MODEL_FAMILIES } from './arch.ts';
import { ModelConfigError } from './errors.ts';
import type { RopeScaling } from './rope_freq.ts';

export type { RopeScaling } from './rope_freq.ts';
export type ModelFamily = 'gpt2' | 'llama' | 'qwen3' | 'gemma3';

/** A layer's attention: over every earlier key, or over the last `slidingWindow` keys. */
export type LayerType = 'full' | 'sliding';

interface CommonConfig {
  /** Preset or checkpoint name, for logs and adapter metadata. */
  readonly name?: string;
  /** V: rows of the token embedding (and of the output head). */
  readonly vocabSize: number;
  /** L: transformer blocks. */
  readonly nLayer: number;
  /** C: residual stream width. */
  readonly dModel: number;
  /** Hq: query heads. */
  readonly nHead: number;
  /** Hkv: key/value heads; divides nHead (gpt2: equals it). */
  readonly nKvHead: number;
  /** D: per-head width; a multiple of 4 in [4, 256] (the attention kernels' range). */
  readonly headDim: number;
  /** F: MLP hidden width (gpt2: usually 4C; llama: intermediate_size). */
  readonly dFF: number;
  /** P: longest sequence (gpt2: rows of the position table). */
  readonly maxSeqLen: number;
  /** ε of LayerNorm / RMSNorm. */
  readonly normEps: number;
  /** Output head = token embedding (no lm_head parameter). */
  readonly tieEmbeddings: boolean;
  /** Bias on the q, k and v projections (gpt2: always true). */
  readonly qkvBias: boolean;
  /** Bias on the attention output projection o (gpt2: always true). */
  readonly oBias: boolean;
  /** Bias on the MLP projections (gpt2: always true). */
  readonly mlpBias: boolean;
}

/** A transformer: its family (an ArchRecord, arch.ts) and sizes. From a preset, configFromHf, or written out. */
export interface ModelConfig extends CommonConfig {
  readonly family: ModelFamily;
  /** RoPE base θ (RoPE families; required there): inverse frequencies θ^(−2i/D), i < D/2. */
  readonly ropeTheta?: number;
  /** RoPE scaling of the full-attention layers (Llama 3.x: 'llama3'; linear). */
  readonly rope?: RopeScaling;
  /** RoPE base of the sliding layers (Gemma 3's rope_local_base_freq); default ropeTheta. */
  readonly ropeLocalTheta?: number;
  /** Keys a sliding layer's query sees, itself included (HF's sliding_window). */
  readonly slidingWindow?: number;
  /** Per layer: 'full' or 'sliding' (needs slidingWindow). Absent: every layer full. */
  readonly layerTypes?: readonly LayerType[];
  /** Softmax scale of attention; default 1/sqrt(headDim) (Gemma 3: query_pre_attn_scalar^−½). */
  readonly attnScale?: number;
}


/** Modules LoRA can adapt, in canonical order. gpt2 has no `gate`. */
export const LORA_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
/** A module LoRA can adapt (LORA_TARGETS). */
export type LoraTarget = (typeof LORA_TARGETS)[number];

/**
 * A LoRA adapter: W' = W + (alpha / rank)·B·A on each target module, A [R, in], B [out, R].
 *
 * GPT-2 mapping (our q/k/v/o/up/down are separate linears for both families; see weight_names.ts):
 * q, k, v are slices of HF's fused `attn.c_attn`; o is `attn.c_proj`; up is `mlp.c_fc`; down is
 * `mlp.c_proj`; gate does not exist and is rejected. A PEFT export of q/k/v adapters becomes one
 * `c_attn` adapter of rank R·(number of q/k/v targets) whose B is block-diagonal (peft.ts).
 */
export interface LoraConfig {
  /** R ≥ 1. */
  readonly rank: number;
  /** α > 0; the update is scaled by α / R (PEFT's default, not rsLoRA). */
  readonly alpha: number;
  /** Non-empty, no duplicates; validateLora returns them in LORA_TARGETS order. */
  readonly targets: readonly LoraTarget[];
}

/** Scale applied to B·A·x. */
export function loraScale(lora: LoraConfig): number {
  return lora.alpha / lora.rank;
}

function isPosInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x > 0;
}

function isPosFinite(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x > 0;
}

function describe(x: unknown): string {
  if (typeof x === 'string') return JSON.stringify(x);
  if (typeof x === 'number' || typeof x === 'boolean' || x === null || x === undefined) return String(x);
  return Array.isArray(x) ? 'an array' : `a ${typeof x}`;
}

const COMMON_INT_FIELDS = ['vocabSize', 'nLayer', 'dModel', 'nHead', 'nKvHead', 'headDim', 'dFF', 'maxSeqLen'] as const;
const COMMON_BOOL_FIELDS = ['tieEmbeddings', 'qkvBias', 'oBias', 'mlpBias'] as const;
const ROPE_FIELDS = ['ropeTheta', 'rope', 'ropeLocalTheta'] as const;
const OPTIONAL_FIELDS = [...ROPE_FIELDS, 'slidingWindow', 'layerTypes', 'attnScale'] as const;
const KNOWN_FIELDS = new Set<string>(['family', 'name', 'normEps', ...COMMON_INT_FIELDS, ...COMMON_BOOL_FIELDS, ...OPTIONAL_FIELDS]);

function validateRope(x: unknown): RopeScaling {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new ModelConfigError('rope', `expected an object, got ${describe(x)}`);
  const r = x as Record<string, unknown>;
  const num = (k: string) => {
    if (!isPosFinite(r[k])) throw new ModelConfigError(`rope.${k}`, `must be a positive number, got ${describe(r[k])}`);
    return r[k] as number;
  };
  const only = (keys: string[]) => {
    for (const k of Object.keys(r)) if (!keys.includes(k)) throw new ModelConfigError(`rope.${k}`, `unknown field for rope type ${describe(r.type)}`);
  };
  if (r.type === 'linear') {
    only(['type', 'factor']);
    return Object.freeze({ type: 'linear', factor: num('factor') });
  }
  if (r.type === 'llama3') {
    only(['type', 'factor', 'lowFreqFactor', 'highFreqFactor', 'originalMaxPositions']);
    const lo = num('lowFreqFactor'), hi = num('highFreqFactor');
    if (!(hi > lo)) throw new ModelConfigError('rope.highFreqFactor', `must exceed lowFreqFactor (${lo}), got ${hi}`);
    if (!isPosInt(r.originalMaxPositions)) throw new ModelConfigError('rope.originalMaxPositions', `must be a positive integer, got ${describe(r.originalMaxPositions)}`);
    return Object.freeze({ type: 'llama3', factor: num('factor'), lowFreqFactor: lo, highFreqFactor: hi, originalMaxPositions: r.originalMaxPositions });
  }
  throw new ModelConfigError('rope.type', `must be "linear" or "llama3", got ${describe(r.type)}`);
}

/**
 * Checks a config (from code, JSON or a checkpoint) and returns it as a frozen ModelConfig.
 * Throws ModelConfigError naming the first field at fault. Unknown fields are errors too (a typo
 * such as `nKvHeads` must not silently fall back to a default).
 */
export function validateConfig(input: unknown): ModelConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ModelConfigError('config', `expected an object, got ${describe(input)}`);
  }
  const c = input as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!KNOWN_FIELDS.has(key)) throw new ModelConfigError(key, 'unknown field');
  }
  if (typeof c.family !== 'string' || !(MODEL_FAMILIES as string[]).includes(c.family)) {
    throw new ModelConfigError('family', `must be one of ${MODEL_FAMILIES.map((f) => `"${f}"`).join(', ')}, got ${describe(c.family)}`);
  }
  const arch = ARCHS[c.family as ModelFamily];
  if (c.name !== undefined && typeof c.name !== 'string') throw new ModelConfigError('name', `must be a string, got ${describe(c.name)}`);
  for (const f of COMMON_INT_FIELDS) {
    if (!isPosInt(c[f])) throw new ModelConfigError(f, `must be a positive integer, got ${describe(c[f])}`);
  }
  for (const f of COMMON_BOOL_FIELDS) {
    if (typeof c[f] !== 'boolean') throw new ModelConfigError(f, `must be a boolean, got ${describe(c[f])}`);
  }
  if (!isPosFinite(c.normEps)) throw new ModelConfigError('normEps', `must be a positive number, got ${describe(c.normEps)}`);
  const nHead = c.nHead as number;
  const nKvHead = c.nKvHead as number;
  const headDim = c.headDim as number;
  const dModel = c.dModel as number;
  if (nHead % nKvHead !== 0) throw new ModelConfigError('nKvHead', `must divide nHead (${nHead}), got ${nKvHead}`);
  if (headDim % 4 !== 0 || headDim > 256) {
    throw new ModelConfigError('headDim', `must be a multiple of 4 in [4, 256] (the attention kernels' range), got ${headDim}`);
  }
  if (arch.hf.conv1d) {
    // GPT-2's layout: one fused [C, 3C] c_attn, biases everywhere.
    if (nKvHead !== nHead) throw new ModelConfigError('nKvHead', `${c.family} has no grouped-query attention: must equal nHead (${nHead}), got ${nKvHead}`);
    if (nHead * headDim !== dModel) throw new ModelConfigError('headDim', `${c.family} needs nHead·headDim = dModel (${dModel}), got ${nHead}·${headDim}`);
    for (const f of ['qkvBias', 'oBias', 'mlpBias'] as const) {
      if (c[f] !== true) throw new ModelConfigError(f, `${c.family} has biases on every linear layer: must be true`);
    }
  }
  const out: Record<string, unknown> = {};
  if (arch.positions === 'learned') {
    for (const f of ROPE_FIELDS) {
      if (c[f] !== undefined) throw new ModelConfigError(f, `${c.family} uses learned positions, not RoPE: leave ${f} out`);
    }
  } else {
    if (!isPosFinite(c.ropeTheta)) throw new ModelConfigError('ropeTheta', `must be a positive number, got ${describe(c.ropeTheta)}`);
    if (c.ropeLocalTheta !== undefined && !isPosFinite(c.ropeLocalTheta)) {
      throw new ModelConfigError('ropeLocalTheta', `must be a positive number, got ${describe(c.ropeLocalTheta)}`);
    }
    if (c.rope !== undefined) out.rope = validateRope(c.rope);
  }
  if (c.layerTypes !== undefined) {
    const lt = c.layerTypes;
    if (!Array.isArray(lt) || lt.length !== c.nLayer || lt.some((t) => t !== 'full' && t !== 'sliding')) {
      throw new ModelConfigError('layerTypes', `must be an array of nLayer (${c.nLayer}) entries "full" or "sliding", got ${describe(lt)}`);
    }
    out.layerTypes = Object.freeze([...lt]);
    if (lt.includes('sliding') && !isPosInt(c.slidingWindow)) {
      throw new ModelConfigError('slidingWindow', `must be a positive integer when a layer is "sliding", got ${describe(c.slidingWindow)}`);
    }
  }
  if (c.slidingWindow !== undefined) {
    if (!isPosInt(c.slidingWindow)) throw new ModelConfigError('slidingWindow', `must be a positive integer, got ${describe(c.slidingWindow)}`);
    if (!Array.isArray(c.layerTypes) || !c.layerTypes.includes('sliding')) {
      throw new ModelConfigError('slidingWindow', 'is set but no layer is "sliding": give layerTypes, or leave slidingWindow out');
    }
  }
  if (c.ropeLocalTheta !== undefined && !(Array.isArray(c.layerTypes) && c.layerTypes.includes('sliding'))) {
    throw new ModelConfigError('ropeLocalTheta', 'applies to sliding layers, and no layer is "sliding"');
  }
  if (c.attnScale !== undefined && !isPosFinite(c.attnScale)) throw new ModelConfigError('attnScale', `must be a positive number, got ${describe(c.attnScale)}`);
  for (const key of ['family', 'name', ...COMMON_INT_FIELDS, 'normEps', 'ropeTheta', 'ropeLocalTheta', ...COMMON_BOOL_FIELDS, 'slidingWindow', 'attnScale']) {
    if (c[key] !== undefined) out[key] = c[key];
  }
  return Object.freeze(out) as unknown as ModelConfig;
}

/** Checks a LoRA config against a model; returns it frozen with targets in canonical order. */
export function validateLora(cfg: ModelConfig, input: unknown): LoraConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ModelConfigError('lora', `expected an object, got ${describe(input)}`);
  }
  const l = input as Record<string, unknown>;
  for (const key of Object.keys(l)) {
    if (key !== 'rank' && key !== 'alpha' && key !== 'targets') throw new ModelConfigError(`lora.${key}`, 'unknown field');
  }
  if (!isPosInt(l.rank)) throw new ModelConfigError('lora.rank', `must be a positive integer, got ${describe(l.rank)}`);
  if (!isPosFinite(l.alpha)) throw new ModelConfigError('lora.alpha', `must be a positive number, got ${describe(l.alpha)}`);
  if (!Array.isArray(l.targets) || l.targets.length === 0) {
    throw new ModelConfigError('lora.targets', `must be a non-empty array of ${LORA_TARGETS.join('|')}, got ${describe(l.targets)}`);
  }
  const seen = new Set<string>();
  for (const t of l.targets as unknown[]) {
    if (typeof t !== 'string' || !(LORA_TARGETS as readonly string[]).includes(t)) {
      throw new ModelConfigError('lora.targets', `unknown target ${describe(t)} (known: ${LORA_TARGETS.join(', ')})`);
    }
    if (seen.has(t)) throw new ModelConfigError('lora.targets', `target "${t}" appears twice`);
    if (!blockLinearsOf(ARCHS[cfg.family]).includes(t as LoraTarget)) {
      throw new ModelConfigError('lora.targets', `${cfg.family} has no ${t} projection (its MLP is up → GELU → down)`);
    }
    seen.add(t);
  }
  return Object.freeze({
    rank: l.rank as number,
    alpha: l.alpha as number,
    targets: Object.freeze(LORA_TARGETS.filter((t) => seen.has(t))),
  });
}

/** [out, in] of a LoRA target module's base linear weight. */
export function loraTargetDims(cfg: ModelConfig, target: LoraTarget): [out: number, inp: number] {
  const q = cfg.nHead * cfg.headDim;
  const kv = cfg.nKvHead * cfg.headDim;
  switch (target) {
    case 'q':
      return [q, cfg.dModel];
    case 'k':
    case 'v':
      return [kv, cfg.dModel];
    case 'o':
      return [cfg.dModel, q];
    case 'gate':
    case 'up':
      return [cfg.dFF, cfg.dModel];
    case 'down':
      return [cfg.dModel, cfg.dFF];
  }
}
