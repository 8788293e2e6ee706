/**
 * The `model` part's figures and its BENCHMARKS.md section: pure functions (no GPU, no Deno), so
 * the Node unit tests cover them. Rows use the kernel part's ResultRow (harness.ts); `ours_ms` is
 * ms per training step, or ms per decode step (one new token for each of the B sequences).
 */
import type { ModelConfig } from '../../src/model/config.ts';
import { countParameters } from '../../src/model/params.ts';
import { fmtBytes, type ResultRow, rowCells, TABLE_HEADERS } from './harness.ts';
import { markdownTable } from './markdown.ts';

/** Issue 4's names, in the table's order. */
export const MODEL_BENCH_NAMES = ['train_step_full', 'train_step_lora', 'decode_b1', 'decode_b16'] as const;
export type ModelBenchName = (typeof MODEL_BENCH_NAMES)[number];

/** Where issue 4 asks us to end: speedup over the best peer, and LoRA peak / full peak. */
export const MODEL_TARGET_SPEEDUP = 3;
export const MODEL_TARGET_MEMORY_RATIO = 0.4;

/** Relative tolerance of the agreement checks (loss, ‖g‖, loss after one Adam step). */
export const MODEL_CHECK_TOL = 1e-3;

export interface ModelMemory {
  /** Peak live GPU bytes of one LoRA training step, and of one full-parameter step (ours). */
  lora_peak_bytes: number | null;
  full_peak_bytes: number | null;
  /** lora / full. */
  ratio: number | null;
  met: boolean | null;
  model: string;
  shape: string;
  /** The engine's accounting (estimateTrainingMemory's totalBytes) for the same steps. */
  estimate: { lora_bytes: number; full_bytes: number; ratio: number };
  /** The base weights (f32), resident in both jobs. */
  base_bytes: number;
}

export interface ModelCheck {
  name: ModelBenchName;
  model: string;
  shape: string;
  /** Per implementation: loss, ‖g‖ and the loss after one Adam step. */
  values: Record<string, { loss: number; gradNorm: number; lossAfterStep: number }>;
  /** Largest relative error over the three figures, per pair. */
  max_rel_err: Record<string, number>;
  ok: boolean;
}

export interface ModelReport {
  results: ResultRow[];
  checks: ModelCheck[];
  memory: ModelMemory;
  /** Problems that fail the run (ours disagreeing, ours failing). */
  failures: string[];
  /** How each implementation decodes, for the notes. */
  decodeHow: Record<string, string>;
}

/** |a − b| / max(|b|, tiny), symmetric in the sense used for the checks (the larger magnitude). */
export function relErr(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Infinity;
  return Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b), 1e-30);
}

/** Weights read by the matmuls of one token: the linears of every block and the (tied) head. */
function matmulWeights(cfg: ModelConfig): number {
  const { dModel: C, dFF: F, vocabSize: V, nLayer: L, nHead: H, nKvHead: Hkv, headDim: D } = cfg;
  const attn = C * H * D + 2 * C * Hkv * D + H * D * C;
  const mlp = cfg.family === 'gpt2' ? 2 * C * F : 3 * C * F;
  return L * (attn + mlp) + V * C;
}

/**
 * Nominal FLOPs of one training step over N = B·T tokens: forward 2·N·W (W = matmul weights) plus
 * causal attention 2·B·H·T²·D, backward twice that for 'full'; for 'lora' the backward skips the
 * base weight gradients (≈ 1× the forward's matmuls instead of 2×; the adapter's own are ignored).
 */
export function trainFlops(cfg: ModelConfig, B: number, T: number, mode: 'full' | 'lora'): number {
  const fwd = 2 * B * T * matmulWeights(cfg) + 2 * cfg.nLayer * B * cfg.nHead * T * T * cfg.headDim;
  return mode === 'full' ? 3 * fwd : 2 * fwd;
}

/** Nominal FLOPs of one decode step of B sequences at context length `ctx`: 2·B·W + attention 4·B·H·ctx·D. */
export function decodeStepFlops(cfg: ModelConfig, B: number, ctx: number): number {
  return 2 * B * matmulWeights(cfg) + 4 * cfg.nLayer * B * cfg.nHead * ctx * cfg.headDim;
}

