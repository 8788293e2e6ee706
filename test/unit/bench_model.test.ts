// The pure parts of the `model` benchmark part (test/bench/model_report.ts, model_impl.ts):
// nominal FLOPs, the memory figure, agreement errors, seeded inputs and the markdown section.
// No GPU and no timing assertions.
import { describe, expect, it } from 'vitest';
import { makeRow } from '../../test/bench/harness.ts';
import { benchAdapter, benchBatch, benchLora, benchPrompts, peersCannotBind } from '../../test/bench/model_impl.ts';
import { fullBatch } from '../../test/bench/model_ours.ts';
import {
  decodeStepFlops, MODEL_BENCH_NAMES, modelMarkdown, modelMemory, type ModelReport, relErr, trainFlops,
} from '../../test/bench/model_report.ts';
import { countParameters, loraSpecs } from '../../src/model/params.ts';
import { PRESETS } from '../../src/model/presets.ts';

const cfg = PRESETS['tiny-gpt2']; // V=259 L=2 C=24 H=3 D=8 F=96

describe('model part figures', () => {
  it('counts nominal FLOPs from the matmul weights and causal attention', () => {
    // W = L·(4C² + 2CF) + VC = 2·(4·576 + 2·24·96) + 259·24 = 13,824 + 6,216 = 20,040.
    const W = 20_040;
    const attn = 2 * 2 * 2 * 3 * 32 * 32 * 8; // 2·L·B·H·T²·D at B=2 T=32
    expect(trainFlops(cfg, 2, 32, 'full')).toBe(3 * (2 * 64 * W + attn));
    expect(trainFlops(cfg, 2, 32, 'lora')).toBe(2 * (2 * 64 * W + attn));
    expect(decodeStepFlops(cfg, 16, 12)).toBe(2 * 16 * W + 4 * 2 * 16 * 3 * 12 * 8);
  });

  it('judges the LoRA/full memory ratio against issue 4’s 40%', () => {
    const m = modelMemory(cfg, 'B=2 T=32 R=4', 30, 100, { lora_bytes: 20, full_bytes: 80 });
    expect(m.ratio).toBeCloseTo(0.3, 12);
    expect(m.met).toBe(true);
    expect(m.estimate.ratio).toBeCloseTo(0.25, 12);
    expect(m.base_bytes).toBe(4 * countParameters(cfg));
    expect(modelMemory(cfg, '', 50, 100, { lora_bytes: 1, full_bytes: 2 }).met).toBe(false);
    expect(modelMemory(cfg, '', null, 100, { lora_bytes: 1, full_bytes: 2 })).toMatchObject({ ratio: null, met: null });
  });

  it('measures agreement by relative error, non-finite values never agreeing', () => {
    expect(relErr(1.0001, 1)).toBeCloseTo(1e-4 / 1.0001, 12);
    expect(relErr(0, 0)).toBe(0);
    expect(relErr(Number.NaN, 1)).toBe(Infinity);
    expect(relErr(1, Infinity)).toBe(Infinity);
  });
});

describe('model part inputs', () => {
  it('builds shifted byte batches, live adapters and prompts from seeds', () => {
    const b = benchBatch(cfg, 2, 8, 1);
    expect(b.inputsBT.length).toBe(16);
    for (let r = 0; r < 2; r++) for (let t = 0; t < 7; t++) expect(b.targetsBT[r * 8 + t]).toBe(b.inputsBT[r * 8 + t + 1]);
    expect(Math.max(...b.inputsBT, ...b.targetsBT)).toBeLessThan(256);
    expect(benchBatch(cfg, 2, 8, 1)).toEqual(b);
    expect(() => benchBatch(cfg, 1, 65, 1)).toThrow(RangeError);

    const lora = benchLora(4);
    const a = benchAdapter(cfg, lora, 3);
    expect(Object.keys(a)).toEqual(loraSpecs(cfg, lora).map((s) => s.name));
    expect(a['layers.0.attn.q.lora_b'].some((x) => x !== 0)).toBe(true);

    const p = benchPrompts(cfg, 3, 5, 2);
    expect(p.map((r) => r.length)).toEqual([5, 5, 5]);
  });

  it('packs one full micro-batch whose token weights make the token mean', () => {
    const b = benchBatch(cfg, 2, 4, 1);
    const pb = fullBatch(2, 4, b.inputsBT, b.targetsBT);
    expect(pb.tokenScaleBT.reduce((s, x) => s + x, 0)).toBeCloseTo(1, 6);
    expect([...pb.seqIdBT]).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect([...pb.lengthB]).toEqual([4, 4]);
  });
});

describe('model part peers', () => {
  it('runs the peers where the token embedding fits one binding, and says why not elsewhere', () => {
    const adapter = (max: number) => ({ limit: (name: string) => (name === 'maxStorageBufferBindingSize' ? max : 0) });
    const llvmpipe = adapter(2 ** 27);
    expect(peersCannotBind(llvmpipe, PRESETS['gpt2-10m'])).toBeNull();
    const why = peersCannotBind(llvmpipe, PRESETS['gpt2-small']);
    expect(why).toContain('154389504 B');
    expect(why).toContain('134217728 B');
    expect(peersCannotBind(adapter(2 ** 31), PRESETS['gpt2-small'])).toBeNull();
  });
});

describe('model part markdown', () => {
  const row = (name: string, model: string, ours: number, tfjs: number | null, jax: number | null, notes: string[] = []) =>
    makeRow({ name, shape: 'B=4 T=128', model, flops: 1e9, ours_ms: ours, ours_gpu_ms: null, peers: { tfjs, jax }, peak_bytes: { ours: 1 << 20, tfjs: null, jax: null }, max_rel_err: {}, notes });
  const rep: ModelReport = {
    results: [
      row('train_step_full', 'gpt2-10m', 100, 400, 250),
      row('train_step_lora', 'gpt2-10m', 80, 300, null, ['jax failed during timing: x']),
      row('decode_b1', 'gpt2-10m', 10, 50, 20),
      row('decode_b16', 'gpt2-10m', 12, 500, 30),
    ],
    checks: [{ name: 'train_step_full', model: 'gpt2-10m', shape: 'B=4 T=128', values: { ours: { loss: 5.5, gradNorm: 1, lossAfterStep: 5.4 } }, max_rel_err: { 'ours~tfjs': 2e-7 }, ok: true }],
    memory: modelMemory(cfg, 'B=1 T=64 R=8', 3 << 20, 10 << 20, { lora_bytes: 2 << 20, full_bytes: 9 << 20 }),
    failures: [],
    decodeHow: { ours: 'KV cache', tfjs: 'recomputes the prefix' },
  };

  it('renders every row, the verdicts against issue 4 and the checks', () => {
    const md = modelMarkdown(rep, '_measured_', false);
    expect(md).toContain('## Model');
    for (const n of MODEL_BENCH_NAMES) expect(md).toContain(`| ${n} |`);
    expect(md).toContain('- train_step_full: ≥ 3× — now gpt2-10m 2.50×');
    expect(md).toContain('- decode_b1: ≥ 3× — now gpt2-10m 2.00×');
    expect(md).toContain('now 30.0% (met)');
    expect(md).toContain('- train_step_lora gpt2-10m B=4 T=128: jax failed during timing: x');
    expect(md).toMatch(/\| train_step_full \| gpt2-10m \| B=4 T=128 \| 5\.50000 \| ours~tfjs 2\.0e-7 \| yes \|/);
    expect(md).toContain('tfjs: recomputes the prefix.');
    expect(md).not.toContain('Quick run');
    expect(modelMarkdown(rep, '_m_', true)).toContain('Quick run');
  });
});
