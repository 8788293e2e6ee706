/**
 * Engine ↔ oracle parity: the GPU training path (src/model/trainer.ts) against the tfjs reference
 * model (model_tf.ts) on tiny configs of both families — logits, loss, the gradient of every
 * parameter (trainable 'all') and of every adapter tensor (trainable 'lora'), each as a relative
 * L2 error per tensor. Shared by the GPU suites (test/shared/cases/model_parity.ts) and
 * `deno task parity --json FILE` (parity_cli.ts).
 *
 * Inputs are made to exercise every path: weights ~ N(0, 0.1), norms 1 + N(0, 0.1), biases
 * N(0, 0.1), adapters with both A and B random (a fresh adapter's B = 0 would make dA vanish),
 * batches with padding, two packed segments per row, and loss-masked live tokens.
 *
 * A gradient that is zero in exact arithmetic has no meaningful relative error: GPT-2's key bias
 * (softmax is invariant to adding q·b_k to every score of a row) is the one such tensor here.
 * Those are measured against the scale of the other gradients instead (`zeroByMath`).
 */
import type { PackedBatch } from '../../src/algorithms/pack.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { BaseModel } from '../../src/model/base_model.ts';
import type { LoraConfig, ModelConfig } from '../../src/model/config.ts';
import { validateConfig } from '../../src/model/config.ts';
import { LoraAdapter } from '../../src/model/lora.ts';
import { loraSpecs, numel, parameterSpecs } from '../../src/model/params.ts';
import { PRESETS } from '../../src/model/presets.ts';
import { Trainer } from '../../src/model/trainer.ts';
import { Rng } from '../../src/util/rng.ts';
import { type RefBatch, refForward, refLossAndGrads } from './model_tf.ts';
import { relL2 } from './tf.ts';

export interface ParityCase {
  readonly name: string;
  readonly cfg: ModelConfig;
  /** Segment ids per row (negative = padding); one array of length T per row. */
  readonly segments: readonly (readonly number[])[];
  readonly lora: LoraConfig;
  readonly seed: number;
}

export interface ParityResult {
  readonly name: string;
  readonly family: ModelConfig['family'];
  readonly logitsRelErr: number;
  readonly lossRelErr: number;
  readonly gradsMaxRelErr: number;
  readonly loraLogitsRelErr: number;
  readonly loraLossRelErr: number;
  readonly loraGradsMaxRelErr: number;
  /** The tensor with the largest error of each kind. */
  readonly worstGrad: string;
  readonly worstLoraGrad: string;
  /** Gradients that are zero in exact arithmetic: ‖got − want‖ / (RMS gradient norm of the model). */
  readonly zeroByMath: Readonly<Record<string, number>>;
}

/** GQA/MQA llama variant with tied embeddings and biases on o and the MLP (paths tiny-llama lacks). */
export const LLAMA_GQA = validateConfig({
  family: 'llama', name: 'tiny-llama-mqa', vocabSize: 61, nLayer: 2, dModel: 32, nHead: 4, nKvHead: 1, headDim: 8, dFF: 48,
  maxSeqLen: 32, normEps: 1e-5, ropeTheta: 500, tieEmbeddings: true, qkvBias: false, oBias: true, mlpBias: true,
});

const PADDED = [[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, -1, -1, -1]];
const PACKED = [[0, 0, 0, 1, 1, 1, 1, -1], [2, 2, 2, 2, 2, 2, -1, -1]];

