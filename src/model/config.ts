/**
 * Model and LoRA configuration: one type for both transformer families, with validation that
 * names the field at fault.
 *
 * Legend: V vocab, L layers, C model width (dModel), Hq query heads, Hkv key/value heads, D head
 * dim, F MLP hidden width (dFF), P max positions (maxSeqLen), R LoRA rank.
 *
 * Families:
 *   - 'gpt2':  LayerNorm (weight + bias) before attention and MLP and at the end; learned
 *              absolute positions; GELU (tanh approximation, HF "gelu_new"); biases on every
 *              linear layer; Hkv = Hq and Hq·D = C; output head tied to the embedding or not.
 *   - 'llama': RMSNorm (weight only); RoPE (rotate_half convention, base `ropeTheta`); SwiGLU MLP
 *              (down(silu(gate(x)) ⊙ up(x))); grouped-query attention (Hkv divides Hq); optional
 *              biases on q/k/v (Qwen2 has them), on o, and on the MLP (Llama's attention_bias /
 *              mlp_bias); tied or separate lm_head. Qwen2 is this family with qkvBias = true.
 * Attention is always causal with scale 1/sqrt(D). Linear layers compute y = x·Wᵀ + b.
 */
import { ModelConfigError } from './errors.ts';

export type ModelFamily = 'gpt2' | 'llama';

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
  /** D: per-head width; a multiple of 4 in [4, 128] (the attention kernel's range). */
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

export interface Gpt2Config extends CommonConfig {
  readonly family: 'gpt2';
}

export interface LlamaConfig extends CommonConfig {
  readonly family: 'llama';
  /** RoPE base θ: inverse frequencies θ^(−2i/D), i < D/2. */
  readonly ropeTheta: number;
}

export type ModelConfig = Gpt2Config | LlamaConfig;

/** Modules LoRA can adapt, in canonical order. gpt2 has no `gate`. */
export const LORA_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
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
const KNOWN_FIELDS = new Set<string>(['family', 'name', 'ropeTheta', 'normEps', ...COMMON_INT_FIELDS, ...COMMON_BOOL_FIELDS]);

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
  if (c.family !== 'gpt2' && c.family !== 'llama') {
    throw new ModelConfigError('family', `must be "gpt2" or "llama", got ${describe(c.family)}`);
  }
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
  if (headDim % 4 !== 0 || headDim > 128) {
    throw new ModelConfigError('headDim', `must be a multiple of 4 in [4, 128] (the attention kernel's range), got ${headDim}`);
  }
  if (c.family === 'gpt2') {
    if (c.ropeTheta !== undefined) throw new ModelConfigError('ropeTheta', 'gpt2 uses learned positions, not RoPE: leave ropeTheta out');
    if (nKvHead !== nHead) throw new ModelConfigError('nKvHead', `gpt2 has no grouped-query attention: must equal nHead (${nHead}), got ${nKvHead}`);
    if (nHead * headDim !== dModel) throw new ModelConfigError('headDim', `gpt2 needs nHead·headDim = dModel (${dModel}), got ${nHead}·${headDim}`);
    for (const f of ['qkvBias', 'oBias', 'mlpBias'] as const) {
      if (c[f] !== true) throw new ModelConfigError(f, 'gpt2 has biases on every linear layer: must be true');
    }
  } else {
    if (!isPosFinite(c.ropeTheta)) throw new ModelConfigError('ropeTheta', `must be a positive number, got ${describe(c.ropeTheta)}`);
  }
  const out: Record<string, unknown> = {};
  for (const key of ['family', 'name', ...COMMON_INT_FIELDS, 'normEps', 'ropeTheta', ...COMMON_BOOL_FIELDS]) {
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
    if (t === 'gate' && cfg.family === 'gpt2') throw new ModelConfigError('lora.targets', 'gpt2 has no gate projection (its MLP is up → GELU → down)');
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
