import { describe, expect, it } from 'vitest';
import { WeightsError } from '../../src/model/errors.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { exportHfWeights, importHfWeights, planHfImport, plainSource, shardedSource, type TensorSource } from '../../src/model/weight_names.ts';
import { parameterSpecs } from '../../src/model/params.ts';
import { randomParams, tinyGpt2, tinyLlama } from './model_fixtures.ts';

function kindOf(f: () => unknown): { kind: string; tensor?: string; file: string } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(WeightsError);
    return e as WeightsError;
  }
  throw new Error('expected a WeightsError');
}

describe('Hugging Face GPT-2 names and layouts', () => {
  const cfg = tinyGpt2();
  const C = cfg.dModel;

  it('maps a hand-built Conv1D checkpoint: y = x·W + b in HF equals our W [out, in] linear, q/k/v split in order', async () => {
    const p = randomParams(cfg, 1);
    const hf = Object.fromEntries(exportHfWeights(cfg, p).map((t) => [t.name, t]));
    // Build c_attn independently: column j of HF's [C, 3C] is output j.
    const W = Float32Array.from({ length: C * 3 * C }, (_, k) => Math.sin(k));
    const bias = Float32Array.from({ length: 3 * C }, (_, k) => k / 10);
    hf['transformer.h.0.attn.c_attn.weight'] = { ...hf['transformer.h.0.attn.c_attn.weight'], data: W };
    hf['transformer.h.0.attn.c_attn.bias'] = { ...hf['transformer.h.0.attn.c_attn.bias'], data: bias };
    const ours = await importHfWeights(cfg, plainSource(hf, 'hand.safetensors'));
    const x = Float32Array.from({ length: C }, (_, i) => Math.cos(i));
    for (let j = 0; j < 3 * C; j++) {
      let hfY = bias[j];
      for (let i = 0; i < C; i++) hfY += x[i] * W[i * 3 * C + j];
      const t = ['q', 'k', 'v'][Math.floor(j / C)];
      const o = j % C;
      let ourY = ours[`layers.0.attn.${t}.bias`][o];
      for (let i = 0; i < C; i++) ourY += ours[`layers.0.attn.${t}.weight`][o * C + i] * x[i];
      expect(ourY).toBeCloseTo(hfY, 5);
    }
    // c_fc [C, F] → up [F, C]
    const F = cfg.dFF;
    expect(hf['transformer.h.1.mlp.c_fc.weight'].shape).toEqual([C, F]);
    expect(hf['transformer.h.1.mlp.c_fc.weight'].data[2 * F + 5]).toBe(p['layers.1.mlp.up.weight'][5 * C + 2]);
    expect(hf['transformer.h.1.mlp.c_proj.weight'].shape).toEqual([F, C]);
    expect(hf['transformer.h.1.mlp.c_proj.weight'].data[7 * C + 3]).toBe(p['layers.1.mlp.down.weight'][3 * F + 7]);
  });

  it('round-trips through a safetensors file exactly', async () => {
    const p = randomParams(cfg, 2);
    const tensors = exportHfWeights(cfg, p);
    expect(tensors.map((t) => t.name)).toContain('transformer.h.1.attn.c_attn.weight');
    expect(tensors.find((t) => t.name === 'transformer.h.1.attn.c_attn.weight')?.shape).toEqual([C, 3 * C]);
    const f = await openSafetensors(writeSafetensors(tensors), { name: 'gpt2.safetensors' });
    const back = await importHfWeights(cfg, f);
    expect(Object.keys(back).sort()).toEqual(parameterSpecs(cfg).map((s) => s.name).sort());
    for (const [k, v] of Object.entries(p)) expect(back[k], k).toEqual(v);
  });

  it("reads the original checkpoint's style: no prefix, attn.bias buffers, F16 storage, a tied lm_head copy", async () => {
    const p = randomParams(cfg, 3);
    const tensors = exportHfWeights(cfg, p).map((t) => ({ ...t, name: t.name.replace(/^transformer\./, ''), dtype: 'F16' as const }));
    tensors.push({ name: 'h.0.attn.bias', shape: [1, 1, 4, 4], dtype: 'F16', data: new Float32Array(16).fill(1) });
    tensors.push({ name: 'h.1.attn.masked_bias', shape: [], dtype: 'F16', data: Float32Array.of(-1e4) });
    tensors.push({ name: 'lm_head.weight', shape: [cfg.vocabSize, C], dtype: 'F16', data: p['tok_emb.weight'] });
    const back = await importHfWeights(cfg, await openSafetensors(writeSafetensors(tensors)));
    expect(back['layers.1.attn.v.weight'][3]).toBeCloseTo(p['layers.1.attn.v.weight'][3], 2);
  });
});

