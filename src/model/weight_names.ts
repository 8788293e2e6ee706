/**
 * Hugging Face checkpoint names and layouts ↔ our canonical parameters (params.ts).
 *
 * GPT-2 (GPT2LMHeadModel; the "transformer." prefix is optional, as in the original checkpoint):
 *   wte.weight [V,C] → tok_emb.weight            wpe.weight [P,C] → pos_emb.weight
 *   h.{i}.ln_1.{weight,bias} → layers.{i}.attn_norm.{weight,bias}
 *   h.{i}.attn.c_attn.weight [C, 3C] (Conv1D: in, out) → transposed to [3C, C] and split by rows
 *       into layers.{i}.attn.{q,k,v}.weight [C, C]; c_attn.bias [3C] split likewise
 *   h.{i}.attn.c_proj.weight [C, C] → layers.{i}.attn.o.weight (transposed); .bias as is
 *   h.{i}.ln_2 → layers.{i}.mlp_norm
 *   h.{i}.mlp.c_fc.weight [C, F] → layers.{i}.mlp.up.weight [F, C] (transposed)
 *   h.{i}.mlp.c_proj.weight [F, C] → layers.{i}.mlp.down.weight [C, F] (transposed)
 *   ln_f → final_norm; lm_head.weight → lm_head.weight when untied (ignored when tied)
 *   ignored buffers: h.{i}.attn.bias, h.{i}.attn.masked_bias
 * Llama / Qwen2 (LlamaForCausalLM / Qwen2ForCausalLM; "model." prefix optional), all [out, in]:
 *   embed_tokens → tok_emb; layers.{i}.input_layernorm → layers.{i}.attn_norm;
 *   layers.{i}.self_attn.{q,k,v,o}_proj → layers.{i}.attn.{q,k,v,o};
 *   layers.{i}.post_attention_layernorm → layers.{i}.mlp_norm;
 *   layers.{i}.mlp.{gate,up,down}_proj → layers.{i}.mlp.{gate,up,down}; norm → final_norm;
 *   lm_head.weight → lm_head.weight when untied. Ignored: layers.{i}.self_attn.rotary_emb.inv_freq.
 *
 * Import checks every name, shape and dtype from the headers first, so a bad checkpoint fails
 * before any tensor data is read (nothing half-loaded); then it reads one HF tensor at a time.
 */
import { type LoraTarget, type ModelConfig } from './config.ts';
import { WeightsError } from './errors.ts';
import { FLOAT_DTYPES } from './safetensors.ts';
import { blockLinears, moduleName, numel, parameterSpecs } from './params.ts';
import { archOf } from './arch.ts';

/** Anything that can hand out named tensors as f32: a SafetensorsFile, several shards, plain arrays. */
export interface TensorSource {
  /** File name for errors. */
  readonly name: string;
  names(): string[];
  has(name: string): boolean;
  info(name: string): { readonly dtype: string; readonly shape: readonly number[] };
  getF32(name: string): Promise<Float32Array>;
}

export interface PlainTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** Plain f32 arrays as a TensorSource (tests, and tensors already in memory). */
export function plainSource(tensors: Readonly<Record<string, PlainTensor>>, name = '<tensors>'): TensorSource {
  const map = new Map(Object.entries(tensors));
  const get = (n: string) => {
    const t = map.get(n);
    if (!t) throw new WeightsError('missing', name, n, 'no such tensor');
    return t;
  };
  return {
    name,
    names: () => [...map.keys()],
    has: (n) => map.has(n),
    info: (n) => ({ dtype: 'F32', shape: get(n).shape }),
    getF32: (n) => Promise.resolve(get(n).data.slice()),
  };
}

/** Several shards (model-00001-of-00002.safetensors, …) as one source; a name in two shards is an error. */
export function shardedSource(shards: readonly TensorSource[], name = shards.map((s) => s.name).join(' + ')): TensorSource {
  const owner = new Map<string, TensorSource>();
  for (const s of shards) {
    for (const n of s.names()) {
      if (owner.has(n)) throw new WeightsError('unexpected', name, n, `appears in both ${owner.get(n)?.name} and ${s.name}`);
      owner.set(n, s);
    }
  }
  const of = (n: string) => {
    const s = owner.get(n);
    if (!s) throw new WeightsError('missing', name, n, 'no such tensor in any shard');
    return s;
  };
  return { name, names: () => [...owner.keys()], has: (n) => owner.has(n), info: (n) => of(n).info(n), getF32: (n) => of(n).getF32(n) };
}

/** One HF tensor and the canonical tensors it holds: HF data, transposed if Conv1D, split by rows. */
export interface HfEntry {
  readonly hf: string;
  readonly hfShape: readonly number[];
  /** Conv1D [in, out] weight: transpose to [out, in]. */
  readonly transpose: boolean;
  /** Canonical names and their shapes, stacked by rows in this order. */
  readonly parts: readonly { readonly name: string; readonly shape: readonly number[] }[];
}

