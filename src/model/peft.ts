/**
 * PEFT LoRA adapters (adapter_config.json + adapter_model.safetensors) ↔ our canonical LoRA
 * tensors (`<module>.lora_a` [R, in], `<module>.lora_b` [out, R]; params.ts), and merging.
 *
 * PEFT names: base_model.model.<HF module>.lora_A.weight [r, in] and .lora_B.weight [out, r];
 * the update is (lora_alpha / r)·B·A (rsLoRA: lora_alpha / sqrt(r)).
 *   modules by the architecture record's HF names (arch.ts), e.g. llama/qwen/gemma:
 *   model.layers.{i}.self_attn.{q,k,v,o}_proj, model.layers.{i}.mlp.{gate,up,down}_proj
 *   gpt2 modules: transformer.h.{i}.attn.c_attn (q,k,v fused), attn.c_proj (o), mlp.c_fc (up),
 *   mlp.c_proj (down); fan_in_fan_out = true (Conv1D), which changes merging in PEFT, not A/B layouts.
 *
 * GPT-2 export: our q/k/v adapters are separate, HF's c_attn is one linear [3C out]. m adapted
 * slices of c_attn become one adapter of rank m·R: A = [A_q; A_k; A_v] (stacked rows), B
 * block-diagonal (B_t in the rows of slice t, columns of block t, zeros elsewhere), with
 * rank_pattern/alpha_pattern {"c_attn": m·R / m·α} so PEFT's scale stays α/R. The forward is
 * exactly ours. Our own tensor metadata ("webtinker.lora") lets import undo this exactly.
 *
 * Import of any PEFT LoRA (other ranks per module, rsLoRA, adapters on some layers only): every
 * module is zero-padded to the largest rank R* and its B rescaled so that our one scale α* / R*
 * reproduces PEFT's per-module scale — the same function, exactly. A fused c_attn adapter from
 * elsewhere gives q, k and v each the whole A and their rows of B. Modules absent in a layer get
 * A = B = 0. adapter_config.json is read as PEFT reads it (peft_config.ts: its defaults, its
 * module selection, its regex rank/alpha patterns), and whatever would make PEFT compute
 * something else is refused by field name (WeightsError 'adapter'); a tensor of a module PEFT
 * would not select is refused ('unexpected'), and a selected module missing from the file is
 * a zero update only when PEFT's initialisation makes it one ('missing' otherwise).
 */
import { type LoraConfig, type LoraTarget, type ModelConfig, LORA_TARGETS, loraScale, loraTargetDims, validateLora } from './config.ts';
import { WeightsError } from './errors.ts';
import { ConfigError } from '../errors.ts';
import { isJsonObject, parseUntrustedJson } from './json.ts';
import { archOf } from './arch.ts';
import { PEFT_DEFAULT_TARGETS, parsePeftConfig } from './peft_config.ts';
import { blockLinears, loraSpecs, moduleName, numel } from './params.ts';
import type { TensorSource } from './weight_names.ts';

const META_KEY = 'webtinker.lora';

/** HF module of a target within a block (the record's names), e.g. `self_attn.q_proj`, `attn.c_attn`. */
function hfModule(cfg: ModelConfig, target: LoraTarget): string {
  const m = archOf(cfg).hf.linears[target];
  if (!m) throw new WeightsError('adapter', '<adapter>', undefined, `${cfg.family} has no ${target} projection`);
  return m;
}

/** Targets that share one HF module with q (GPT-2's fused c_attn: q, k, v), in canonical order; [] where none do. */
function fusedQkv(cfg: ModelConfig): LoraTarget[] {
  const linears = archOf(cfg).hf.linears;
  const group = blockLinears(cfg).filter((t) => linears[t] === linears.q);
  return group.length > 1 ? group : [];
}

/**
 * A target's entry in target_modules: the module's last name (`q_proj`, `c_attn`), or its path in
 * the block where that name is not unique (GPT-2's attn.c_proj beside mlp.c_proj).
 */
function targetModuleName(cfg: ModelConfig, t: LoraTarget): string {
  const mod = hfModule(cfg, t);
  const leaf = mod.split('.').at(-1)!;
  const mods = new Set(blockLinears(cfg).map((u) => hfModule(cfg, u)));
  return [...mods].filter((m) => m.split('.').at(-1) === leaf).length > 1 ? mod : leaf;
}