/** The memory figure from our two peaks and the engine's estimates. */
export function modelMemory(cfg: ModelConfig, shape: string, lora: number | null, full: number | null, estimate: { lora_bytes: number; full_bytes: number }): ModelMemory {
  const ratio = lora !== null && full !== null && full > 0 ? lora / full : null;
  return {
    lora_peak_bytes: lora,
    full_peak_bytes: full,
    ratio,
    met: ratio === null ? null : ratio <= MODEL_TARGET_MEMORY_RATIO,
    model: cfg.name ?? cfg.family,
    shape,
    estimate: { ...estimate, ratio: estimate.lora_bytes / estimate.full_bytes },
    base_bytes: 4 * countParameters(cfg),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The body of the model section of BENCHMARKS.md. */
export function modelMarkdown(rep: ModelReport, measured: string, quick: boolean): string {
  const m = rep.memory;
  const lines = [
    '## Model',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): the tiny preset, 1–2 timed iterations — a smoke test, not a measurement.' : '',
    '',
    markdownTable(TABLE_HEADERS, rep.results.map(rowCells)),
    '',
  ];
  const noted = rep.results.filter((r) => r.notes.length);
  if (noted.length) {
    lines.push('Notes:', '');
    for (const r of noted) for (const n of r.notes) lines.push(`- ${r.name} ${r.model} ${r.shape}: ${n}`);
    lines.push('');
  }
  lines.push(
    `Memory (ours, ${m.model}, ${m.shape}): a LoRA step peaks at ${fmtBytes(m.lora_peak_bytes)}, a full-parameter step at ` +
      `${fmtBytes(m.full_peak_bytes)}${m.ratio === null ? '' : ` — ${pct(m.ratio)}`} (the engine's accounting: ` +
      `${fmtBytes(m.estimate.lora_bytes)} vs ${fmtBytes(m.estimate.full_bytes)}, ${pct(m.estimate.ratio)}; base weights ${fmtBytes(m.base_bytes)}).`,
    '',
    'Where issue 4 asks us to end, against the best peer on the same adapter:',
    '',
  );
  for (const name of MODEL_BENCH_NAMES) {
    const rows = rep.results.filter((r) => r.name === name);
    const got = rows.map((r) => `${r.model} ${r.speedup_vs_best_peer === null ? '—' : `${r.speedup_vs_best_peer.toFixed(2)}×`}`).join(', ');
    lines.push(`- ${name}: ≥ ${MODEL_TARGET_SPEEDUP}× — now ${got || '—'}`);
  }
  lines.push(`- LoRA peak ≤ ${pct(MODEL_TARGET_MEMORY_RATIO)} of the full-parameter peak — now ${m.ratio === null ? '—' : `${pct(m.ratio)} (${m.met ? 'met' : 'not met'})`}`);
  lines.push(
    '',
    `Same numbers before anything is timed (largest relative error of the loss, ‖g‖₂ and the loss after one Adam step; tolerance ${MODEL_CHECK_TOL}):`,
    '',
    markdownTable(['name', 'model', 'shape', 'loss (ours)', 'pairs', 'ok'], rep.checks.map((k) => [
      k.name, k.model, k.shape, k.values.ours ? k.values.ours.loss.toFixed(5) : '—',
      Object.entries(k.max_rel_err).map(([p, e]) => `${p} ${e.toExponential(1)}`).join(', ') || '—',
      k.ok ? 'yes' : 'no',
    ])),
    '',
    'How to read it:',
    '',
    '- Same process, same adapter, same weights (the engine\'s init, N(0, 0.02)), same LoRA adapter (every linear, rank as in ' +
      'the shape, B ~ N(0, 0.02) so the adapter is live) and same batch (random bytes; token-mean cross-entropy over every position).',
    '- train_step_*: ms of one step — forward, backward, Adam (lr 1e-3, no weight decay, no clipping: tfjs has no AdamW) — ' +
      'until the GPU has finished it; the median after the two checked steps (which compile and warm up). Ours: ' +
      '`Trainer.forwardBackward` + `optimStep` (one submission each; the loss and ‖g‖ are read back, as always). tfjs: the ' +
      'reference model (test/reference/model_tf.ts) with `tf.variableGrads` + `tf.train.adam`; LoRA makes only the adapter ' +
      'variables. jax-js: GPT-2 written with jax-js ops, forward + `valueAndGrad` + ‖g‖ + Adam under one `jit`; its full job ' +
      'looks tokens up by a one-hot matmul (jax-js cannot jit a gather\'s gradient).',
    '- decode_b*: ms per decode step (one new token for each of B sequences; tokens/s = B·1000/ms): the wall time of greedy ' +
      'generation of n tokens after a P-token prompt, prefill included, divided by n. ' +
      Object.entries(rep.decodeHow).map(([k, v]) => `${k}: ${v}.`).join(' '),
    '- GFLOP/s: nominal FLOPs (test/bench/model_report.ts: 2 per weight per token forward, ×3 for a full step, ×2 for LoRA, ' +
      'plus causal attention) over the median.',
    '- peak ours (train rows): the buffer pool\'s peakLiveBytes over the job\'s first step — everything live on the device, ' +
      'the base included (a full job also holds its own f32 copy of the base, its gradients and Adam moments). Peers: not measured (—).',
  );
  return lines.filter((l, i) => !(l === '' && lines[i - 1] === '')).join('\n');
}
