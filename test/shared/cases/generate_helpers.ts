/**
 * Helpers of the generation cases: a ModelWeights / AdapterWeights built straight from host
 * parameters (the inference path is tested without the training path's BaseModel), weights
 * perturbed away from the init's near-zero scale so attention and logits are not near-uniform,
 * and the tfjs reference's next-token log-probabilities over a sequence.
 */
import type { GpuContext } from '../../../src/gpu/device.ts';
import { type Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import type { LoraConfig, ModelConfig } from '../../../src/model/config.ts';
import { f16ToF32Array, f32ToF16Array } from '../../../src/model/f16.ts';
import { initLora, initParameters } from '../../../src/model/init.ts';
import { loraSpecs, parameterSpecs } from '../../../src/model/params.ts';
import type { AdapterWeights, LoraModule, ModelWeights } from '../../../src/model/weights_view.ts';
import { Rng } from '../../../src/util/rng.ts';
import { refForward } from '../../reference/model_tf.ts';

export const OWNER = 'generate-case';

/** A ModelWeights over tensors uploaded from canonical host parameters. */
export class HostWeights implements ModelWeights {
  readonly cfg: ModelConfig;
  readonly #t = new Map<string, Tensor>();
  /** `f16`: store the linear weights (blocks, untied lm_head) as f16 bits, as a frozen base would. */
  constructor(ctx: GpuContext, cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, opts: { f16?: boolean } = {}) {
    this.cfg = cfg;
    for (const s of parameterSpecs(cfg)) {
      const data = opts.f16 && s.kind === 'linear' ? f32ToF16Array(params[s.name]) : params[s.name];
      this.#t.set(s.name, tensorFrom(ctx, data, s.shape, { owner: OWNER, label: s.name }));
    }
  }
  param(name: string): Tensor {
    const t = this.#t.get(name);
    if (!t) throw new Error(`HostWeights: no parameter ${name}`);
    return t;
  }
  has(name: string): boolean {
    return this.#t.has(name);
  }
  release(): void {
    for (const t of this.#t.values()) t.release();
  }
}

/** An AdapterWeights over tensors uploaded from `initLora`-style host tensors. */
export class HostAdapter implements AdapterWeights {
  readonly id: string;
  readonly lora: LoraConfig;
  readonly #m = new Map<string, LoraModule>();
  constructor(ctx: GpuContext, cfg: ModelConfig, id: string, lora: LoraConfig, tensors: Readonly<Record<string, Float32Array>>) {
    this.id = id;
    this.lora = lora;
    const specs = loraSpecs(cfg, lora);
    for (let i = 0; i < specs.length; i += 2) {
      const [a, b] = [specs[i], specs[i + 1]];
      const name = a.name.replace(/\.lora_a$/, '');
      this.#m.set(name, {
        a: tensorFrom(ctx, tensors[a.name], a.shape, { owner: OWNER, label: a.name }),
        b: tensorFrom(ctx, tensors[b.name], b.shape, { owner: OWNER, label: b.name }),
        scale: lora.alpha / lora.rank,
      });
    }
  }
  module(name: string): LoraModule | undefined {
    return this.#m.get(name);
  }
  release(): void {
    for (const m of this.#m.values()) {
      m.a.release();
      m.b.release();
    }
  }
}

/**
 * initParameters, then linear weights and embeddings scaled by `gain` and biases / norm weights
 * randomized, so attention is far from uniform and every bias path matters.
 */
export function testParams(cfg: ModelConfig, seed: number, gain = 8): Record<string, Float32Array> {
  const p = initParameters(cfg, seed);
  const rng = new Rng(seed, 77);
  for (const s of parameterSpecs(cfg)) {
    const x = p[s.name];
    if (s.kind === 'linear' || s.kind === 'embedding') for (let i = 0; i < x.length; i++) x[i] *= gain;
    else if (s.kind === 'norm') {
      const r = rng.normalArray(x.length, 0.2);
      for (let i = 0; i < x.length; i++) x[i] = 1 + r[i];
    } else x.set(rng.normalArray(x.length, 0.1));
  }
  return p;
}

/** The parameters as an f16-stored base sees them: linear weights rounded to f16 and widened back. */
export function roundLinearsToF16(cfg: ModelConfig, params: Record<string, Float32Array>): Record<string, Float32Array> {
  const out = { ...params };
  for (const s of parameterSpecs(cfg)) if (s.kind === 'linear') out[s.name] = f16ToF32Array(f32ToF16Array(params[s.name]));
  return out;
}

/** A LoRA adapter with non-zero B (a fresh one would leave the model unchanged). */
export function testLora(cfg: ModelConfig, lora: LoraConfig, seed: number, bStd = 0.3): Record<string, Float32Array> {
  const t = initLora(cfg, lora, seed);
  const rng = new Rng(seed, 99);
  for (const s of loraSpecs(cfg, lora)) if (s.kind === 'lora-b') t[s.name] = rng.normalArray(t[s.name].length, bStd);
  return t;
}

/**
 * Teacher-forced reference over prompt + generated: for each generated token i, the log-softmax
 * row of the logits at position len(prompt) − 1 + i (what step-by-step generation over the growing
 * sequence sees, since the model is causal), with its argmax and top-2 margin.
 */
export function refNextLogprobs(cfg: ModelConfig, params: Record<string, Float32Array>, prompt: readonly number[], generated: readonly number[],
  lora?: { config: LoraConfig; tensors: Record<string, Float32Array> }): { logp: Float64Array[]; argmax: number[]; margin: number[] } {
  const seq = [...prompt, ...generated];
  const T = seq.length;
  const { logits } = refForward(cfg, params, { B: 1, T, tokens: Int32Array.from(seq) }, lora ? { lora } : {});
  const V = cfg.vocabSize;
  const out = { logp: [] as Float64Array[], argmax: [] as number[], margin: [] as number[] };
  for (let i = 0; i < generated.length; i++) {
    const row = logits.subarray((prompt.length - 1 + i) * V, (prompt.length + i) * V);
    let m = -Infinity, arg = 0, second = -Infinity;
    for (let j = 0; j < V; j++) {
      if (row[j] > m) {
        second = m;
        m = row[j];
        arg = j;
      } else if (row[j] > second) second = row[j];
    }
    let z = 0;
    for (let j = 0; j < V; j++) z += Math.exp(row[j] - m);
    const lse = m + Math.log(z);
    out.logp.push(Float64Array.from(row, (x) => x - lse));
    out.argmax.push(arg);
    out.margin.push(m - second);
  }
  return out;
}
