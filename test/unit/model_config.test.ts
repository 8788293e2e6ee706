import { describe, expect, it } from 'vitest';
import { type LoraConfig, type ModelConfig, validateConfig, validateLora } from '../../src/model/config.ts';
import { ModelConfigError } from '../../src/model/errors.ts';
import { estimateTrainingMemory } from '../../src/model/memory.ts';
import { countLoraParameters, countParameters, loraSpecs, parameterSpecs } from '../../src/model/params.ts';
import { PRESETS, preset } from '../../src/model/presets.ts';
import { ConfigError } from '../../src/errors.ts';

function fieldOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelConfigError);
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ModelConfigError).field;
  }
  throw new Error('expected a ModelConfigError');
}

describe('parameter counts', () => {
  it('GPT-2 small has 124,439,808 parameters (tied embeddings)', () => {
    expect(countParameters(preset('gpt2-small'))).toBe(124_439_808);
  });

  it("Qwen2.5-0.5B's config has 494,032,768 parameters", () => {
    expect(countParameters(preset('qwen2.5-0.5b'))).toBe(494_032_768);
  });

  it('matches the closed form for GPT-2 and Llama, tied and untied, with and without a value head', () => {
    const g = preset('tiny-gpt2');
    const { vocabSize: V, dModel: C, dFF: F, maxSeqLen: P, nLayer: L } = g;
    const gpt2Block = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * F + F) + (F * C + C);
    expect(countParameters(g)).toBe(V * C + P * C + L * gpt2Block + 2 * C);
    expect(countParameters(g, { valueHead: true })).toBe(countParameters(g) + C + 1);
    expect(countParameters({ ...g, tieEmbeddings: false })).toBe(countParameters(g) + V * C);
    const l = preset('tiny-llama');
    const q = l.nHead * l.headDim;
    const kv = l.nKvHead * l.headDim;
    const llamaBlock = 2 * l.dModel + (l.dModel * q + q) + 2 * (l.dModel * kv + kv) + q * l.dModel + 3 * l.dModel * l.dFF;
    expect(countParameters(l)).toBe(2 * l.vocabSize * l.dModel + l.nLayer * llamaBlock + l.dModel);
  });

  it('counts LoRA parameters as PEFT does for separate modules (Qwen2.5-0.5B, r=8 on q and v: 540,672)', () => {
    const cfg = preset('qwen2.5-0.5b');
    expect(countLoraParameters(cfg, validateLora(cfg, { rank: 8, alpha: 16, targets: ['q', 'v'] }))).toBe(540_672);
    // GPT-2: our q, k, v adapters are separate (3·R·(C + C) per layer), unlike PEFT's fused c_attn (R·(C + 3C)).
    const g = preset('gpt2-small');
    expect(countLoraParameters(g, validateLora(g, { rank: 8, alpha: 16, targets: ['q', 'k', 'v'] }))).toBe(12 * 3 * 8 * (768 + 768));
  });

  it('lists unique names, in a stable order, with [out, in] linear shapes', () => {
    const cfg = preset('tiny-llama');
    const specs = parameterSpecs(cfg);
    expect(new Set(specs.map((s) => s.name)).size).toBe(specs.length);
    const byName = new Map(specs.map((s) => [s.name, s.shape]));
    expect(byName.get('layers.1.attn.k.weight')).toEqual([cfg.nKvHead * cfg.headDim, cfg.dModel]);
    expect(byName.get('layers.1.attn.o.weight')).toEqual([cfg.dModel, cfg.nHead * cfg.headDim]);
    expect(byName.get('layers.0.mlp.down.weight')).toEqual([cfg.dModel, cfg.dFF]);
    expect(byName.has('layers.0.attn.o.bias')).toBe(false);
    expect(byName.has('layers.0.attn.q.bias')).toBe(true);
    expect(byName.has('lm_head.weight')).toBe(true);
    expect(specs.filter((s) => s.residualProj).map((s) => s.name)).toEqual(['layers.0.attn.o.weight', 'layers.0.mlp.down.weight', 'layers.1.attn.o.weight', 'layers.1.mlp.down.weight']);
    const lora = loraSpecs(cfg, validateLora(cfg, { rank: 3, alpha: 1, targets: ['down', 'q'] }));
    expect(lora.map((s) => `${s.name}:${s.shape.join('x')}`).slice(0, 4)).toEqual([
      'layers.0.attn.q.lora_a:3x24', 'layers.0.attn.q.lora_b:24x3', 'layers.0.mlp.down.lora_a:3x40', 'layers.0.mlp.down.lora_b:24x3',
    ]);
  });
});

