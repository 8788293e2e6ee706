// PEFT adapters: names, layouts and adapter_config.json of an export; exact round trips; imports of
// adapters shaped as PEFT writes them (fused GPT-2 c_attn, per-module ranks, rsLoRA, some layers
// only) checked by the function they compute — ΔW = scale·B·A per module — not by their tensors.
import { describe, expect, it } from 'vitest';
import { type LoraConfig, type LoraTarget, type ModelConfig, loraTargetDims, validateLora } from '../../src/model/config.ts';
import { WeightsError } from '../../src/model/errors.ts';
import { moduleName } from '../../src/model/params.ts';
import { exportPeftAdapter, importPeftAdapter, mergeLora } from '../../src/model/peft.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { plainSource } from '../../src/model/weight_names.ts';
import { Rng } from '../../src/util/rng.ts';
import { loraDelta, randomLora, randomParams, tinyGpt2, tinyLlama } from './model_fixtures.ts';


function ourDelta(cfg: ModelConfig, lora: LoraConfig, t: Record<string, Float32Array>, layer: number, target: LoraTarget): Float64Array {
  const [out, inp] = loraTargetDims(cfg, target);
  const m = moduleName(layer, target);
  return loraDelta(t[`${m}.lora_b`], t[`${m}.lora_a`], out, inp, lora.rank, lora.alpha / lora.rank);
}