/**
 * LoRA targets named either way — ours ('q', 'up', …) or by the model's Hugging Face module names
 * as PEFT's target_modules takes them ('q_proj', 'up_proj'; GPT-2's fused 'c_attn' is q, k and v)
 * — as our targets, in LORA_TARGETS order. An unknown name is a ConfigError listing both sets.
 */
export function loraTargetsByName(cfg: ModelConfig, names: readonly string[], field = 'lora.targets'): LoraTarget[] {
  const linears = blockLinears(cfg);
  const out = new Set<LoraTarget>();
  for (const n of names) {
    if ((LORA_TARGETS as readonly string[]).includes(n)) {
      out.add(n as LoraTarget);
      continue;
    }
    const hits = linears.filter((t) => hfModule(cfg, t).split('.').at(-1) === n || targetModuleName(cfg, t) === n);
    if (hits.length === 0) {
      const hf = [...new Set(linears.map((t) => hfModule(cfg, t).split('.').at(-1)!))];
      throw new ConfigError(field, `unknown target "${n}" for a ${cfg.family} model (ours: ${linears.join(', ')}; its module names: ${hf.join(', ')})`);
    }
    for (const t of hits) out.add(t);
  }
  return LORA_TARGETS.filter((t) => out.has(t));
}

/** HF module path (without "base_model.model.") of a target in a layer. */
export function peftModule(cfg: ModelConfig, layer: number, target: LoraTarget): string {
  const hf = archOf(cfg).hf;
  return `${hf.prefix}${hf.layers}.${layer}.${hfModule(cfg, target)}`;
}

/** The regular expression of a LoRA tensor name (after base_model.model.) of this family: layer, HF module, A|B. */
function loraKey(cfg: ModelConfig): RegExp {
  const hf = archOf(cfg).hf;
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const mods = [...new Set(blockLinears(cfg).map((t) => hfModule(cfg, t)))].map(esc).join('|');
  return new RegExp(`^(?:${esc(hf.prefix)})?${esc(hf.layers)}\\.(\\d+)\\.(${mods})\\.lora_([AB])\\.weight$`);
}

/** Checks that `tensors` holds every LoRA tensor of (cfg, lora) with the right length. */
export function checkLoraTensors(cfg: ModelConfig, lora: LoraConfig, tensors: Readonly<Record<string, Float32Array>>, file = '<adapter>'): void {
  for (const s of loraSpecs(cfg, lora)) {
    const d = Object.hasOwn(tensors, s.name) ? tensors[s.name] : undefined;
    if (!(d instanceof Float32Array)) throw new WeightsError('missing', file, s.name, 'is missing (or not a Float32Array)');
    if (d.length !== numel(s.shape)) throw new WeightsError('shape', file, s.name, `has ${d.length} elements, expected [${s.shape.join(', ')}]`);
  }
}

/** A LoRA adapter as PEFT's two files, adapter_config.json and adapter_model.safetensors (exportPeftAdapter's result). */
export interface PeftAdapter {
  /** adapter_config.json as an object (JSON.stringify it to write the file). */
  readonly adapterConfig: Record<string, unknown>;
  /** adapter_model.safetensors content, for writeSafetensors (with `metadata`). */
  readonly tensors: { name: string; shape: number[]; dtype: 'F32'; data: Float32Array }[];
  readonly metadata: Record<string, string>;
}

/**
 * Our adapter → PEFT's files. `baseModel` is the HF id or path of the base (base_model_name_or_path);
 * `revision` the base's commit on the Hub, which PEFT passes on when it loads the base.
 */