describe('presets', () => {
  it('are valid and sized as advertised', () => {
    const n = (k: keyof typeof PRESETS) => countParameters(PRESETS[k]);
    for (const k of ['tiny-gpt2', 'tiny-llama'] as const) expect(n(k)).toBeGreaterThan(1_000), expect(n(k)).toBeLessThan(30_000);
    for (const k of ['gpt2-1m', 'llama-1m'] as const) expect(Math.abs(n(k) - 1e6)).toBeLessThan(1.5e5);
    for (const k of ['gpt2-10m', 'llama-10m'] as const) expect(Math.abs(n(k) - 1e7)).toBeLessThan(1.5e6);
    for (const [k, c] of Object.entries(PRESETS)) {
      expect(validateConfig({ ...c })).toEqual(c);
      if (!/small|qwen/.test(k)) expect(c.vocabSize).toBe(259);
    }
    expect(preset('tiny-gpt2').dModel % 16).not.toBe(0);
  });

  it('an unknown name is a ModelConfigError naming the presets', () => {
    expect(fieldOf(() => preset('gpt5'))).toBe('preset');
    expect(fieldOf(() => preset('toString'))).toBe('preset');
  });
});

describe('validateConfig', () => {
  const base = { ...PRESETS['tiny-llama'] } as Record<string, unknown>;
  const g = { ...PRESETS['tiny-gpt2'] } as Record<string, unknown>;
  it.each([
    ['vocabSize', { vocabSize: 0 }],
    ['nLayer', { nLayer: 1.5 }],
    ['dModel', { dModel: '24' }],
    ['nKvHead', { nKvHead: 4 }],
    ['headDim', { headDim: 6 }],
    ['headDim', { headDim: 132 }],
    ['normEps', { normEps: -1 }],
    ['ropeTheta', { ropeTheta: undefined }],
    ['tieEmbeddings', { tieEmbeddings: 1 }],
    ['family', { family: 'mistral' }],
    ['nKvHeads', { nKvHeads: 2 }],
  ])('names %s', (field, over) => {
    expect(fieldOf(() => validateConfig({ ...base, ...over }))).toBe(field);
  });
  it('enforces what GPT-2 is', () => {
    expect(fieldOf(() => validateConfig({ ...g, nKvHead: 1 }))).toBe('nKvHead');
    expect(fieldOf(() => validateConfig({ ...g, headDim: 4 }))).toBe('headDim');
    expect(fieldOf(() => validateConfig({ ...g, oBias: false }))).toBe('oBias');
    expect(fieldOf(() => validateConfig({ ...g, ropeTheta: 10000 }))).toBe('ropeTheta');
    expect(fieldOf(() => validateConfig(null))).toBe('config');
  });
  it('returns a frozen copy', () => {
    const c = validateConfig(base);
    expect(Object.isFrozen(c)).toBe(true);
    expect(c).toEqual(PRESETS['tiny-llama']);
  });
});

