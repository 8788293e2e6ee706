/**
 * adapter_config.json read the way PEFT (0.21, LoraConfig) reads it, for importing a LoRA
 * adapter: the same defaults (r = 8, lora_alpha = 8), the same module selection
 * (`check_target_module_exists`: target_modules as a list of names or suffixes, or as one regex
 * that must match the whole module name, "all-linear"; exclude_modules; layers_to_transform with
 * layers_pattern) and the same per-module rank and alpha (`get_pattern_key`: the first
 * rank_pattern / alpha_pattern key, in file order, for which `(.*\.)?(<key>)$` matches the module
 * name from its start). A pattern key that matches no module is ignored, as PEFT ignores it
 * (with a warning). scripts/goldens/peft_check.py records PEFT's own ranks and scales for such
 * configs in test/goldens/peft/, and test/unit/peft_semantics.test.ts compares.
 *
 * Everything that would make PEFT compute something else is refused, naming the field: DoRA,
 * layer replication, aLoRA, QA-LoRA, LoRA biases, trained token rows, modules_to_save,
 * target_parameters, Megatron, the MonteCLoRA / BD-LoRA / Arrow / KaSA variants, an
 * initialisation that rewrites the base weights (PiSSA, OLoRA, LoftQ, EVA, CorDA, ...), and any
 * field this reader does not know that is set to something other than an empty value (a newer
 * PEFT may give it meaning). VeLoRA changes only the backward pass and is accepted.
 *
 * Pattern keys and target / exclude regexes are Python regexes from a file. They run here as
 * JavaScript regexes with the `u` flag, whose syntax errors catch the Python-only constructs
 * ((?P<..>), inline flags, \Z, possessive quantifiers, ...): such a key is refused by name.
 * So is a quantified group that holds a quantifier or an alternation — the shapes that can
 * backtrack exponentially — since a hostile file must not hang the importer.
 */
import { ARCHS } from './arch.ts';
import type { ModelFamily } from './config.ts';
import { WeightsError } from './errors.ts';
import { isJsonObject } from './json.ts';

/** PEFT's LoraConfig defaults (peft 0.21). */
export const PEFT_DEFAULT_R = 8;
export const PEFT_DEFAULT_ALPHA = 8;

/**
 * PEFT's default target modules per family (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING),
 * as the architecture records hold them (arch.ts hf.peftDefaultTargets).
 */
export const PEFT_DEFAULT_TARGETS: Readonly<Record<ModelFamily, readonly string[]>> = Object.freeze(
  Object.fromEntries(Object.values(ARCHS).map((a) => [a.family, a.hf.peftDefaultTargets])) as Record<ModelFamily, readonly string[]>,
);

/** Fields that change what PEFT computes: refused when set (Python-truthy). */
const REFUSED_WHEN_SET: Readonly<Record<string, string>> = {
  use_dora: 'DoRA (weight-decomposed LoRA) is not supported',
  layer_replication: 'layer replication is not supported',
  alora_invocation_tokens: 'aLoRA (activated after invocation tokens) is not supported',
  use_qalora: 'QA-LoRA is not supported',
  lora_bias: 'trained LoRA biases are not supported',
  modules_to_save: 'modules_to_save (fully trained modules) is not supported',
  trainable_token_indices: 'trained token embeddings are not supported',
  target_parameters: 'LoRA on parameters (target_parameters) is not supported',
  megatron_config: 'Megatron parallel layers are not supported',
  monteclora_config: 'MonteCLoRA is not supported',
  use_bdlora: 'BD-LoRA is not supported',
  arrow_config: 'Arrow routing is not supported',
  kasa_config: 'KaSA is not supported',
};

/** Fields that do not change the forward (or are read below). */
const KNOWN = new Set([
  'peft_type', 'task_type', 'auto_mapping', 'peft_version', 'base_model_name_or_path', 'revision', 'inference_mode', 'r', 'lora_alpha',
  'target_modules', 'exclude_modules', 'lora_dropout', 'fan_in_fan_out', 'bias', 'use_rslora', 'init_lora_weights', 'layers_to_transform',
  'layers_pattern', 'rank_pattern', 'alpha_pattern', 'megatron_core', 'loftq_config', 'eva_config', 'corda_config', 'lora_ga_config',
  'velora_config', 'qalora_group_size', 'runtime_config', 'ensure_weight_tying', ...Object.keys(REFUSED_WHEN_SET),
]);