describe('Hugging Face Llama/Qwen2 names', () => {
  it('round-trips with q/k/v biases and an untied head; names as in transformers', async () => {
    const cfg = tinyLlama();
    const p = randomParams(cfg, 4);
    const tensors = exportHfWeights(cfg, p);
    const names = tensors.map((t) => t.name);
    for (const n of ['model.embed_tokens.weight', 'model.layers.0.input_layernorm.weight', 'model.layers.0.self_attn.k_proj.bias', 'model.layers.1.post_attention_layernorm.weight', 'model.layers.1.mlp.gate_proj.weight', 'model.norm.weight', 'lm_head.weight']) {
      expect(names).toContain(n);
    }
    expect(names).not.toContain('model.layers.0.self_attn.o_proj.bias');
    const q = tensors.find((t) => t.name === 'model.layers.0.self_attn.k_proj.weight');
    expect(q?.shape).toEqual([cfg.nKvHead * cfg.headDim, cfg.dModel]);
    expect(q?.data).toEqual(p['layers.0.attn.k.weight']);
    const back = await importHfWeights(cfg, await openSafetensors(writeSafetensors(tensors)));
    for (const [k, v] of Object.entries(p)) expect(back[k], k).toEqual(v);
  });

  it('reads shards as one checkpoint, and refuses a name present in two shards', async () => {
    const cfg = tinyLlama({ tieEmbeddings: true });
    const p = randomParams(cfg, 5);
    const tensors = exportHfWeights(cfg, p);
    const half = Math.floor(tensors.length / 2);
    const s1 = await openSafetensors(writeSafetensors(tensors.slice(0, half)), { name: 'model-00001-of-00002.safetensors' });
    const s2 = await openSafetensors(writeSafetensors(tensors.slice(half)), { name: 'model-00002-of-00002.safetensors' });
    const back = await importHfWeights(cfg, shardedSource([s1, s2]));
    expect(back['final_norm.weight']).toEqual(p['final_norm.weight']);
    const dup = await openSafetensors(writeSafetensors(tensors.slice(0, 1)), { name: 'dup.safetensors' });
    expect(kindOf(() => shardedSource([s1, dup])).kind).toBe('unexpected');
  });
});

describe('bad checkpoints fail before any data is read', () => {
  const cfg = tinyLlama();
  const p = randomParams(cfg, 6);
  const hf = Object.fromEntries(exportHfWeights(cfg, p).map((t) => [t.name, t]));
  const counting = (tensors: Record<string, { shape: readonly number[]; data: Float32Array }>, dtype = 'F32') => {
    const src = plainSource(tensors, 'bad.safetensors');
    const counted: TensorSource & { reads: number } = {
      ...src, reads: 0,
      info: (n) => ({ ...src.info(n), dtype: n.endsWith('q_proj.weight') ? dtype : 'F32' }),
      getF32: (n) => (counted.reads++, src.getF32(n)),
    };
    return counted;
  };
  it.each([
    ['missing', () => { const { ['model.layers.1.mlp.up_proj.weight']: _, ...rest } = hf; return counting(rest); }, 'model.layers.1.mlp.up_proj.weight'],
    ['shape', () => counting({ ...hf, 'model.layers.0.self_attn.o_proj.weight': { shape: [12, 8], data: new Float32Array(96) } }), 'model.layers.0.self_attn.o_proj.weight'],
    ['unexpected', () => counting({ ...hf, 'model.layers.0.mlp.up_proj.bias': { shape: [18], data: new Float32Array(18) } }), 'model.layers.0.mlp.up_proj.bias'],
    ['dtype', () => counting(hf, 'I32'), 'model.layers.0.self_attn.q_proj.weight'],
    ['missing', () => counting({ 'wte.weight': hf['model.embed_tokens.weight'] }), 'model.embed_tokens.weight'],
  ])('%s tensor: WeightsError naming it and the file', (kind, make, tensor) => {
    const src = make();
    const err = kindOf(() => planHfImport(cfg, src));
    expect(err).toMatchObject({ kind, tensor, file: 'bad.safetensors' });
    expect(src.reads).toBe(0);
  });

  it('a config with far more layers than the file refuses from the names alone, before building the expected entries', () => {
    // One embedding tensor against 200000 layers: building every expected entry first took 54 s and 1.7 GB.
    const huge = { ...cfg, nLayer: 200_000 };
    const src = counting({ 'model.embed_tokens.weight': hf['model.embed_tokens.weight'] });
    const err = kindOf(() => planHfImport(huge, src));
    expect(err).toMatchObject({ kind: 'missing', tensor: 'model.layers.0.input_layernorm.weight', file: 'bad.safetensors' });
    expect((err as unknown as Error).message).toMatch(/200000 layers, the checkpoint's highest layer index is -1/);
    // The file's two layers against a config of three: the first tensor of layer 2 is named.
    const three = kindOf(() => planHfImport({ ...cfg, nLayer: 3 }, counting(hf)));
    expect(three).toMatchObject({ kind: 'missing', tensor: 'model.layers.2.input_layernorm.weight' });
    const gpt2 = tinyGpt2();
    const g = Object.fromEntries(exportHfWeights(gpt2, randomParams(gpt2, 2)).map((t) => [t.name, t]));
    expect(kindOf(() => planHfImport({ ...gpt2, nLayer: gpt2.nLayer + 1 }, plainSource(g, 'g.safetensors')))).toMatchObject({ tensor: `transformer.h.${gpt2.nLayer}.ln_1.weight` });
  });
});