describe('validateLora', () => {
  const llama = preset('tiny-llama');
  const gpt2 = preset('tiny-gpt2');
  it('orders targets canonically and freezes', () => {
    const l = validateLora(llama, { rank: 4, alpha: 8, targets: ['down', 'q', 'gate'] });
    expect(l.targets).toEqual(['q', 'gate', 'down']);
    expect(Object.isFrozen(l)).toBe(true);
  });
  it.each([
    [{ rank: 0, alpha: 1, targets: ['q'] }, 'lora.rank'],
    [{ rank: 2, alpha: 0, targets: ['q'] }, 'lora.alpha'],
    [{ rank: 2, alpha: 1, targets: [] }, 'lora.targets'],
    [{ rank: 2, alpha: 1, targets: ['q', 'q'] }, 'lora.targets'],
    [{ rank: 2, alpha: 1, targets: ['c_attn'] }, 'lora.targets'],
    [{ rank: 2, alpha: 1, targets: ['q'], dropout: 0.1 }, 'lora.dropout'],
  ])('rejects %j naming %s', (l, field) => {
    expect(fieldOf(() => validateLora(llama, l))).toBe(field);
  });
  it('rejects gate on GPT-2, which has none', () => {
    expect(fieldOf(() => validateLora(gpt2, { rank: 2, alpha: 1, targets: ['gate'] }))).toBe('lora.targets');
    expect(validateLora(gpt2, { rank: 2, alpha: 1, targets: ['up', 'down', 'o'] }).targets).toEqual(['o', 'up', 'down']);
  });
});

describe('estimateTrainingMemory', () => {
  const g = preset('gpt2-small');
  const lora: LoraConfig = validateLora(g, { rank: 8, alpha: 16, targets: ['q', 'v'] });
  const est = (cfg: ModelConfig, o: Partial<Parameters<typeof estimateTrainingMemory>[1]>) =>
    estimateTrainingMemory(cfg, { batch: 4, seqLen: 256, mode: 'full', ...o });

  it('adds up, and charges full training 16 bytes per parameter before activations', () => {
    const f = est(g, {});
    const P = countParameters(g);
    expect(f.weightBytes + f.gradBytes + f.optimizerBytes).toBe(16 * P);
    expect(f.sharedBytes).toBe(0);
    expect(f.jobBytes).toBe(f.weightBytes + f.gradBytes + f.optimizerBytes + f.activationBytes + f.logitsBytes + f.workspaceBytes);
    expect(f.totalBytes).toBe(f.jobBytes);
    expect(f.logitsBytes).toBe(4 * 4 * 256 * 50257);
  });

  it('a LoRA job shares the base and owns little; with chunked logits and an f16 base it peaks under 40% of the full job', () => {
    const f = est(g, {});
    const l = est(g, { mode: 'lora', lora });
    expect(l.sharedBytes).toBe(4 * countParameters(g));
    expect(l.weightBytes).toBe(4 * countLoraParameters(g, lora));
    expect(l.optimizerBytes).toBe(2 * l.weightBytes);
    expect(l.activationBytes).toBeLessThan(f.activationBytes);
    expect(l.jobBytes).toBeLessThan(f.jobBytes / 3);
    expect(l.totalBytes / f.totalBytes).toBeLessThan(0.5);
    const l16 = est(g, { mode: 'lora', lora, baseWeightBytes: 2, logitsChunkRows: 256 });
    expect(l16.sharedBytes).toBe(2 * countParameters(g));
    expect(l16.logitsBytes).toBe(4 * 256 * 50257);
    expect(l16.totalBytes / est(g, { logitsChunkRows: 256 }).totalBytes).toBeLessThan(0.4);
  });

  it('recomputation trades activations for compute; activations scale with tokens', () => {
    for (const cfg of [g, preset('qwen2.5-0.5b')]) {
      const plain = est(cfg, {});
      const re = est(cfg, { recompute: true });
      expect(re.activationBytes).toBeLessThan(plain.activationBytes / 3);
      expect(re.weightBytes).toBe(plain.weightBytes);
      const twice = est(cfg, { batch: 8 });
      expect(twice.activationBytes).toBe(2 * plain.activationBytes);
      expect(twice.logitsBytes).toBe(2 * plain.logitsBytes);
    }
  });

  it('rejects impossible requests with the field named', () => {
    expect(fieldOf(() => est(g, { batch: 0 }))).toBe('batch');
    expect(fieldOf(() => est(g, { seqLen: 2048 }))).toBe('seqLen');
    expect(fieldOf(() => est(g, { mode: 'lora' }))).toBe('lora');
    expect(fieldOf(() => est(g, { logitsChunkRows: 0 }))).toBe('logitsChunkRows');
  });
});