export const PARITY_CASES: readonly ParityCase[] = [
  { name: 'tiny-gpt2, padded', cfg: PRESETS['tiny-gpt2'], segments: PADDED, lora: { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'up', 'down'] }, seed: 1 },
  { name: 'tiny-gpt2, packed (2 segments + padding)', cfg: PRESETS['tiny-gpt2'], segments: PACKED, lora: { rank: 3, alpha: 5, targets: ['q', 'v', 'down'] }, seed: 2 },
  { name: 'tiny-llama (GQA 6/2, qkv bias), padded', cfg: PRESETS['tiny-llama'], segments: PADDED, lora: { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, seed: 3 },
  { name: 'tiny-llama, packed (2 segments + padding)', cfg: PRESETS['tiny-llama'], segments: PACKED, lora: { rank: 2, alpha: 3, targets: ['k', 'o', 'gate'] }, seed: 4 },
  { name: 'llama MQA 4/1 (tied, o/MLP bias), packed', cfg: LLAMA_GQA, segments: PACKED, lora: { rank: 4, alpha: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, seed: 5 },
];

/** Random parameters that exercise every path (see the file header). */
export function parityParams(cfg: ModelConfig, seed: number, opts: { valueHead?: boolean } = {}): Record<string, Float32Array> {
  const rng = new Rng(seed, 0x9a71);
  const out: Record<string, Float32Array> = {};
  for (const s of parameterSpecs(cfg, opts)) {
    const a = rng.normalArray(numel(s.shape), 0.1);
    if (s.kind === 'norm') for (let i = 0; i < a.length; i++) a[i] += 1;
    out[s.name] = a;
  }
  return out;
}

export function parityAdapter(cfg: ModelConfig, lora: LoraConfig, seed: number): Record<string, Float32Array> {
  const rng = new Rng(seed, 0x10aa);
  const out: Record<string, Float32Array> = {};
  for (const s of loraSpecs(cfg, lora)) out[s.name] = rng.normalArray(numel(s.shape), 0.1);
  return out;
}

/** A packed batch from segment ids: random tokens, some live tokens loss-masked, token-mean scales. */
export function parityBatch(cfg: ModelConfig, segments: readonly (readonly number[])[], seed: number): PackedBatch {
  const B = segments.length;
  const T = segments[0].length;
  const N = B * T;
  const rng = new Rng(seed, 0xba7c);
  const seqIdBT = Int32Array.from(segments.flat());
  const inputsBT = new Int32Array(N);
  const targetsBT = new Int32Array(N);
  const lossMaskBT = new Float32Array(N);
  for (let i = 0; i < N; i++) {
    inputsBT[i] = rng.nextInt(cfg.vocabSize);
    targetsBT[i] = rng.nextInt(cfg.vocabSize);
    // every third live token is a prompt token (masked)
    lossMaskBT[i] = seqIdBT[i] >= 0 && i % 3 !== 1 ? 1 : 0;
  }
  const total = lossMaskBT.reduce((a, m) => a + m, 0);
  const tokenScaleBT = Float32Array.from(lossMaskBT, (m) => m / total);
  const f = () => new Float32Array(N);
  return {
    rows: B, seqLen: T, inputsBT, targetsBT, lossMaskBT, tokenScaleBT, oldLogprobsBT: f(), advantagesBT: f(),
    returnsBT: null, oldValuesBT: null, refLogprobsBT: null, seqIdBT, sequenceIdBT: Int32Array.from(seqIdBT),
    sequenceIdB: Int32Array.from({ length: B }, (_, b) => b), lengthB: Int32Array.from(segments, (r) => r.filter((s) => s >= 0).length),
    pairIdB: new Int32Array(B).fill(-1), pairRoleB: new Int8Array(B),
  };
}

/** The oracle's view of a packed batch. */
export function refBatchOf(batch: PackedBatch): RefBatch {
  return { B: batch.rows, T: batch.seqLen, tokens: batch.inputsBT, segments: batch.seqIdBT, targets: batch.targetsBT, lossMask: batch.lossMaskBT };
}

const CE = { kind: 'cross_entropy', aggregation: 'token_mean' } as const;

function rms(grads: Record<string, Float32Array>): number {
  let s = 0, n = 0;
  for (const g of Object.values(grads)) for (const x of g) { s += x * x; n++; }
  return Math.sqrt(s / Math.max(1, n));
}

function compareGrads(got: Record<string, Float32Array>, want: Record<string, Float32Array>, zeroNames: Set<string>, zero: Record<string, number>): [number, string] {
  let worst = 0, worstName = '';
  const scale = rms(want);
  for (const [name, w] of Object.entries(want)) {
    const g = got[name];
    if (!g) throw new Error(`parity: the engine has no gradient for ${name}`);
    if (zeroNames.has(name)) {
      let d = 0;
      for (let i = 0; i < g.length; i++) d += (g[i] - w[i]) ** 2;
      zero[name] = Math.sqrt(d / g.length) / scale;
      continue;
    }
    const e = relL2(g, w);
    if (!(e <= worst)) [worst, worstName] = [e, name];
  }
  if (Object.keys(got).length !== Object.keys(want).length) throw new Error(`parity: ${Object.keys(got).length} engine gradients vs ${Object.keys(want).length} reference gradients`);
  return [worst, worstName];
}

/** Names of gradients that are zero in exact arithmetic for this config. */
export function zeroGradNames(cfg: ModelConfig): Set<string> {
  const out = new Set<string>();
  if (cfg.family === 'gpt2') for (let l = 0; l < cfg.nLayer; l++) out.add(`layers.${l}.attn.k.bias`);
  return out;
}

/** Runs one case: 'all' without an adapter, then 'lora' with one. */
export async function runParity(ctx: GpuContext, c: ParityCase, opts: { recompute?: boolean } = {}): Promise<ParityResult> {
  const { cfg } = c;
  const params = parityParams(cfg, c.seed);
  const adapterHost = parityAdapter(cfg, c.lora, c.seed);
  const batch = parityBatch(cfg, c.segments, c.seed);
  const rb = refBatchOf(batch);
  const model = BaseModel.upload(ctx, cfg, params);
  const zero: Record<string, number> = {};
  try {
    // trainable 'all'
    const full = await Trainer.create(model, { trainable: 'all', recompute: opts.recompute });
    let fullRes;
    try {
      const { logits } = await full.computeLogprobs(batch, { logits: true });
      const fb = await full.forwardBackward(batch, CE);
      const grads = await full.readGradients();
      const refLogits = refForward(cfg, params, rb).logits;
      const ref = refLossAndGrads(cfg, params, rb, { trainable: 'all' });
      const [gErr, gName] = compareGrads(grads, ref.grads, zeroGradNames(cfg), zero);
      fullRes = { logitsRelErr: relL2(logits!, refLogits), lossRelErr: Math.abs(fb.loss - ref.loss) / Math.abs(ref.loss), gradsMaxRelErr: gErr, worstGrad: gName };
    } finally {
      full.release();
    }
    // trainable 'lora'
    const adapter = LoraAdapter.fromHost(ctx, cfg, c.lora, adapterHost);
    const job = await Trainer.create(model, { trainable: 'lora', adapter, recompute: opts.recompute });
    try {
      const { logits } = await job.computeLogprobs(batch, { logits: true });
      const fb = await job.forwardBackward(batch, CE);
      const grads = await job.readGradients();
      const lora = { config: adapter.lora, tensors: adapterHost };
      const refLogits = refForward(cfg, params, rb, { lora }).logits;
      const ref = refLossAndGrads(cfg, params, rb, { trainable: 'lora', lora });
      const [gErr, gName] = compareGrads(grads, ref.grads, new Set(), zero);
      return {
        name: c.name, family: cfg.family, ...fullRes,
        loraLogitsRelErr: relL2(logits!, refLogits), loraLossRelErr: Math.abs(fb.loss - ref.loss) / Math.abs(ref.loss),
        loraGradsMaxRelErr: gErr, worstLoraGrad: gName, zeroByMath: zero,
      };
    } finally {
      job.release();
      adapter.release();
    }
  } finally {
    model.release();
  }
}
