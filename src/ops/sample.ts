/**
 * sample — next-token sampling on the GPU (host wrapper of kernels/sample.wgsl): temperature,
 * top-k, top-p (nucleus) and greedy, with Philox random numbers that match src/util/rng.ts bit
 * for bit, so a seed fixes the tokens and `sampleRef` (the CPU reference) draws the same ones.
 *
 * Shapes: logits [B, V] f32 (or [..., V]: leading dimensions are rows); outputs tokens (i32),
 * logprobs (f32) and logprobsRaw (f32), each holding B values. Writes (=) all three:
 *   tokens       the sampled ids (greedy: argmax, lowest index on ties);
 *   logprobs     log p(token) under the distribution actually sampled from — logits / T,
 *                restricted to top-k then top-p, renormalized (greedy: 0, a point mass);
 *   logprobsRaw  log softmax(logits)[token] at temperature 1, unfiltered (what a policy-gradient
 *                loss recomputes; for PPO/GRPO old-logprobs use this one at T = 1, no filters).
 *
 * A row whose logits hold a NaN or +Inf, or no finite value, gets token NON_FINITE_TOKEN (−1) and
 * log-probs 0: a model's non-finite output is reported by the caller (NonFiniteError), never
 * turned into an arbitrary token id.
 *
 * Row r's random number is `Rng.restore({ seed, stream, position: 4 · counter }).nextFloat()`
 * with (stream, counter) = keys[r] when a `keys` tensor [B, 2] u32 is given (per-sequence streams
 * and positions under continuous batching), else (streamBase + r, step). Deterministic: the same
 * logits and keys give bitwise-identical outputs.
 */
import { ConfigError, ShapeError } from '../errors.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectBindable, expectDistinct, expectDtype, expectLoopBudget, rowGrid, rowsCols } from '../gpu/checks.ts';

const KERNEL = 'sample';

/** The token of a row whose logits are not finite (NaN or +Inf somewhere, or no finite value). */
export const NON_FINITE_TOKEN = -1;
/**
 * Threads per row (a power of two), by the context's tunings: 256 on real GPUs; fewer for short
 * rows on the software adapters, where barriers are expensive (KernelTunings.sampleWorkgroupSize).
 */
function sampleWorkgroupSize(ctx: GpuContext, v: number): number {
  return ctx.tunings.sampleWorkgroupSize(v);
}

/**
 * Upper bound of the loop iterations per thread for V and the filters in use: 4 passes of one
 * element per iteration (max, normalizer, the draw's sum and walk), the bisections' passes of four
 * (count_prefix, mass_prefix: then ≤ 3 one at a time), each with its tree, and the serial scan.
 */
function loopIterations(v: number, wg: number, topK: number, topP: number): number {
  const tree = Math.log2(wg);
  const single = Math.ceil(v / wg) + tree;
  const quad = Math.ceil(v / (4 * wg)) + 3 + tree;
  const passes = (topK > 0 && topK < v ? 33 + 18 : 0) + (topP < 1 ? 36 + 18 : 0);
  // + the gather of a top-k set for top-p (a counting pass, a scan, a writing pass); the passes
  // over that list are counted above as if over the row.
  return 5 * single + (passes + 1) * quad + 2 * wg;
}

export interface SampleOptions {
  /** Softmax temperature; 0 means greedy. Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens; 0 (default) or ≥ V keeps all. */
  topK?: number;
  /** Keep the smallest set of most likely tokens with probability ≥ topP, in (0, 1]. Default 1. */
  topP?: number;
  /** Seed of the generator (u32). */
  seed: number;
  /** Counter of this sampling step (u32), used when `keys` is absent. Default 0. */
  step?: number;
  /** Stream of row 0 (u32), rows use streamBase + r, when `keys` is absent. Default 0. */
  streamBase?: number;
  /** Per-row (stream, counter) pairs, u32 [B, 2]; overrides streamBase/step. */
  keys?: Tensor;
}

function u32Option(name: string, v: number | undefined, dflt: number): number {
  const x = v ?? dflt;
  if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) throw new ConfigError(`${KERNEL}.${name}`, `must be a u32, got ${x}`);
  return x;
}

/** Checks the options; returns them with defaults filled in. */
export function sampleSettings(opts: SampleOptions): Required<Omit<SampleOptions, 'keys'>> {
  const temperature = opts.temperature ?? 1;
  if (!Number.isFinite(temperature) || temperature < 0) {
    throw new ConfigError(`${KERNEL}.temperature`, `must be a finite number ≥ 0 (0 = greedy), got ${temperature}`);
  }
  const topP = opts.topP ?? 1;
  if (!(topP > 0 && topP <= 1)) throw new ConfigError(`${KERNEL}.topP`, `must be in (0, 1], got ${topP}`);
  return {
    temperature,
    topP,
    topK: u32Option('topK', opts.topK, 0),
    seed: u32Option('seed', opts.seed, 0),
    step: u32Option('step', opts.step, 0),
    streamBase: u32Option('streamBase', opts.streamBase, 0),
  };
}

/** Sample one token per row of logits; writes (=) tokens, logprobs and logprobsRaw. */
export function sample(rec: Recorder, tokens: Tensor, logprobs: Tensor, logprobsRaw: Tensor, logits: Tensor, opts: SampleOptions): void {
  const op = KERNEL;
  expectDtype(op, 'logits', logits, 'f32');
  expectDtype(op, 'tokens', tokens, 'i32');
  expectDtype(op, 'logprobs', logprobs, 'f32');
  expectDtype(op, 'logprobsRaw', logprobsRaw, 'f32');
  const [b, v] = rowsCols(op, 'logits', logits);
  if (v === 0) throw new ShapeError(op, `logits (${logits}) has an empty vocabulary`);
  for (const [name, t] of [['tokens', tokens], ['logprobs', logprobs], ['logprobsRaw', logprobsRaw]] as const) {
    if (t.size !== b) throw new ShapeError(op, `${name} (${t}) must hold B = ${b} values for logits ${logits}`);
  }
  if (opts.keys) {
    expectDtype(op, 'keys', opts.keys, 'u32');
    if (opts.keys.size !== 2 * b) throw new ShapeError(op, `keys (${opts.keys}) must be [${b}, 2] (stream, counter) for logits ${logits}`);
  }
  const s = sampleSettings(opts);
  expectDistinct(op, [['tokens', tokens, 'logprobs', logprobs], ['tokens', tokens, 'logprobsRaw', logprobsRaw],
    ['logprobs', logprobs, 'logprobsRaw', logprobsRaw], ['tokens', tokens, 'logits', logits], ['logprobs', logprobs, 'logits', logits],
    ['logprobsRaw', logprobsRaw, 'logits', logits]]);
  expectBindable(op, rec.ctx, [['logits', logits]]);
  const wg = sampleWorkgroupSize(rec.ctx, v);
  expectLoopBudget(op, rec.ctx, loopIterations(v, wg, s.topK, s.topP), `logits ${logits}`);
  if (b === 0) return;
  const { workgroups, nx } = rowGrid(rec.ctx, b);
  rec.dispatch({
    kernel: KERNEL,
    constants: { WG: wg },
    // Without keys the keys slot is bound to logits (read-only, never read).
    bindings: { logits, keys: opts.keys ?? logits, tokens, logprobs, logprobs_raw: logprobsRaw },
    params: {
      b, v, nx, seed: s.seed, step: s.step, stream_base: s.streamBase, has_keys: opts.keys ? 1 : 0, temperature: s.temperature, top_k: s.topK,
      top_p: s.topP,
    },
    workgroups,
  });
}
