// PEFT import follows PEFT's own reading of adapter_config.json. test/goldens/peft/peft_scales.json
// (scripts/goldens/peft_check.py, PEFT 0.21 on tiny twins of these models) lists, per config, every
// module PEFT puts a LoRA layer on with its rank and scale; we build a file with those modules,
// import it, and require our update on every module to be PEFT's scale·B·A (and zero elsewhere).
// Then the fields that would change PEFT's computation are refused by name.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type LoraConfig, type LoraTarget, type ModelConfig, loraTargetDims } from '../../src/model/config.ts';
import { WeightsError } from '../../src/model/errors.ts';
import { moduleName } from '../../src/model/params.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { importPeftAdapter } from '../../src/model/peft.ts';
import { PEFT_DEFAULT_TARGETS, parsePeftConfig } from '../../src/model/peft_config.ts';
import { plainSource } from '../../src/model/weight_names.ts';
import { Rng } from '../../src/util/rng.ts';
import { loraDelta, tinyGpt2, tinyLlama } from './model_fixtures.ts';

interface Golden {
  label: string;
  family: 'gpt2' | 'llama';
  adapterConfig: Record<string, unknown>;
  modules: Record<string, { r: number; scale: number }>;
}
const goldens = JSON.parse(readFileSync(new URL('../goldens/peft/peft_scales.json', import.meta.url), 'utf8')) as { peft: string; configs: Golden[] };

/** Our targets behind an HF module path (the fused GPT-2 c_attn is q, k, v in that row order). */
function targetsOf(module: string): LoraTarget[] {
  const m = /\.(self_attn\.([qkvo])_proj|mlp\.(gate|up|down)_proj|attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)$/.exec(module);
  if (!m) throw new Error(`unknown module ${module}`);
  if (m[2]) return [m[2] as LoraTarget];
  if (m[3]) return [m[3] as LoraTarget];
  return ({ 'attn.c_attn': ['q', 'k', 'v'], 'attn.c_proj': ['o'], 'mlp.c_fc': ['up'], 'mlp.c_proj': ['down'] } as Record<string, LoraTarget[]>)[m[1]];
}
/** Every linear module of a layer stack, by HF path. */
function hfModules(family: 'gpt2' | 'llama', nLayer: number): string[] {
  const per = family === 'gpt2'
    ? ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj'].map((m) => (i: number) => `transformer.h.${i}.${m}`)
    : ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj', 'mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'].map((m) => (i: number) => `model.layers.${i}.${m}`);
  return Array.from({ length: nLayer }, (_, i) => per.map((f) => f(i))).flat();
}
const layerOf = (module: string) => Number(/\.(\d+)\./.exec(module)![1]);


function ourDelta(cfg: ModelConfig, lora: LoraConfig, t: Record<string, Float32Array>, layer: number, target: LoraTarget): Float64Array {
  const [out, inp] = loraTargetDims(cfg, target);
  const m = moduleName(layer, target);
  if (!lora.targets.includes(target)) return new Float64Array(out * inp);
  return loraDelta(t[`${m}.lora_b`], t[`${m}.lora_a`], out, inp, lora.rank, lora.alpha / lora.rank);
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
}

