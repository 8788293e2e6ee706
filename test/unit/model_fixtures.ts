/**
 * Shared fixtures for model tests: tiny configs of both families and random parameters large
 * enough that every path matters (GPT-2's 0.02 init leaves a tiny model nearly linear).
 */
import { type LoraConfig, type ModelConfig, validateConfig, validateLora } from '../../src/model/config.ts';
import { loraSpecs, numel, parameterSpecs } from '../../src/model/params.ts';
import { Rng } from '../../src/util/rng.ts';

export function tinyGpt2(over: Partial<Record<string, unknown>> = {}): ModelConfig {
  return validateConfig({
    family: 'gpt2', vocabSize: 37, nLayer: 2, dModel: 12, nHead: 3, nKvHead: 3, headDim: 4, dFF: 20, maxSeqLen: 16,
    normEps: 1e-5, tieEmbeddings: true, qkvBias: true, oBias: true, mlpBias: true, ...over,
  });
}

export function tinyLlama(over: Partial<Record<string, unknown>> = {}): ModelConfig {
  return validateConfig({
    family: 'llama', vocabSize: 41, nLayer: 2, dModel: 12, nHead: 4, nKvHead: 2, headDim: 4, dFF: 18, maxSeqLen: 16,
    normEps: 1e-6, ropeTheta: 10000, tieEmbeddings: false, qkvBias: true, oBias: false, mlpBias: false, ...over,
  });
}

/** Weights ~ N(0, scale/sqrt(in)), norms 1 ± 0.2, biases ± 0.1. */
export function randomParams(cfg: ModelConfig, seed: number, opts: { valueHead?: boolean; scale?: number } = {}): Record<string, Float32Array> {
  const rng = new Rng(seed, 7);
  const out: Record<string, Float32Array> = {};
  for (const s of parameterSpecs(cfg, opts)) {
    const n = numel(s.shape);
    if (s.kind === 'norm') out[s.name] = rng.normalArray(n, 0.2).map((v) => 1 + v);
    else if (s.kind === 'bias' || s.kind === 'norm-bias') out[s.name] = rng.normalArray(n, 0.1);
    else if (s.kind === 'embedding') out[s.name] = rng.normalArray(n, 1);
    else out[s.name] = rng.normalArray(n, (opts.scale ?? 1) / Math.sqrt(s.shape[1]));
  }
  return out;
}

/** An adapter with both A and B non-zero (a trained one), so every LoRA gradient is non-trivial. */
export function randomLora(cfg: ModelConfig, lora: Partial<LoraConfig> & { targets: LoraConfig['targets'] }, seed: number): { config: LoraConfig; tensors: Record<string, Float32Array> } {
  const config = validateLora(cfg, { rank: 2, alpha: 3, ...lora });
  const rng = new Rng(seed, 9);
  const tensors: Record<string, Float32Array> = {};
  for (const s of loraSpecs(cfg, config)) tensors[s.name] = rng.normalArray(numel(s.shape), 0.5 / Math.sqrt(s.shape[1]));
  return { config, tensors };
}

/** scale·B·A as an [out, in] array, in f64 (a LoRA module's update). */
export function loraDelta(b: ArrayLike<number>, a: ArrayLike<number>, out: number, inp: number, rank: number, scale: number): Float64Array {
  const d = new Float64Array(out * inp);
  for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) {
    let s = 0;
    for (let r = 0; r < rank; r++) s += b[o * rank + r] * a[r * inp + i];
    d[o * inp + i] = scale * s;
  }
  return d;
}