export function exportPeftAdapter(cfg: ModelConfig, loraIn: LoraConfig, tensors: Readonly<Record<string, Float32Array>>, baseModel: string, revision: string | null = null): PeftAdapter {
  const lora = validateLora(cfg, loraIn);
  checkLoraTensors(cfg, lora, tensors);
  const R = lora.rank;
  const out: PeftAdapter['tensors'] = [];
  const modules = new Set<string>();
  const group = fusedQkv(cfg);
  const qkv = group.filter((t) => lora.targets.includes(t));
  const put = (module: string, a: Float32Array, aShape: number[], b: Float32Array, bShape: number[]) => {
    out.push({ name: `base_model.model.${module}.lora_A.weight`, shape: aShape, dtype: 'F32', data: a });
    out.push({ name: `base_model.model.${module}.lora_B.weight`, shape: bShape, dtype: 'F32', data: b });
  };
  for (let i = 0; i < cfg.nLayer; i++) {
    if (qkv.length > 0) {
      const C = cfg.dModel; // the fused module's input width
      const m = qkv.length;
      const rowsOf = (t: LoraTarget) => loraTargetDims(cfg, t)[0];
      const total = group.reduce((s, t) => s + rowsOf(t), 0);
      const a = new Float32Array(m * R * C);
      const b = new Float32Array(total * m * R);
      qkv.forEach((t, j) => {
        a.set(tensors[`${moduleName(i, t)}.lora_a`], j * R * C);
        const bt = tensors[`${moduleName(i, t)}.lora_b`]; // [out_t, R]
        const row0 = group.slice(0, group.indexOf(t)).reduce((s, u) => s + rowsOf(u), 0);
        for (let r = 0; r < rowsOf(t); r++) for (let c = 0; c < R; c++) b[(row0 + r) * m * R + j * R + c] = bt[r * R + c];
      });
      put(peftModule(cfg, i, group[0]), a, [m * R, C], b, [total, m * R]);
    }
    for (const t of lora.targets) {
      if (qkv.includes(t)) continue;
      const [o, inp] = loraTargetDims(cfg, t);
      put(peftModule(cfg, i, t), tensors[`${moduleName(i, t)}.lora_a`].slice(), [R, inp], tensors[`${moduleName(i, t)}.lora_b`].slice(), [o, R]);
    }
  }
  for (const t of lora.targets) modules.add(targetModuleName(cfg, t));
  const fused = qkv.length > 1;
  const fusedLeaf = group.length > 0 ? hfModule(cfg, group[0]).split('.').at(-1)! : '';
  const adapterConfig: Record<string, unknown> = {
    peft_type: 'LORA', task_type: 'CAUSAL_LM', base_model_name_or_path: baseModel, r: R, lora_alpha: lora.alpha,
    target_modules: [...modules].sort(), lora_dropout: 0, bias: 'none', fan_in_fan_out: archOf(cfg).hf.conv1d,
    rank_pattern: fused ? { [fusedLeaf]: qkv.length * R } : {}, alpha_pattern: fused ? { [fusedLeaf]: qkv.length * lora.alpha } : {},
    use_rslora: false, use_dora: false, init_lora_weights: true, inference_mode: true, modules_to_save: null,
    layers_to_transform: null, layers_pattern: null, revision,
  };
  const metadata = { format: 'pt', [META_KEY]: JSON.stringify({ family: cfg.family, rank: R, alpha: lora.alpha, targets: lora.targets }) };
  return { adapterConfig, tensors: out, metadata };
}

interface ModuleTensors {
  a: Float32Array;
  b: Float32Array;
  rank: number;
  /** PEFT's scale for this module. */
  scale: number;
}


/** Every HF module path LoRA can target in the model, layer by layer. */
function hfModules(cfg: ModelConfig): string[] {
  const out = new Set<string>();
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of LORA_TARGETS) {
      try {
        out.add(peftModule(cfg, i, t));
      } catch {
        // a target this model does not have (gate on gpt2)
      }
    }
  }
  return [...out];
}

/**
 * PEFT's files → our LoRA config and canonical tensors. `adapterConfig` is adapter_config.json
 * (object or text); `source` the opened adapter_model.safetensors (a SafetensorsFile) or any
 * TensorSource. Throws WeightsError naming the key and the file.
 */