describe(`PEFT import against PEFT ${goldens.peft} itself`, () => {
  for (const g of goldens.configs) {
    it(g.label, async () => {
      const cfg = g.family === 'gpt2' ? tinyGpt2() : tinyLlama();
      const rng = new Rng(11, 0);
      const file: Record<string, { shape: number[]; data: Float32Array }> = {};
      const want = new Map<string, Float64Array>(); // `${layer}/${target}` → PEFT's update
      for (const [module, { r, scale }] of Object.entries(g.modules)) {
        const ts = targetsOf(module);
        const inp = loraTargetDims(cfg, ts[0])[1];
        const out = ts.reduce((s, t) => s + loraTargetDims(cfg, t)[0], 0);
        const a = rng.normalArray(r * inp, 0.5);
        const b = rng.normalArray(out * r, 0.5);
        file[`base_model.model.${module}.lora_A.weight`] = { shape: [r, inp], data: a };
        file[`base_model.model.${module}.lora_B.weight`] = { shape: [out, r], data: b };
        const d = loraDelta(b, a, out, inp, r, scale);
        let row = 0;
        for (const t of ts) {
          const rows = loraTargetDims(cfg, t)[0];
          want.set(`${layerOf(module)}/${t}`, d.slice(row * inp, (row + rows) * inp));
          row += rows;
        }
      }
      // The modules we select, with their ranks and scales, are PEFT's.
      const all = hfModules(g.family, cfg.nLayer);
      const pc = parsePeftConfig(g.adapterConfig, 'adapter_config.json', PEFT_DEFAULT_TARGETS[g.family], all);
      expect(all.filter((m) => pc.targets(m)).sort()).toEqual(Object.keys(g.modules).sort());
      for (const [m, { r, scale }] of Object.entries(g.modules)) {
        const got = pc.moduleRank(m);
        expect(got.rank, m).toBe(r);
        expect(got.scale, m).toBeCloseTo(scale, 12);
      }
      const { lora, tensors } = await importPeftAdapter(cfg, JSON.stringify(g.adapterConfig), plainSource(file, 'adapter_model.safetensors'));
      for (let layer = 0; layer < cfg.nLayer; layer++) {
        for (const t of ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const) {
          if (t === 'gate' && cfg.family === 'gpt2') continue;
          const [out, inp] = loraTargetDims(cfg, t);
          const peft = want.get(`${layer}/${t}`) ?? new Float64Array(out * inp);
          expect(maxDiff(ourDelta(cfg, lora, tensors, layer, t), peft), `layer ${layer} ${t}`).toBeLessThan(1e-5);
        }
      }
    });
  }
});

describe('adapters saved by PEFT itself (save_pretrained, random lora_B): our update is get_delta_weight', () => {
  for (const [dir, family] of [['saved-llama', 'llama'], ['saved-gpt2', 'gpt2']] as const) {
    it(dir, async () => {
      const cfg = family === 'gpt2' ? tinyGpt2() : tinyLlama();
      const at = (f: string) => new URL(`../goldens/peft/${dir}/${f}`, import.meta.url);
      const st = await openSafetensors(new Uint8Array(readFileSync(at('adapter_model.safetensors'))), { name: 'adapter_model.safetensors' });
      const deltas = JSON.parse(readFileSync(at('peft_deltas.json'), 'utf8')) as Record<string, { shape: number[]; data: number[] }>;
      const { lora, tensors } = await importPeftAdapter(cfg, readFileSync(at('adapter_config.json'), 'utf8'), st);
      let checked = 0;
      for (const [module, d] of Object.entries(deltas)) {
        let row = 0;
        for (const t of targetsOf(module)) {
          const [out, inp] = loraTargetDims(cfg, t);
          expect(d.shape[1]).toBe(inp);
          const ours = ourDelta(cfg, lora, tensors, layerOf(module), t);
          expect(ours.some((x) => x !== 0)).toBe(true);
          expect(maxDiff(ours, d.data.slice(row * inp, (row + out) * inp)), `${module} ${t}`).toBeLessThan(1e-6);
          row += out;
          checked++;
        }
      }
      expect(checked).toBe(family === 'gpt2' ? 2 * 4 : 2 * 3);
    });
  }
});