/**
 * Every HF tensor of `cfg` with the given prefix (the record's, or ''), in the record's order:
 * embeddings, each block's norms and linears (targets sharing an HF module fused by rows, in
 * target order), the final norm, and lm_head when untied.
 */
export function hfEntries(cfg: ModelConfig, prefix: string): HfEntry[] {
  const arch = archOf(cfg);
  const hf = arch.hf;
  const shapes = new Map(parameterSpecs(cfg).map((s) => [s.name, s.shape]));
  const part = (name: string) => {
    const shape = shapes.get(name);
    if (!shape) throw new Error(`hfEntries: no canonical parameter ${name}`);
    return { name, shape };
  };
  // `linear`: a block linear's weight, stored [in, out] by Conv1D families.
  const entry = (hfName: string, names: string[], linear = false): HfEntry => {
    const parts = names.map(part);
    const rows = parts.reduce((s, p) => s + p.shape[0], 0);
    const isVector = parts[0].shape.length === 1;
    if (isVector) return { hf: hfName, hfShape: [rows], transpose: false, parts };
    const cols = parts[0].shape[1];
    const t = linear && hf.conv1d;
    return { hf: hfName, hfShape: t ? [cols, rows] : [rows, cols], transpose: t, parts };
  };
  const out: HfEntry[] = [];
  const norm = (hfName: string, ours: string) => {
    out.push(entry(`${hfName}.weight`, [`${ours}.weight`]));
    if (shapes.has(`${ours}.bias`)) out.push(entry(`${hfName}.bias`, [`${ours}.bias`]));
  };
  out.push(entry(`${prefix}${hf.embed}.weight`, ['tok_emb.weight']));
  if (hf.positions) out.push(entry(`${prefix}${hf.positions}.weight`, ['pos_emb.weight']));
  // Our canonical per-block order (params.ts), mapped to HF names; fused modules appear once.
  const blockOrder = parameterSpecs({ ...cfg, nLayer: 1 } as ModelConfig).filter((s) => s.layer === 0);
  for (let i = 0; i < cfg.nLayer; i++) {
    const h = `${prefix}${hf.layers}.${i}`;
    const l = `layers.${i}`;
    const done = new Set<string>();
    for (const s of blockOrder) {
      const rel = s.name.slice('layers.0.'.length); // e.g. attn_norm.weight, attn.q.weight
      const kind = rel.slice(rel.lastIndexOf('.') + 1); // weight | bias
      const mod = rel.slice(0, rel.lastIndexOf('.'));
      if (s.kind === 'norm' || s.kind === 'norm-bias') {
        if (kind === 'weight') norm(`${h}.${hf.norms[mod]}`, `${l}.${mod}`);
        continue;
      }
      const t = mod.slice(mod.indexOf('.') + 1) as LoraTarget;
      const hfMod = hf.linears[t];
      if (!hfMod) throw new Error(`hfEntries: ${cfg.family} has no HF name for ${mod}`);
      if (done.has(`${hfMod}.${kind}`)) continue;
      done.add(`${hfMod}.${kind}`);
      const fused = blockLinears(cfg).filter((u) => hf.linears[u] === hfMod);
      out.push(entry(`${h}.${hfMod}.${kind}`, fused.map((u) => `${moduleName(i, u)}.${kind}`), true));
    }
  }
  norm(`${prefix}${hf.finalNorm}`, 'final_norm');
  if (!cfg.tieEmbeddings) out.push(entry('lm_head.weight', ['lm_head.weight']));
  return out;
}

/** Buffers and duplicates HF checkpoints may carry that are not parameters. */
function ignorable(cfg: ModelConfig, name: string): boolean {
  if (cfg.tieEmbeddings && name === 'lm_head.weight') return true;
  return archOf(cfg).hf.ignorable.test(name);
}

/**
 * The cheap first look: the checkpoint's highest layer index against cfg.nLayer, from its names
 * alone, before the config's expected entries are built (for a config.json claiming far more layers
 * than the file holds, building them first costs time and memory in the claimed size, only to refuse).
 * Names the first tensor of the first layer
 * the file lacks — the one the full check would have named.
 */
function checkLayerCount(cfg: ModelConfig, source: TensorSource, prefix: string): void {
  const hf = archOf(cfg).hf;
  const block = hf.layers;
  const re = new RegExp(`^${prefix.replaceAll('.', '\\.')}${block}\\.(\\d+)\\.`);
  let top = -1;
  for (const n of source.names()) {
    const m = re.exec(n);
    if (m) top = Math.max(top, Number(m[1]));
  }
  if (top + 1 < cfg.nLayer) {
    const first = `${prefix}${block}.${top + 1}.${hf.norms.attn_norm}.weight`;
    throw new WeightsError('missing', source.name, first, `is missing: the config has ${cfg.nLayer} layers, the checkpoint's highest layer index is ${top}`);
  }
}

