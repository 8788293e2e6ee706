/**
 * The `pretrained` part's figures and its BENCHMARKS.md section: pure functions (no GPU, no Deno),
 * so the Node unit tests cover them.
 */
import { fmtBytes } from './harness.ts';
import { markdownTable } from './markdown.ts';

/** What test/bench/peers/torch_pretrained.py prints per model. */
export interface TorchFigures {
  load_s?: number;
  init_s?: number;
  lora_step_s: number;
  trainable_params?: number;
  [decode: `decode_b${number}_tok_s`]: number;
}

export interface PretrainedModelFigures {
  model: string;
  params: number;
  /** Whether the base was stored as f16 (shader-f16 and a 16-bit checkpoint). */
  f16Base: boolean;
  /** loadPretrained + BaseModel.load from the (warm) cache, seconds. */
  loadS: number;
  lora: { stepS: number | null; firstStepS: number; peakBytes: number; estimateBytes: number };
  /** One full-parameter step (not a median); null figures when it was not run (see notes). */
  full: { stepS: number | null; peakBytes: number | null; estimateBytes: number };
  /** Tokens/s by "b<B>". */
  decodeTokS: Record<string, number>;
  torch: TorchFigures | null;
  notes: string[];
}

export interface PretrainedReport {
  settings: { train: { B: number; T: number; rank: number }; decode: { P: number; n: number; batches: readonly number[] }; loraTargets: readonly string[] };
  models: PretrainedModelFigures[];
  /** torch, transformers, peft versions and threads, when the script ran. */
  torchVersions: string | null;
  /** Why torch did not run, when it did not. */
  torchWhy: string | null;
  failures: string[];
}

const secs = (x: number | null | undefined) => (x === null || x === undefined ? '—' : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const rate = (x: number | null | undefined) => (x === null || x === undefined ? '—' : x >= 10 ? x.toFixed(1) : x.toFixed(2));
/** How many times faster ours is: ratio of rates (or inverse ratio of times); — without both. */
const times = (ours: number | null | undefined, peer: number | null | undefined, higherIsBetter: boolean) =>
  ours && peer ? `${(higherIsBetter ? ours / peer : peer / ours).toFixed(2)}×` : '—';

/** Estimate ÷ measured peak, as "1.001×". */
export function estimateRatio(estimate: number, peak: number | null): number | null {
  return peak && peak > 0 ? estimate / peak : null;
}

/** The table rows: one per figure per model. */
export function pretrainedRows(r: PretrainedReport): string[][] {
  const { B, T, rank } = r.settings.train;
  const { P, n } = r.settings.decode;
  const rows: string[][] = [];
  for (const m of r.models) {
    const t = m.torch;
    rows.push([m.model, 'load from the HF cache (s)', secs(m.loadS), secs(t?.load_s), times(m.loadS, t?.load_s, false), `bf16 safetensors → ${m.f16Base ? 'f16' : 'f32'} base (ours), f32 (torch)`]);
    rows.push([m.model, `LoRA step B=${B} T=${T} R=${rank} (s)`, secs(m.lora.stepS), secs(t?.lora_step_s), times(m.lora.stepS, t?.lora_step_s, false), `AdamW; ours' first step ${secs(m.lora.firstStepS)} s`]);
    for (const b of r.settings.decode.batches) {
      const o = m.decodeTokS[`b${b}`];
      const p = t?.[`decode_b${b}_tok_s`];
      rows.push([m.model, `greedy decode B=${b} P=${P} n=${n} (tokens/s)`, rate(o), rate(p), times(o, p, true), 'KV cache, prefill included']);
    }
    const lr = estimateRatio(m.lora.estimateBytes, m.lora.peakBytes);
    rows.push([m.model, 'peak bytes, LoRA step', fmtBytes(m.lora.peakBytes), '—', '—', `estimate ${fmtBytes(m.lora.estimateBytes)} (${lr ? `${lr.toFixed(3)}×` : '—'} the peak)`]);
    const fr = estimateRatio(m.full.estimateBytes, m.full.peakBytes);
    rows.push([m.model, 'peak bytes, full step', fmtBytes(m.full.peakBytes), '—', '—',
      m.full.peakBytes === null ? `not run (estimate ${fmtBytes(m.full.estimateBytes)})` : `estimate ${fmtBytes(m.full.estimateBytes)} (${fr!.toFixed(3)}×); one step ${secs(m.full.stepS)} s; LoRA peak ${(100 * m.lora.peakBytes / m.full.peakBytes).toFixed(1)}% of full`]);
  }
  return rows;
}

export function pretrainedMarkdown(r: PretrainedReport, measured: string, quick: boolean): string {
  const { B, T } = r.settings.train;
  const lines = [
    '## Pretrained shapes: SmolLM2-135M and Qwen2.5-0.5B beside torch CPU',
    '',
    measured,
    '',
    quick ? '_Quick smoke run: a tiny Qwen2.5-shaped model, not the real shapes._\n' : '',
    `Random weights at the real shapes (\`npm run bench -- --only pretrained\`), written as a bf16 checkpoint into a temporary Hugging Face cache and loaded from it. ` +
      `Ours: this adapter through Deno's WebGPU. torch: CPU, f32, transformers + peft, on the same cores, loading the same checkpoint (test/bench/peers/torch_pretrained.py; ` +
      `${r.torchVersions ?? r.torchWhy ?? 'not run'}). LoRA on ${r.settings.loraTargets.join(', ')}, B=${B} T=${T}, a token-mean cross-entropy and an AdamW step. ` +
      'Times are medians after a warm-up; "ours ×" is how many times faster ours is (below 1: slower). Peak bytes are the pool\'s live peak over the step ' +
      '(base, kept texture copies and the job; llvmpipe keeps them in host RAM) beside estimateTrainingMemory\'s totalBytes.',
    '',
    markdownTable(['model', 'figure', 'ours', 'torch CPU', 'ours ×', 'notes'], pretrainedRows(r)),
  ];
  const notes = r.models.flatMap((m) => m.notes.map((n) => `- ${m.model}: ${n}`));
  if (r.torchWhy) notes.push(`- torch: ${r.torchWhy}`);
  for (const f of r.failures) notes.push(`- failed: ${f}`);
  if (notes.length) lines.push('', ...notes);
  return lines.filter((l, i) => !(l === '' && lines[i - 1] === '')).join('\n');
}
