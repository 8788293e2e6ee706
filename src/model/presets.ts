/**
 * Named model configs. Parameter counts (exact, from countParameters) in the comments.
 *
 *   tiny-gpt2      22,248     tests: odd sizes (C=24, Hq=3, D=8, F=96), byte vocab, tied
 *   tiny-llama     21,464     tests: C=24, Hq=6 over Hkv=2 (GQA), D=4, F=40, q/k/v bias (Qwen2-like), untied head
 *   gpt2-100k      124,864    the default agent of `npm run train` (2 layers, C=64, 128 positions):
 *                             small enough for a software adapter to warm-start and train in minutes
 *   gpt2-1m        1,057,536  demo, byte vocab, 256 positions
 *   llama-1m       956,160    demo, byte vocab
 *   gpt2-10m       10,111,040 demo, byte vocab, 512 positions
 *   llama-10m      9,857,920  demo, byte vocab
 *   gpt2-small     124,439,808 GPT-2 small (HF "gpt2"), vocab 50257
 *   qwen2.5-0.5b   494,032,768 Qwen2.5-0.5B's config (vocab 151936, tied), the largest size we target
 *
 * Byte vocab = 259 (bytes 0..255 + <pad> <bos> <eos>, src/model/tokenizer/byte.ts). Llama demo presets
 * use F ≈ 8C/3 rounded up to a multiple of 16 (SwiGLU keeps the MLP's size near GPT-2's 4C).
 */
import { BYTE_VOCAB_SIZE } from './tokenizer/byte.ts';
import { type ModelConfig, validateConfig } from './config.ts';
import { ModelConfigError } from './errors.ts';

const gpt2 = (name: string, V: number, L: number, C: number, H: number, P: number): ModelConfig =>
  validateConfig({
    family: 'gpt2', name, vocabSize: V, nLayer: L, dModel: C, nHead: H, nKvHead: H, headDim: C / H, dFF: 4 * C,
    maxSeqLen: P, normEps: 1e-5, tieEmbeddings: true, qkvBias: true, oBias: true, mlpBias: true,
  });

const llama = (name: string, o: { V: number; L: number; C: number; Hq: number; Hkv: number; D: number; F: number; P: number; theta: number; eps: number; tied: boolean; qkvBias: boolean }): ModelConfig =>
  validateConfig({
    family: 'llama', name, vocabSize: o.V, nLayer: o.L, dModel: o.C, nHead: o.Hq, nKvHead: o.Hkv, headDim: o.D, dFF: o.F,
    maxSeqLen: o.P, normEps: o.eps, ropeTheta: o.theta, tieEmbeddings: o.tied, qkvBias: o.qkvBias, oBias: false, mlpBias: false,
  });

const B = BYTE_VOCAB_SIZE;

/** The built-in model configurations by name (byte-level ones for training from scratch, and published shapes). */
export const PRESETS = Object.freeze({
  'tiny-gpt2': gpt2('tiny-gpt2', B, 2, 24, 3, 64),
  'tiny-llama': llama('tiny-llama', { V: B, L: 2, C: 24, Hq: 6, Hkv: 2, D: 4, F: 40, P: 64, theta: 10000, eps: 1e-5, tied: false, qkvBias: true }),
  'gpt2-100k': gpt2('gpt2-100k', B, 2, 64, 4, 128),
  'gpt2-1m': gpt2('gpt2-1m', B, 5, 128, 4, 256),
  'llama-1m': llama('llama-1m', { V: B, L: 5, C: 128, Hq: 4, Hkv: 2, D: 32, F: 352, P: 256, theta: 10000, eps: 1e-5, tied: true, qkvBias: false }),
  'gpt2-10m': gpt2('gpt2-10m', B, 8, 320, 5, 512),
  'llama-10m': llama('llama-10m', { V: B, L: 9, C: 320, Hq: 8, Hkv: 2, D: 40, F: 864, P: 512, theta: 10000, eps: 1e-5, tied: true, qkvBias: false }),
  'gpt2-small': gpt2('gpt2-small', 50257, 12, 768, 12, 1024),
  'qwen2.5-0.5b': llama('qwen2.5-0.5b', { V: 151936, L: 24, C: 896, Hq: 14, Hkv: 2, D: 64, F: 4864, P: 32768, theta: 1000000, eps: 1e-6, tied: true, qkvBias: true }),
});

/** A key of PRESETS. */
export type PresetName = keyof typeof PRESETS;

/** A preset by name; ModelConfigError('preset') lists the known names otherwise. */
export function preset(name: string): ModelConfig {
  const cfg = (PRESETS as Record<string, ModelConfig>)[name];
  if (!Object.hasOwn(PRESETS, name) || cfg === undefined) {
    throw new ModelConfigError('preset', `unknown preset ${JSON.stringify(name)} (known: ${Object.keys(PRESETS).join(', ')})`);
  }
  return cfg;
}