/** A checked import: the entries to read, in order. */
export interface HfImportPlan {
  readonly source: TensorSource;
  readonly entries: readonly HfEntry[];
}

/**
 * Checks a checkpoint's names, shapes and dtypes against `cfg` without reading tensor data.
 * WeightsError (missing / unexpected / shape / dtype) names the HF tensor and the file.
 */
export function planHfImport(cfg: ModelConfig, source: TensorSource): HfImportPlan {
  const root = `${archOf(cfg).hf.embed}.weight`;
  const wrapped = archOf(cfg).hf.prefix;
  const prefix = source.has(wrapped + root) ? wrapped : source.has(root) ? '' : undefined;
  if (prefix === undefined) throw new WeightsError('missing', source.name, wrapped + root, `not a ${cfg.family} checkpoint (no ${wrapped}${root} or ${root})`);
  checkLayerCount(cfg, source, prefix);
  const entries = hfEntries(cfg, prefix);
  const expected = new Set(entries.map((e) => e.hf));
  for (const e of entries) {
    if (!source.has(e.hf)) throw new WeightsError('missing', source.name, e.hf, 'is missing');
    const info = source.info(e.hf);
    if (!FLOAT_DTYPES.has(info.dtype)) throw new WeightsError('dtype', source.name, e.hf, `dtype ${info.dtype} is not a float type`);
    if (info.shape.length !== e.hfShape.length || info.shape.some((d, k) => d !== e.hfShape[k])) {
      throw new WeightsError('shape', source.name, e.hf, `shape [${info.shape.join(', ')}] does not match the config's [${e.hfShape.join(', ')}]`);
    }
  }
  for (const n of source.names()) {
    if (!expected.has(n) && !ignorable(cfg, n)) throw new WeightsError('unexpected', source.name, n, `is not a parameter of this ${cfg.family} config`);
  }
  return { source, entries };
}

/** HF data [rows…] (or Conv1D [in, out]) → [out, in], then split into the canonical parts. */
function splitEntry(e: HfEntry, data: Float32Array): { name: string; shape: readonly number[]; data: Float32Array }[] {
  let rowsMajor = data;
  if (e.transpose) {
    const [inp, out] = e.hfShape;
    rowsMajor = new Float32Array(data.length);
    for (let i = 0; i < inp; i++) for (let o = 0; o < out; o++) rowsMajor[o * inp + i] = data[i * out + o];
  }
  let at = 0;
  return e.parts.map((p) => {
    const n = numel(p.shape);
    const slice = e.parts.length === 1 ? rowsMajor : rowsMajor.slice(at, at + n);
    at += n;
    return { name: p.name, shape: p.shape, data: slice };
  });
}

/** Reads a checked plan one HF tensor at a time, yielding canonical tensors. */
export async function* readHfImport(plan: HfImportPlan): AsyncGenerator<{ name: string; shape: readonly number[]; data: Float32Array }> {
  for (const e of plan.entries) yield* splitEntry(e, await plan.source.getF32(e.hf));
}

/** Whole-model convenience: every canonical parameter as f32. */
export async function importHfWeights(cfg: ModelConfig, source: TensorSource): Promise<Record<string, Float32Array>> {
  const out: Record<string, Float32Array> = {};
  for await (const t of readHfImport(planHfImport(cfg, source))) out[t.name] = t.data;
  return out;
}

/** Checks that `params` holds every canonical parameter of `cfg` with the right length. */
export function checkParams(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, file = '<params>', opts: { valueHead?: boolean } = {}): void {
  for (const s of parameterSpecs(cfg, opts)) {
    const d = Object.hasOwn(params, s.name) ? params[s.name] : undefined;
    if (!(d instanceof Float32Array)) throw new WeightsError('missing', file, s.name, 'is missing (or not a Float32Array)');
    if (d.length !== numel(s.shape)) throw new WeightsError('shape', file, s.name, `has ${d.length} elements, expected [${s.shape.join(', ')}]`);
  }
}

/**
 * Canonical parameters → HF names and layouts (with the "transformer." / "model." prefix), ready
 * for writeSafetensors. The inverse of import: Conv1D weights transposed back, q/k/v re-fused.
 */
export function exportHfWeights(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>): { name: string; shape: number[]; dtype: 'F32'; data: Float32Array }[] {
  checkParams(cfg, params);
  return hfEntries(cfg, archOf(cfg).hf.prefix).map((e) => {
    const rows = e.parts.length === 1 ? params[e.parts[0].name] : concat(e.parts.map((p) => params[p.name]));
    let data = rows;
    if (e.transpose) {
      const [inp, out] = e.hfShape;
      data = new Float32Array(rows.length);
      for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) data[i * out + o] = rows[o * inp + i];
    } else data = rows.slice();
    return { name: e.hf, shape: [...e.hfShape], dtype: 'F32' as const, data };
  });
}

function concat(arrays: Float32Array[]): Float32Array {
  const out = new Float32Array(arrays.reduce((s, a) => s + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}
