import { describe, expect, it } from 'vitest';
import { type LoraConfig, type ModelConfig, validateConfig, validateLora } from '../../src/model/config.ts';
import { ModelConfigError } from '../../src/model/errors.ts';
import { adapterMemoryDevice, estimateTrainingMemory, trainingMemoryDevice } from '../../src/model/memory.ts';
import { bucketBytes } from '../../src/gpu/pool.ts';
import type { AdapterKind } from '../../src/gpu/adapter_kind.ts';
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
    ['headDim', { headDim: 260 }],
    ['headDim', { headDim: 130 }],
    ['layerTypes', { layerTypes: ['sliding'] }],
    ['slidingWindow', { layerTypes: ['full', 'sliding'] }],
    ['slidingWindow', { slidingWindow: 8 }],
    ['ropeLocalTheta', { ropeLocalTheta: 1e4 }],
    ['rope.type', { rope: { type: 'yarn', factor: 4 } }],
    ['rope.highFreqFactor', { rope: { type: 'llama3', factor: 8, lowFreqFactor: 4, highFreqFactor: 1, originalMaxPositions: 64 } }],
    ['attnScale', { attnScale: 0 }],
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
  const llvmpipe = { maxStorageBufferBindingSize: 2 ** 27, textureReads: true, loopBudget: 65535 };
  const pooled = (specs: { shape: readonly number[] }[], bytes = 4) => specs.reduce((s, p) => s + bucketBytes(bytes * p.shape.reduce((a, b) => a * b, 1)), 0);

  it('adds up; parameters, gradients and moments in the pool\'s size classes, the base shared', () => {
    const f = est(g, {});
    const P = countParameters(g);
    // The job's f32 copy is a BaseModel (exact sizes); gradients and moments are pooled.
    expect(f.weightBytes).toBe(parameterSpecs(g).reduce((s, p) => s + Math.max(16, Math.ceil((4 * p.shape.reduce((a, b) => a * b, 1)) / 16) * 16), 0));
    expect(f.gradBytes).toBe(pooled(parameterSpecs(g)));
    expect(f.gradBytes).toBeGreaterThanOrEqual(4 * P);
    expect(f.gradBytes).toBeLessThan(1.34 * 4 * P); // a class wastes at most a third
    expect(f.optimizerBytes).toBe(2 * f.gradBytes + 3 * 256); // + the norm, clip scale and non-finite guard
    // The base the job's copy is made from: each tensor at its own size (16-byte rounded), no class slack.
    expect(f.sharedBytes).toBe(parameterSpecs(g).reduce((s, p) => s + Math.max(16, Math.ceil((4 * p.shape.reduce((a, b) => a * b, 1)) / 16) * 16), 0));
    expect(f.sharedBytes).toBeLessThan(4 * P + 16 * parameterSpecs(g).length);
    expect(f.jobBytes).toBe(f.weightBytes + f.gradBytes + f.optimizerBytes + f.activationBytes + f.logitsBytes + f.workspaceBytes + f.textureBytes);
    expect(f.totalBytes).toBe(f.sharedBytes + f.jobBytes);
    expect(f.logitsRows).toBe(4 * 256);
    expect(f.logitsBytes).toBe(bucketBytes(4 * 4 * 256 * 50257));
    expect(f.textureBytes).toBe(0);
  });

  it('logits come in blocks of the rows one binding holds, or of logitsChunkRows', () => {
    const d = est(g, { batch: 8, device: llvmpipe });
    const rows = Math.floor((2 ** 27 - 16) / (4 * 50257));
    expect(d.logitsRows).toBe(rows); // 667 of N = 2048
    expect(d.logitsBytes).toBe(bucketBytes(4 * rows * 50257));
    expect(d.logitsBytes).toBeLessThanOrEqual(2 ** 27);
    expect(est(g, { batch: 8 }).logitsBytes).toBe(4 * d.logitsBytes); // 412 MB of logits: a 512 MiB buffer vs 128 MiB
    expect(est(g, { batch: 8, device: llvmpipe, logitsChunkRows: 256 }).logitsRows).toBe(256);
    expect(est(g, { batch: 1, seqLen: 64, device: llvmpipe }).logitsRows).toBe(64);
  });

  it('counts texture copies only where the matmul reads through them, a few large operands, not all of them', () => {
    const plain = est(g, { batch: 1, seqLen: 64, device: { maxStorageBufferBindingSize: 2 ** 27 } });
    const tex = est(g, { batch: 1, seqLen: 64, device: llvmpipe });
    expect(plain.textureBytes).toBe(0);
    expect(tex.textureBytes).toBeGreaterThan(2 * 16 * 2 ** 20); // a 16 MiB range of the head's 154 MB, twice
    expect(tex.textureBytes).toBeLessThan(100 * 2 ** 20);
    expect(plain.keptTexelBytes).toBe(0);
    // Kept weight copies: every block linear, the head's 10 forward ranges and 13 backward K
    // ranges (V = 50257 > registerMaxK) — over the 512 MiB default, so bounded by it.
    expect(tex.keptTexelBytes).toBeGreaterThan(400 * 2 ** 20);
    expect(tex.keptTexelBytes).toBeLessThanOrEqual(512 * 2 ** 20);
    const small = est(g, { batch: 1, seqLen: 64, device: { ...llvmpipe, keptTexelLimitBytes: 64 * 2 ** 20 } });
    expect(small.keptTexelBytes).toBeLessThanOrEqual(64 * 2 ** 20);
    expect(small.keptTexelBytes).toBeGreaterThan(60 * 2 ** 20);
    expect(tex.totalBytes - tex.textureBytes - tex.keptTexelBytes).toBe(plain.totalBytes);
    // A full job keeps copies of its own weights (job bytes); a LoRA job's are the shared base's.
    const lo = est(g, { batch: 1, seqLen: 64, mode: 'lora', lora, device: llvmpipe });
    expect(lo.jobBytes + lo.sharedBytes + lo.keptTexelBytes).toBe(lo.totalBytes);
    expect(tex.jobBytes + tex.sharedBytes).toBe(tex.totalBytes);
  });

  it('a LoRA job shares the base and owns little: under 40% of the full job at GPT-2 small (B=1 T=64; B=4 T=256 with an f16 base)', () => {
    const f = est(g, {});
    const l = est(g, { mode: 'lora', lora });
    expect(l.sharedBytes).toBe(f.sharedBytes);
    expect(l.weightBytes).toBe(pooled(loraSpecs(g, lora)));
    expect(l.optimizerBytes).toBe(2 * l.weightBytes + 3 * 256);
    expect(l.activationBytes).toBeGreaterThan(f.activationBytes); // x·Aᵀ per adapted target
    expect(l.jobBytes).toBeLessThan(f.jobBytes / 3);
    // Activations are the same in both modes: their share grows with tokens (0.23 at N = 64, 0.42 at 1024).
    for (const [shape, f16] of [[{ batch: 1, seqLen: 64 }, false], [{ batch: 4, seqLen: 256 }, true]] as const) {
      const full = est(g, { ...shape, device: llvmpipe });
      const lo = est(g, { ...shape, mode: 'lora', lora, device: llvmpipe });
      const l16 = est(g, { ...shape, mode: 'lora', lora, device: llvmpipe, baseWeightBytes: 2 });
      const exact = (specs: { shape: readonly number[] }[], bytes = 4) => specs.reduce((s, p) => s + Math.max(16, Math.ceil((bytes * p.shape.reduce((a, b) => a * b, 1)) / 16) * 16), 0);
      expect(l16.sharedBytes).toBe(exact(parameterSpecs(g).filter((p) => p.kind !== 'linear')) + exact(parameterSpecs(g).filter((p) => p.kind === 'linear'), 2));
      expect(l16.totalBytes).toBeLessThan(lo.totalBytes);
      expect((f16 ? l16 : lo).totalBytes / full.totalBytes).toBeLessThan(0.4);
    }
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

  it('reads the device facts off a context or an adapter summary', () => {
    const ctx = (kind: AdapterKind) => ({ kind, limit: (n: string) => (n === 'maxStorageBufferBindingSize' ? 2 ** 27 : 0) });
    expect(trainingMemoryDevice(ctx('llvmpipe'))).toEqual(llvmpipe);
    expect(trainingMemoryDevice(ctx('swiftshader'))).toEqual({ maxStorageBufferBindingSize: 2 ** 27, textureReads: false, loopBudget: Number.POSITIVE_INFINITY });
    const summary = (description: string) => ({
      host: 'deno' as const, vendor: 'mesa', architecture: '', device: '', description, isFallbackAdapter: false, features: [], limits: { maxStorageBufferBindingSize: 2 ** 27 },
    });
    expect(adapterMemoryDevice(summary('llvmpipe (LLVM 19.1.7, 256 bits)'))).toEqual(llvmpipe);
    expect(adapterMemoryDevice(summary('SwiftShader Device')).textureReads).toBe(false);
  });

  it('rejects impossible requests with the field named', () => {
    expect(fieldOf(() => est(g, { batch: 0 }))).toBe('batch');
    expect(fieldOf(() => est(g, { seqLen: 2048 }))).toBe('seqLen');
    expect(fieldOf(() => est(g, { mode: 'lora' }))).toBe('lora');
    expect(fieldOf(() => est(g, { logitsChunkRows: 0 }))).toBe('logitsChunkRows');
  });
});
