/**
 * From-scratch initialization with a seeded generator (src/util/rng.ts), as plain Float32Arrays per
 * canonical parameter name (params.ts), for small agents trained entirely in the browser.
 *
 * GPT-2's scheme (Radford et al. 2019; nanoGPT, llm.c), used for both families: linear weights and
 * embeddings ~ N(0, 0.02); the projections back into the residual stream (attn.o, mlp.down) ~
 * N(0, 0.02/sqrt(2·L)) so the residual's variance does not grow with depth; biases 0; norm
 * weights 1 (LayerNorm β 0); value head like any linear, bias 0.
 * LoRA as PEFT's default: A ~ kaiming_uniform(a=√5), which for A [R, in] is U(−1/√in, 1/√in);
 * B = 0, so a fresh adapter leaves the model unchanged.
 *
 * Each tensor draws from its own stream (Rng.fork(index in the canonical order)), so a tensor's
 * values depend only on the seed and its position, not on how many numbers others drew.
 */
import { archOf } from './arch.ts';
import { Rng } from '../util/rng.ts';
import { type LoraConfig, type ModelConfig, validateLora } from './config.ts';
import { loraSpecs, numel, type ParamOptions, parameterSpecs } from './params.ts';

export const INIT_STD = 0.02;

/** Every canonical parameter of `cfg`, initialized from `seed` (u32). */
export function initParameters(cfg: ModelConfig, seed: number, opts: ParamOptions = {}): Record<string, Float32Array> {
  const root = new Rng(seed, 0x1417);
  const residualStd = INIT_STD / Math.sqrt(2 * cfg.nLayer);
  const out: Record<string, Float32Array> = {};
  parameterSpecs(cfg, opts).forEach((s, i) => {
    const n = numel(s.shape);
    switch (s.kind) {
      case 'embedding':
      case 'linear':
        out[s.name] = root.fork(i).normalArray(n, s.residualProj ? residualStd : INIT_STD);
        break;
      case 'norm':
        // The identity scale: w = 1, or w = 0 where the record applies (1 + w) (Gemma).
        out[s.name] = new Float32Array(n).fill(1 - archOf(cfg).normOffset);
        break;
      default:
        out[s.name] = new Float32Array(n);
    }
  });
  return out;
}

/** A fresh adapter: lora_a ~ U(−1/√in, 1/√in), lora_b = 0. */
export function initLora(cfg: ModelConfig, loraIn: LoraConfig, seed: number): Record<string, Float32Array> {
  const lora = validateLora(cfg, loraIn);
  const root = new Rng(seed, 0x10aa);
  const out: Record<string, Float32Array> = {};
  loraSpecs(cfg, lora).forEach((s, i) => {
    const n = numel(s.shape);
    if (s.kind === 'lora-a') {
      const bound = 1 / Math.sqrt(s.shape[1]);
      out[s.name] = root.fork(i).uniformArray(n, -bound, bound);
    } else out[s.name] = new Float32Array(n);
  });
  return out;
}
