/**
 * RoPE inverse frequencies as Hugging Face transformers computes them (modeling_rope_utils.py),
 * in f32 step by step, so the angles match a checkpoint's reference implementation:
 *   default  inv_freq[d] = 1 / base^(2d/D)                                        d < D/2
 *   linear   inv_freq / factor
 *   llama3   Llama 3.1+'s band rule: wavelengths 2π/inv_freq longer than
 *            original_max_position_embeddings / low_freq_factor are divided by `factor`, shorter
 *            than … / high_freq_factor kept, and the band between interpolated smoothly.
 * Other rope types (dynamic, yarn, longrope, proportional) are refused when the config is read
 * (hf_config.ts), never approximated.
 */
import { ropeInvFreq } from '../ops/rope.ts';

/** A RoPE scaling rule of a checkpoint (from `rope_scaling` or `rope_parameters`). */
export type RopeScaling =
  | { readonly type: 'linear'; readonly factor: number }
  | {
    readonly type: 'llama3';
    readonly factor: number;
    readonly lowFreqFactor: number;
    readonly highFreqFactor: number;
    readonly originalMaxPositions: number;
  };

const f = Math.fround;

/** The D/2 inverse frequencies for head dim D, base θ and an optional scaling rule. */
export function ropeInvFreqFor(D: number, base: number, scaling: RopeScaling | undefined): Float32Array {
  const inv = ropeInvFreq(D, base);
  if (!scaling) return inv;
  if (scaling.type === 'linear') return inv.map((x) => f(x / scaling.factor));
  const { factor, lowFreqFactor: lo, highFreqFactor: hi, originalMaxPositions: old } = scaling;
  const lowWavelen = old / lo;
  const highWavelen = old / hi;
  return inv.map((x) => {
    const wavelen = f(f(2 * Math.PI) / x);
    let y = wavelen > lowWavelen ? f(x / factor) : x;
    if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
      const smooth = f(f(f(old / wavelen) - lo) / (hi - lo));
      y = f(f(f(f(1 - smooth) * y) / factor) + f(smooth * y));
    }
    return y;
  });
}