function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-6): void {
  expect(got.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  expect(worst).toBeLessThan(tol);
}

async function roundTrip(files: { adapterConfig: Record<string, unknown>; tensors: Parameters<typeof writeSafetensors>[0]; metadata?: Record<string, string> }, cfg: ModelConfig) {
  const st = await openSafetensors(writeSafetensors(files.tensors, { metadata: files.metadata }), { name: 'adapter_model.safetensors' });
  return importPeftAdapter(cfg, JSON.stringify(files.adapterConfig), st);
}

describe('PEFT export', () => {
  it('Llama/Qwen2: PEFT key names, [r, in] / [out, r] layouts, adapter_config.json fields; exact round trip', async () => {
    const cfg = tinyLlama();
    const lora = randomLora(cfg, { targets: ['q', 'k', 'down'], rank: 3, alpha: 6 }, 1);
    const out = exportPeftAdapter(cfg, lora.config, lora.tensors, 'Qwen/Qwen2.5-0.5B');
    const byName = Object.fromEntries(out.tensors.map((t) => [t.name, t]));
    expect(byName['base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight'].shape).toEqual([3, cfg.dModel]);
    expect(byName['base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight'].shape).toEqual([cfg.nKvHead * cfg.headDim, 3]);
    expect(byName['base_model.model.model.layers.0.mlp.down_proj.lora_A.weight'].data).toEqual(lora.tensors['layers.0.mlp.down.lora_a']);
    expect(out.tensors.length).toBe(2 * 3 * cfg.nLayer);
    expect(out.adapterConfig).toMatchObject({
      peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 3, lora_alpha: 6, bias: 'none', fan_in_fan_out: false,
      base_model_name_or_path: 'Qwen/Qwen2.5-0.5B', target_modules: ['down_proj', 'k_proj', 'q_proj'], rank_pattern: {}, use_dora: false,
    });
    const back = await roundTrip(out, cfg);
    expect(back.lora).toEqual(lora.config);
    for (const [k, v] of Object.entries(lora.tensors)) expect(back.tensors[k], k).toEqual(v);
  });

  it('GPT-2: q/k/v adapters become one c_attn adapter computing the same update; exact round trip', async () => {
    const cfg = tinyGpt2();
    const C = cfg.dModel;
    const lora = randomLora(cfg, { targets: ['q', 'v', 'o', 'up'], rank: 2, alpha: 5 }, 2);
    const out = exportPeftAdapter(cfg, lora.config, lora.tensors, 'openai-community/gpt2');
    expect(out.adapterConfig).toMatchObject({
      r: 2, lora_alpha: 5, fan_in_fan_out: true, target_modules: ['attn.c_proj', 'c_attn', 'c_fc'], rank_pattern: { c_attn: 4 }, alpha_pattern: { c_attn: 10 },
    });
    const byName = Object.fromEntries(out.tensors.map((t) => [t.name, t]));
    const A = byName['base_model.model.transformer.h.1.attn.c_attn.lora_A.weight'];
    const B = byName['base_model.model.transformer.h.1.attn.c_attn.lora_B.weight'];
    expect(A.shape).toEqual([4, C]);
    expect(B.shape).toEqual([3 * C, 4]);
    // PEFT's c_attn update (α_c / r_c)·B·A, as [3C out, C in], equals ours on q and v, and 0 on k.
    const peft = loraDelta(B.data, A.data, 3 * C, C, 4, 10 / 4);
    expectClose(peft.subarray(0, C * C), ourDelta(cfg, lora.config, lora.tensors, 1, 'q'));
    expectClose(peft.subarray(C * C, 2 * C * C), new Float64Array(C * C));
    expectClose(peft.subarray(2 * C * C), ourDelta(cfg, lora.config, lora.tensors, 1, 'v'));
    expect(byName['base_model.model.transformer.h.0.mlp.c_fc.lora_B.weight'].shape).toEqual([cfg.dFF, 2]);
    const back = await roundTrip(out, cfg);
    expect(back.lora).toEqual(lora.config);
    for (const [k, v] of Object.entries(lora.tensors)) expect(back.tensors[k], k).toEqual(v);
  });
});

describe('PEFT import of adapters written elsewhere', () => {
  it('GPT-2 with a fused c_attn (rank 4), c_proj at rank 2 via rank_pattern, rsLoRA: same updates', async () => {
    const cfg = tinyGpt2();
    const C = cfg.dModel;
    const rng = new Rng(3, 0);
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    const put = (m: string, r: number, out: number, inp: number) => {
      tensors[`base_model.model.transformer.h.${m}.lora_A.weight`] = { shape: [r, inp], data: rng.normalArray(r * inp, 0.3) };
      tensors[`base_model.model.transformer.h.${m}.lora_B.weight`] = { shape: [out, r], data: rng.normalArray(out * r, 0.3) };
    };
    for (const l of [0, 1]) {
      put(`${l}.attn.c_attn`, 4, 3 * C, C);
      put(`${l}.mlp.c_proj`, 2, C, cfg.dFF);
    }
    const ac = { peft_type: 'LORA', r: 4, lora_alpha: 8, use_rslora: true, rank_pattern: { 'mlp.c_proj': 2 }, alpha_pattern: { 'mlp.c_proj': 3 }, target_modules: ['c_attn', 'mlp.c_proj'], fan_in_fan_out: true, bias: 'none' };
    const { lora, tensors: ours } = await importPeftAdapter(cfg, ac, plainSource(tensors, 'adapter_model.safetensors'));
    expect(lora.targets).toEqual(['q', 'k', 'v', 'down']);
    expect(lora.rank).toBe(4);
    for (const l of [0, 1]) {
      const fused = loraDelta(tensors[`base_model.model.transformer.h.${l}.attn.c_attn.lora_B.weight`].data, tensors[`base_model.model.transformer.h.${l}.attn.c_attn.lora_A.weight`].data, 3 * C, C, 4, 8 / Math.sqrt(4));
      ['q', 'k', 'v'].forEach((t, j) => expectClose(ourDelta(cfg, lora, ours, l, t as LoraTarget), fused.subarray(j * C * C, (j + 1) * C * C), 1e-5));
      const down = loraDelta(tensors[`base_model.model.transformer.h.${l}.mlp.c_proj.lora_B.weight`].data, tensors[`base_model.model.transformer.h.${l}.mlp.c_proj.lora_A.weight`].data, C, cfg.dFF, 2, 3 / Math.sqrt(2));
      expectClose(ourDelta(cfg, lora, ours, l, 'down'), down, 1e-5);
    }
  });

  it('Llama with adapters on one layer only: the other layer gets a zero update', async () => {
    const cfg = tinyLlama();
    const src = randomLora(cfg, { targets: ['v'], rank: 2, alpha: 2 }, 4);
    const out = exportPeftAdapter(cfg, src.config, src.tensors, 'base');
    const onlyLayer1 = out.tensors.filter((t) => t.name.includes('layers.1.'));
    const st = plainSource(Object.fromEntries(onlyLayer1.map((t) => [t.name, t])), 'adapter_model.safetensors');
    const back = await importPeftAdapter(cfg, { ...out.adapterConfig, layers_to_transform: [1] }, st);
    expect(back.tensors['layers.0.attn.v.lora_b'].every((x) => x === 0)).toBe(true);
    expect(back.tensors['layers.1.attn.v.lora_a']).toEqual(src.tensors['layers.1.attn.v.lora_a']);
  });

  const cfg = tinyLlama();
  const good = exportPeftAdapter(cfg, validateLora(cfg, { rank: 2, alpha: 4, targets: ['q'] }), randomLora(cfg, { targets: ['q'] }, 5).tensors, 'base');
  const goodTensors = Object.fromEntries(good.tensors.map((t) => [t.name, t]));
  it.each([
    ['adapter', { ...good.adapterConfig, peft_type: 'IA3' }, goodTensors],
    ['adapter', { ...good.adapterConfig, use_dora: true }, goodTensors],
    ['adapter', { ...good.adapterConfig, bias: 'lora_only' }, goodTensors],
    ['adapter', { ...good.adapterConfig, modules_to_save: ['lm_head'] }, goodTensors],
    ['adapter', '{"peft_type": "LORA", "r": 2, "__proto__": {}}', goodTensors],
    ['unexpected', good.adapterConfig, { ...goodTensors, 'base_model.model.model.embed_tokens.lora_embedding_A': { shape: [2, 41], data: new Float32Array(82) } }],
    ['unexpected', good.adapterConfig, { ...goodTensors, 'base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight': { shape: [2, 12], data: new Float32Array(24) } }],
    ['missing', good.adapterConfig, Object.fromEntries(Object.entries(goodTensors).filter(([k]) => !k.endsWith('layers.0.self_attn.q_proj.lora_B.weight')))],
    ['shape', good.adapterConfig, { ...goodTensors, 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { shape: [3, 12], data: new Float32Array(36) } }],
    ['shape', { ...good.adapterConfig, r: 5 }, goodTensors],
  ])('refuses with WeightsError %s', async (kind, ac, tensors) => {
    const err = await importPeftAdapter(cfg, ac, plainSource(tensors as Record<string, { shape: number[]; data: Float32Array }>, 'adapter_model.safetensors')).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(WeightsError);
    expect(err).toMatchObject({ kind, file: 'adapter_model.safetensors' });
  });
});

describe('mergeLora', () => {
  it('adds (α/R)·B·A to the adapted weights and leaves the rest alone', () => {
    const cfg = tinyGpt2();
    const p = randomParams(cfg, 6);
    const lora = randomLora(cfg, { targets: ['k', 'down'], rank: 2, alpha: 3 }, 7);
    const m = mergeLora(cfg, p, lora.config, lora.tensors);
    const d = ourDelta(cfg, lora.config, lora.tensors, 1, 'k');
    expectClose(m['layers.1.attn.k.weight'], p['layers.1.attn.k.weight'].map((w, i) => w + d[i]), 1e-6);
    expect(m['layers.1.attn.q.weight']).toBe(p['layers.1.attn.q.weight']);
    expect(p['layers.1.attn.k.weight']).not.toEqual(m['layers.1.attn.k.weight']);
  });
});