describe('PEFT import refuses by field name what would change the computation', () => {
  const cfg = tinyLlama();
  const rng = new Rng(5, 0);
  const q = (layer: number, r = 2) => ({
    [`base_model.model.model.layers.${layer}.self_attn.q_proj.lora_A.weight`]: { shape: [r, 12], data: rng.normalArray(r * 12) },
    [`base_model.model.model.layers.${layer}.self_attn.q_proj.lora_B.weight`]: { shape: [16, r], data: rng.normalArray(16 * r) },
  });
  const both = { ...q(0), ...q(1) };
  const base = { peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: ['q_proj'] };
  const refusal = async (ac: unknown, tensors: Record<string, { shape: number[]; data: Float32Array }> = both): Promise<WeightsError> => {
    const e = await importPeftAdapter(cfg, ac, plainSource(tensors, 'adapter_model.safetensors')).then(() => null, (err: unknown) => err);
    expect(e).toBeInstanceOf(WeightsError);
    return e as WeightsError;
  };

  it.each([
    [{ use_dora: 'true' }, /use_dora is set \("true"\): DoRA/],
    [{ use_dora: 1 }, /use_dora is set/],
    [{ layer_replication: [[0, 2]] }, /layer_replication is set/],
    [{ alora_invocation_tokens: [7, 8] }, /alora_invocation_tokens is set/],
    [{ lora_bias: true }, /lora_bias is set/],
    [{ trainable_token_indices: [3] }, /trainable_token_indices is set/],
    [{ use_rslora: 'yes' }, /use_rslora must be true or false/],
    [{ init_lora_weights: 'pissa' }, /init_lora_weights "pissa" changes the base weights/],
    [{ some_future_field: { on: true } }, /some_future_field is not a LoraConfig field this importer knows/],
    [{ lora_alpha: null }, /lora_alpha must be a positive number, got null/],
    [{ rank_pattern: { '(?P<m>q_proj)': 2 } }, /rank_pattern key "\(\?P<m>q_proj\)" is not a regex we can run/],
    [{ alpha_pattern: { '(q_proj)\\Z': 2 } }, /alpha_pattern key .* is not a regex we can run/],
    [{ alpha_pattern: { '(.*)*q_proj': 2 } }, /alpha_pattern key "\(\.\*\)\*q_proj" has a quantified group/],
    [{ target_modules: '(q|k)+_proj' }, /target_modules key .* quantified group/],
  ])('%j', async (extra, re) => {
    const e = await refusal({ ...base, ...extra });
    expect(e.kind).toBe('adapter');
    expect(e.message).toMatch(re);
  });

  it('unknown fields left empty, and VeLoRA (backward only), are accepted', async () => {
    const { lora } = await importPeftAdapter(cfg, { ...base, some_future_field: null, other: [], velora_config: { rank: 4 } }, plainSource(both, 'a.safetensors'));
    expect(lora).toMatchObject({ rank: 2, alpha: 4, targets: ['q'] });
  });

  it('a selected module missing from the file: zero with the default init, refused with init_lora_weights false', async () => {
    const { tensors } = await importPeftAdapter(cfg, base, plainSource(q(1), 'a.safetensors'));
    expect(tensors['layers.0.attn.q.lora_b'].every((x) => x === 0)).toBe(true);
    const e = await refusal({ ...base, init_lora_weights: false }, q(1));
    expect(e.kind).toBe('missing');
    expect(e.message).toMatch(/target module model\.layers\.0\.self_attn\.q_proj .*init_lora_weights false/);
    const e2 = await refusal({ ...base, target_modules: ['q_proj', 'lm_head'], init_lora_weights: false });
    expect(e2.message).toMatch(/target module lm_head/);
    // With everything present, init_lora_weights false changes nothing.
    await importPeftAdapter(cfg, { ...base, init_lora_weights: false }, plainSource(both, 'a.safetensors'));
  });

  it('a module the config does not select (PEFT would not load it) is refused', async () => {
    const e = await refusal({ ...base, layers_to_transform: [1] });
    expect(e.kind).toBe('unexpected');
    expect(e.message).toMatch(/model\.layers\.0\.self_attn\.q_proj, which target_modules .* do not select/);
    const e2 = await refusal({ ...base, target_modules: ['k_proj'] });
    expect(e2.kind).toBe('unexpected');
    const e3 = await refusal({ ...base, exclude_modules: 'model\\.layers\\.1\\..*' });
    expect(e3.message).toMatch(/layers\.1\.self_attn\.q_proj/);
  });
});