/** Python's truthiness of a JSON value. */
function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isJsonObject(v)) return Object.keys(v).length > 0;
  return true;
}

export interface PeftLoraConfig {
  readonly r: number;
  readonly alpha: number;
  readonly rslora: boolean;
  /** Whether init_lora_weights leaves lora_B zero, so a targeted module missing from the file adds nothing. */
  readonly zeroInit: boolean;
  /** Whether PEFT puts a LoRA layer on the module with this full name (e.g. "model.layers.0.self_attn.q_proj"). */
  targets(module: string): boolean;
  /** PEFT's rank, alpha and scale for a module. */
  moduleRank(module: string): { rank: number; alpha: number; scale: number };
}

/** Refuses regexes that can backtrack exponentially: a quantified group holding a quantifier or `|`. */
function nestedQuantifier(src: string): boolean {
  const groups: boolean[] = [];
  let risky = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (c === '[') {
      for (i++; i < src.length && src[i] !== ']'; i++) if (src[i] === '\\') i++;
    } else if (c === '(') groups.push(false);
    else if (c === ')') {
      const inner = groups.pop() ?? false;
      const next = src[i + 1];
      if (inner && (next === '*' || next === '+' || next === '?' || next === '{')) risky = true;
      if (groups.length > 0) groups[groups.length - 1] ||= inner;
    } else if ((c === '*' || c === '+' || c === '?' || c === '{' || c === '|') && groups.length > 0) groups[groups.length - 1] = true;
  }
  return risky;
}