export async function importPeftAdapter(cfg: ModelConfig, adapterConfig: unknown, source: TensorSource & { metadata?: Readonly<Record<string, string>> }): Promise<{ lora: LoraConfig; tensors: Record<string, Float32Array> }> {
  const file = source.name;
  const fail: (kind: 'adapter' | 'shape' | 'unexpected' | 'missing', tensor: string | undefined, msg: string) => never = (kind, tensor, msg) => {
    throw new WeightsError(kind, file, tensor, msg);
  };
  let ac: unknown = adapterConfig;
  if (typeof ac === 'string') {
    try {
      ac = parseUntrustedJson(ac);
    } catch (e) {
      fail('adapter', undefined, `adapter_config.json: ${(e as Error).message}`);
    }
  }
  if (!isJsonObject(ac)) return fail('adapter', undefined, 'adapter_config.json must be an object');
  const modules = hfModules(cfg);
  const pc = parsePeftConfig(ac, file, PEFT_DEFAULT_TARGETS[cfg.family], modules);
  const scaleOf = (rank: number, alpha: number) => (pc.rslora ? alpha / Math.sqrt(rank) : alpha / rank);

  // Gather A/B per HF module from the tensor names.
  const key = loraKey(cfg);
  const found = new Map<string, { layer: number; mod: string; a?: string; b?: string }>();
  for (const n of source.names()) {
    const m = n.startsWith('base_model.model.') ? key.exec(n.slice('base_model.model.'.length)) : null;
    if (!m) fail('unexpected', n, `is not a LoRA weight of a ${cfg.family} target module`);
    const layer = Number(m[1]);
    if (layer >= cfg.nLayer) fail('unexpected', n, `layer ${layer} does not exist (the config has ${cfg.nLayer})`);
    const id = `${layer}/${m[2]}`;
    const e = found.get(id) ?? { layer, mod: m[2] };
    if (m[3] === 'A') e.a = n;
    else e.b = n;
    found.set(id, e);
  }
  if (found.size === 0) fail('missing', undefined, 'holds no LoRA weights');
  const byTarget = new Map<string, ModuleTensors>(); // key `${layer}/${target}`
  const targets = new Set<LoraTarget>();
  const present = new Set<string>();
  for (const e of found.values()) {
    if (!e.a || !e.b) fail('missing', e.a ?? e.b, `has lora_${e.a ? 'A' : 'B'} but not lora_${e.a ? 'B' : 'A'}`);
    const aInfo = source.info(e.a);
    const bInfo = source.info(e.b);
    const ts = blockLinears(cfg).filter((t) => hfModule(cfg, t) === e.mod);
    const inp = loraTargetDims(cfg, ts[0])[1];
    const out = ts.reduce((s, t) => s + loraTargetDims(cfg, t)[0], 0);
    const rank = aInfo.shape[0];
    const module = peftModule(cfg, e.layer, ts[0]);
    present.add(module);
    if (!pc.targets(module)) fail('unexpected', e.a, `belongs to ${module}, which target_modules / exclude_modules / layers_to_transform do not select (PEFT would not load it)`);
    const { rank: declared, scale } = pc.moduleRank(module);
    if (aInfo.shape.length !== 2 || aInfo.shape[1] !== inp || rank !== declared) fail('shape', e.a, `shape [${aInfo.shape.join(', ')}] is not [${declared}, ${inp}]`);
    if (bInfo.shape.length !== 2 || bInfo.shape[0] !== out || bInfo.shape[1] !== rank) fail('shape', e.b, `shape [${bInfo.shape.join(', ')}] is not [${out}, ${rank}]`);
    const a = await source.getF32(e.a);
    const b = await source.getF32(e.b);
    let row = 0;
    for (const t of ts) {
      const rows = loraTargetDims(cfg, t)[0];
      byTarget.set(`${e.layer}/${t}`, { a, b: b.slice(row * rank, (row + rows) * rank), rank, scale });
      targets.add(t);
      row += rows;
    }
  }
  // lm_head too: a LoRA there would never be zero with random init (its tensors are refused above).
  for (const m of [...modules, 'lm_head']) {
    if (pc.targets(m) && !pc.zeroInit && !present.has(m)) {
      fail('missing', undefined, `target module ${m} (selected by target_modules) has no lora_A/lora_B here, and with init_lora_weights false PEFT would give it random weights`);
    }
  }
  const ours = decodeOwn(cfg, source.metadata?.[META_KEY], byTarget, targets);
  if (ours) return ours;

  const Rstar = Math.max(...[...byTarget.values()].map((m) => m.rank));
  const sBase = scaleOf(pc.r, pc.alpha);
  const lora = validateLora(cfg, { rank: Rstar, alpha: Rstar * sBase, targets: [...targets] });
  const s = loraScale(lora);
  const tensors: Record<string, Float32Array> = {};
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of lora.targets) {
      const [out, inp] = loraTargetDims(cfg, t);
      const a = new Float32Array(Rstar * inp);
      const b = new Float32Array(out * Rstar);
      const m = byTarget.get(`${i}/${t}`);
      if (m) {
        a.set(m.a);
        const k = m.scale / s;
        for (let o = 0; o < out; o++) for (let r = 0; r < m.rank; r++) b[o * Rstar + r] = k === 1 ? m.b[o * m.rank + r] : m.b[o * m.rank + r] * k;
      }
      tensors[`${moduleName(i, t)}.lora_a`] = a;
      tensors[`${moduleName(i, t)}.lora_b`] = b;
    }
  }
  return { lora, tensors };
}

