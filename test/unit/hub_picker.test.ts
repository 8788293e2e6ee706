// The train page's Hub models and its fit check, in Node: the committed configs load as their
// families with the parameter counts transformers reports (hf_config.test.ts's figures; SmolLM2-360M
// from its model card), and a LoRA job is judged by admission's own arithmetic — recomputed here
// from estimateTrainingMemory — refused over the budget or past maxBufferSize with the numbers.
import { describe, expect, it } from 'vitest';
import { fmtBytes, HUB_MODELS, hubModelConfig, hubModelFit, PRETRAINED_JOB, pretrainedSeqLen } from '../../demos/src/lib/hub_models.ts';
import { DEFAULT_SETTINGS, isPretrained, jobOptions, parseSettings } from '../../demos/src/lib/job.ts';
import { pageBudgetBytes } from '../../demos/src/lib/picker.ts';
import { ConfigError } from '../../src/errors.ts';
import { estimateTrainingMemory } from '../../src/model/memory.ts';
import { countParameters } from '../../src/model/params.ts';

const GiB = 2 ** 30;
/** Adapters as summarizeAdapter reports them: a GPU with shader-f16, and one without it and with 512 MiB buffers. */
const gpu = { vendor: 'nvidia', architecture: 'ada', device: '', description: 'a GPU', features: ['shader-f16'], limits: { maxBufferSize: 4 * GiB, maxStorageBufferBindingSize: 2 * GiB } };
const small = { vendor: 'google', architecture: 'swiftshader', device: '', description: 'SwiftShader', features: [], limits: { maxBufferSize: 512 * 2 ** 20, maxStorageBufferBindingSize: 128 * 2 ** 20 } };

describe('hub models', () => {
  it.each([
    ['HuggingFaceTB/SmolLM2-135M-Instruct', 'llama', 134_515_008],
    ['HuggingFaceTB/SmolLM2-360M-Instruct', 'llama', 361_821_120],
    ['Qwen/Qwen2.5-0.5B-Instruct', 'llama', 494_032_768],
    ['Qwen/Qwen3-0.6B', 'qwen3', 596_049_920],
    ['meta-llama/Llama-3.2-1B-Instruct', 'llama', 1_235_814_400],
    ['google/gemma-3-270m-it', 'gemma3', 268_098_176],
  ])('%s: its committed config loads as %s with %i parameters', (repo, family, params) => {
    const m = HUB_MODELS.find((x) => x.repo === repo)!;
    const c = hubModelConfig(m);
    expect(c.family).toBe(family);
    expect(countParameters(c)).toBe(params);
    expect(hubModelFit(c, gpu, 64 * GiB).downloadBytes).toBe(2 * params);
  });

  it("reserves what admission does: the base at f32 and the LoRA job's bytes at the page's micro-batch", () => {
    const c = hubModelConfig(HUB_MODELS[0]);
    const f = hubModelFit(c, gpu, 64 * GiB);
    const est = estimateTrainingMemory(c, { batch: PRETRAINED_JOB.rows, seqLen: 1024, mode: 'lora', lora: PRETRAINED_JOB.lora, baseWeightBytes: 2, device: { maxStorageBufferBindingSize: 2 * GiB } });
    expect(pretrainedSeqLen(c)).toBe(1024);
    expect(f.ok).toBe(true);
    expect(f.baseBytes).toBe(4 * 134_515_008); // no kept texture copies off llvmpipe
    expect(f.jobBytes).toBe(est.jobBytes);
    expect(f.reservedBytes).toBe(f.baseBytes + est.jobBytes);
    expect(f.largestTensor).toBe('tok_emb.weight'); // f32 even with an f16 base: 49152 × 576 × 4
    expect(f.largestTensorBytes).toBe(49152 * 576 * 4);
  });

  it('refuses over the budget and past maxBufferSize, naming the numbers', () => {
    const llama = hubModelConfig(HUB_MODELS.find((m) => m.repo === 'meta-llama/Llama-3.2-1B-Instruct')!);
    const over = hubModelFit(llama, gpu, 4 * GiB);
    expect(over.ok).toBe(false);
    expect(over.reason).toContain(`${fmtBytes(over.reservedBytes)}`);
    expect(over.reason).toContain('more than this page\'s 4.00 GiB budget');
    // Its f32 embedding (128256 × 2048 × 4 = 1.0 GB) does not fit a 512 MiB buffer, whatever the budget.
    const big = hubModelFit(llama, small, 64 * GiB);
    expect(big.ok).toBe(false);
    expect(big.largestTensorBytes).toBe(128256 * 2048 * 4);
    expect(big.reason).toMatch(/tok_emb\.weight \(.*\) is larger than this adapter's maxBufferSize \(512 MiB\)/);
    // The same model fits a budget above its reservation.
    expect(hubModelFit(llama, gpu, over.reservedBytes).ok).toBe(true);
  });

  it('budget: 1 GiB on a software adapter, 4 GiB on a hardware one, or ?budget=MiB', () => {
    expect(pageBudgetBytes(true, null)).toBe(GiB);
    expect(pageBudgetBytes(false, null)).toBe(4 * GiB);
    expect(pageBudgetBytes(true, '2048')).toBe(2 * GiB);
    expect(pageBudgetBytes(true, 'x')).toBe(GiB);
  });
});

describe('settings with a Hub model', () => {
  const from = (o: Record<string, string>) => (k: string) => o[k] ?? null;

  it('take a repo id as the model and an http(s) Hub endpoint', () => {
    const s = parseSettings(from({ model: 'tiny-org/qwen3-tools', hub: 'http://127.0.0.1:4000/' }), undefined, { pretrained: true });
    expect(s.model).toBe('tiny-org/qwen3-tools');
    expect(s.hub).toBe('http://127.0.0.1:4000');
    expect(isPretrained(s)).toBe(true);
    expect(isPretrained(DEFAULT_SETTINGS)).toBe(false);
    expect(() => jobOptions(s)).toThrow(ConfigError); // its options need the opened checkpoint
    // Pages that train presets only (chat, arena, the widget) refuse a repo id.
    expect(() => parseSettings(from({ model: 'tiny-org/qwen3-tools' }))).toThrow(/unknown model/);
  });

  it.each([
    [{ model: 'gpt5' }, 'model'], [{ model: 'a--b/c' }, 'model'], [{ model: '../x' }, 'model'],
    [{ hub: 'ftp://example.org' }, 'hub'], [{ hub: 'not a url' }, 'hub'],
  ])('refuse %o with a ConfigError naming %s', (q, field) => {
    let err: unknown;
    try {
      parseSettings(from(q as Record<string, string>), undefined, { pretrained: true });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).field).toBe(field);
  });
});