export function parsePeftConfig(ac: Record<string, unknown>, file: string, defaultTargets: readonly string[], linearModules: readonly string[]): PeftLoraConfig {
  const fail = (field: string, msg: string): never => {
    throw new WeightsError('adapter', file, undefined, `adapter_config.json: ${field} ${msg}`);
  };
  const regex = (field: string, key: string, wrap: (k: string) => string): RegExp => {
    if (key.length > 1000) fail(field, `key of ${key.length} characters is too long`);
    if (nestedQuantifier(key)) fail(field, `key ${JSON.stringify(key)} has a quantified group holding a quantifier or "|" (could backtrack for ever); refused`);
    try {
      return new RegExp(wrap(key), 'u');
    } catch (e) {
      return fail(field, `key ${JSON.stringify(key)} is not a regex we can run the way Python does (${(e as Error).message})`);
    }
  };
  if (ac.peft_type !== 'LORA') fail('peft_type', `${JSON.stringify(ac.peft_type)} is not supported (LORA)`);
  for (const [k, why] of Object.entries(REFUSED_WHEN_SET)) if (truthy(ac[k])) fail(k, `is set (${JSON.stringify(ac[k])}): ${why}`);
  for (const [k, v] of Object.entries(ac)) if (!KNOWN.has(k) && truthy(v)) fail(k, `is not a LoraConfig field this importer knows (it may change the computation); refused`);
  if (ac.bias !== undefined && ac.bias !== 'none') fail('bias', `${JSON.stringify(ac.bias)} is not supported (none)`);
  for (const k of ['use_rslora', 'fan_in_fan_out'] as const) if (ac[k] !== undefined && ac[k] !== null && typeof ac[k] !== 'boolean') fail(k, `must be true or false, got ${JSON.stringify(ac[k])}`);
  const init = ac.init_lora_weights ?? true;
  if (init !== true && init !== false && init !== 'gaussian') fail('init_lora_weights', `${JSON.stringify(init)} changes the base weights or the initial adapter; refused (true, false or "gaussian")`);

  const r = ac.r === undefined ? PEFT_DEFAULT_R : ac.r;
  const alpha = ac.lora_alpha === undefined ? PEFT_DEFAULT_ALPHA : ac.lora_alpha;
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r <= 0) return fail('r', `must be a positive integer, got ${JSON.stringify(r)}`);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha <= 0) return fail('lora_alpha', `must be a positive number, got ${JSON.stringify(alpha)}`);
  const rslora = ac.use_rslora === true;

  const patterns = (field: 'rank_pattern' | 'alpha_pattern', ok: (v: unknown) => boolean, what: string): [RegExp, number][] => {
    const m = ac[field];
    if (m === undefined || m === null) return [];
    if (!isJsonObject(m)) return fail(field, 'must be an object');
    // (.*\.)?(<key>)$ matched from the start, as Python's re.match; ^(?:...) keeps a key's own
    // top-level "|" inside that anchor exactly as Python would.
    return Object.entries(m).map(([k, v]) => {
      if (!ok(v)) fail(field, `value of ${JSON.stringify(k)} must be ${what}, got ${JSON.stringify(v)}`);
      return [regex(field, k, (key) => `^(?:(.*\\.)?(${key})$)`), v as number];
    });
  };
  const rankPattern = patterns('rank_pattern', (v) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0, 'a positive integer');
  const alphaPattern = patterns('alpha_pattern', (v) => typeof v === 'number' && Number.isFinite(v) && v > 0, 'a positive number');
  const first = (ps: [RegExp, number][], module: string): number | undefined => ps.find(([re]) => re.test(module))?.[1];

  // target_modules / exclude_modules: a string is one regex matched against the whole name
  // ("all-linear": every linear layer but the output head, by full name); a list matches a name
  // exactly, or as a dot-separated suffix — and only the suffix match is then filtered by layer.
  const tm0 = ac.target_modules ?? defaultTargets;
  if (!(typeof tm0 === 'string' || (Array.isArray(tm0) && tm0.every((x) => typeof x === 'string')))) fail('target_modules', 'must be a string or a list of strings');
  const tm = tm0 as string | readonly string[];
  const em = truthy(ac.exclude_modules) ? ac.exclude_modules : undefined;
  if (!(em === undefined || typeof em === 'string' || (Array.isArray(em) && em.every((x) => typeof x === 'string')))) fail('exclude_modules', 'must be a string or a list of strings');
  const targetRe = typeof tm === 'string' && tm.toLowerCase() !== 'all-linear' ? regex('target_modules', tm, (key) => `^(?:${key})$`) : undefined;
  const excludeRe = typeof em === 'string' ? regex('exclude_modules', em, (key) => `^(?:${key})$`) : undefined;
  const suffixOf = (list: readonly string[], m: string) => list.some((k) => m.endsWith(`.${k}`));
  const excluded = (m: string) => (excludeRe ? excludeRe.test(m) : Array.isArray(em) ? em.includes(m) || suffixOf(em as string[], m) : false);

  const ltt = ac.layers_to_transform;
  if (!(ltt === undefined || ltt === null || Number.isSafeInteger(ltt) || (Array.isArray(ltt) && ltt.every(Number.isSafeInteger)))) {
    fail('layers_to_transform', `must be an integer or a list of integers, got ${JSON.stringify(ltt)}`);
  }
  const lp = ac.layers_pattern as string | string[] | null | undefined;
  if (!(lp === undefined || lp === null || typeof lp === 'string' || (Array.isArray(lp) && lp.every((x) => typeof x === 'string')))) {
    fail('layers_pattern', `must be a string or a list of strings, got ${JSON.stringify(lp)}`);
  }
  // PEFT reads the layer index as the first number after the layers_pattern segment (default: the
  // first numbered segment); layer indexes apply only when target_modules is a list.
  const layerRes = lp === undefined || lp === null || lp.length === 0
    ? [/^(?:.*?\.[^.]*\.(\d+)\.)/u]
    : (typeof lp === 'string' ? [lp] : (lp as string[])).map((p) => regex('layers_pattern', p, (key) => `^(?:(?:^|.*?\\.)${key}\\.(\\d+)\\.)`));
  const usesLayers = ltt !== undefined && ltt !== null && !(Array.isArray(ltt) && ltt.length === 0);
  const inLayers = (m: string): boolean => {
    let idx: string | undefined;
    for (const re of layerRes) {
      idx = re.exec(m)?.[1];
      if (idx !== undefined) break;
    }
    if (idx === undefined) return false;
    return Array.isArray(ltt) ? ltt.includes(Number(idx)) : Number(idx) === ltt;
  };

  const scaleOf = (rank: number, a: number) => (rslora ? a / Math.sqrt(rank) : a / rank);
  return {
    r,
    alpha,
    rslora,
    zeroInit: init !== false,
    targets: (m) => {
      if (excluded(m)) return false;
      if (typeof tm === 'string') return targetRe ? targetRe.test(m) : linearModules.includes(m);
      if (tm.includes(m)) return true;
      return suffixOf(tm, m) && (!usesLayers || inLayers(m));
    },
    moduleRank: (m) => {
      const rank = first(rankPattern, m) ?? r;
      const a = first(alphaPattern, m) ?? alpha;
      return { rank, alpha: a, scale: scaleOf(rank, a) };
    },
  };
}