/** Undo our own GPT-2 q/k/v fusion exactly, when the file says it is ours and everything fits. */
function decodeOwn(cfg: ModelConfig, meta: string | undefined, byTarget: Map<string, ModuleTensors>, targets: Set<LoraTarget>): { lora: LoraConfig; tensors: Record<string, Float32Array> } | undefined {
  if (meta === undefined) return undefined;
  let lora: LoraConfig;
  try {
    const m = parseUntrustedJson(meta);
    if (!isJsonObject(m) || m.family !== cfg.family) return undefined;
    lora = validateLora(cfg, { rank: m.rank, alpha: m.alpha, targets: m.targets });
  } catch {
    return undefined;
  }
  const R = lora.rank;
  const group = fusedQkv(cfg);
  const qkv = group.filter((t) => lora.targets.includes(t));
  const expectTargets = new Set<LoraTarget>(lora.targets);
  for (const t of qkv.length > 0 ? group : []) expectTargets.add(t);
  if (expectTargets.size !== targets.size || [...targets].some((t) => !expectTargets.has(t))) return undefined;
  const tensors: Record<string, Float32Array> = {};
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of lora.targets) {
      const m = byTarget.get(`${i}/${t}`);
      const j = qkv.indexOf(t);
      const width = j >= 0 ? qkv.length * R : R;
      if (!m || m.rank !== width) return undefined;
      const [out, inp] = loraTargetDims(cfg, t);
      const b = new Float32Array(out * R);
      const c0 = Math.max(j, 0) * R;
      for (let o = 0; o < out; o++) for (let r = 0; r < R; r++) b[o * R + r] = m.b[o * width + c0 + r];
      tensors[`${moduleName(i, t)}.lora_a`] = m.a.slice(c0 * inp, (c0 + R) * inp);
      tensors[`${moduleName(i, t)}.lora_b`] = b;
    }
  }
  return { lora, tensors };
}

/** W + (α/R)·B·A for every target (new arrays for the adapted weights; others shared with `params`). */
export function mergeLora(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, lora: LoraConfig, tensors: Readonly<Record<string, Float32Array>>): Record<string, Float32Array> {
  checkLoraTensors(cfg, lora, tensors);
  const s = loraScale(lora);
  const R = lora.rank;
  const out: Record<string, Float32Array> = { ...params };
  for (let i = 0; i < cfg.nLayer; i++) {
    for (const t of LORA_TARGETS) {
      if (!lora.targets.includes(t)) continue;
      const m = moduleName(i, t);
      const [o, inp] = loraTargetDims(cfg, t);
      const w = params[`${m}.weight`];
      if (!(w instanceof Float32Array) || w.length !== o * inp) throw new WeightsError('missing', '<params>', `${m}.weight`, 'is missing or has the wrong size');
      const a = tensors[`${m}.lora_a`];
      const b = tensors[`${m}.lora_b`];
      const merged = w.slice();
      for (let r = 0; r < o; r++) {
        for (let c = 0; c < inp; c++) {
          let acc = 0;
          for (let k = 0; k < R; k++) acc += b[r * R + k] * a[k * inp + c];
          merged[r * inp + c] += s * acc;
        }
      }
      out[`${m}.weight`] = merged;
    }
  }
  return out;
}
