/**
 * What a finished run prints and writes, as pure functions over its summary: the summary table
 * (plain text), a metrics.jsonl line, and a learning-curve SVG (reward per RL step, loss on a
 * second axis; no dependencies, so it opens in any browser and diffs as text) drawn by curvesSvg,
 * which the bench's paper part draws its figures with too.
 */
import type { JobSummary, StepMetrics } from '../runtime/rl_job.ts';

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The end-of-run table: one `label  value` row each. */
export function summaryTable(s: JobSummary, files: readonly string[] = []): string {
  const first = s.rewardCurve.slice(0, Math.min(10, s.rewardCurve.length));
  const last = s.rewardCurve.slice(-Math.min(10, s.rewardCurve.length));
  const avg = (xs: number[]) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
  const rows: [string, string][] = [
    ['environment', s.env],
    ['algorithm', `${s.algo} (${s.trainable === 'lora' && s.lora ? `LoRA r=${s.lora.rank} α=${s.lora.alpha} on ${s.lora.targets.join(',')}` : 'full'})`],
    ['model', `${s.model}, from scratch${s.warmStartSteps > 0 ? `, SFT warm start ${s.warmStartSteps} steps` : ''}`],
    ['seed / steps', `${s.seed} / ${s.steps}`],
    ['held-out success', `${pct(s.successBefore)} → ${pct(s.successAfter)} (${s.successAfter - s.successBefore >= 0 ? '+' : ''}${(100 * (s.successAfter - s.successBefore)).toFixed(1)} points, ${s.evalEpisodes} episodes)`],
    ['held-out reward', `${s.rewardBefore.toFixed(3)} → ${s.rewardAfter.toFixed(3)}`],
    ['train reward', s.rewardCurve.length === 0 ? '-' : `first ${first.length}: ${avg(first).toFixed(3)}, last ${last.length}: ${avg(last).toFixed(3)}`],
    // An RL step's surrogate loss is ~0 on policy by construction: only SFT's loss tells.
    ...(s.algo === 'sft' ? [['final loss', s.lossCurve.length === 0 ? '-' : s.lossCurve[s.lossCurve.length - 1].toFixed(4)] as [string, string]] : []),
    ['throughput', `train ${s.trainTokensPerSecond.toFixed(0)} tok/s, sample ${s.sampleTokensPerSecond.toFixed(0)} tok/s`],
    ['peak GPU memory', `${(s.peakGpuBytes / 2 ** 20).toFixed(1)} MiB`],
    ['device', `${s.device.description || s.device.vendor || 'unknown'}${s.device.isFallbackAdapter ? ' (software)' : ''}`],
    ['wall time', `${s.wallSeconds.toFixed(1)} s`],
    ...files.map((f, i): [string, string] => [i === 0 ? 'files' : '', f]),
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n');
}

/** One metrics.jsonl line. */
export function metricsLine(m: StepMetrics): string {
  return JSON.stringify(m);
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function polyline(ys: readonly number[], x0: number, y0: number, w: number, h: number, lo: number, hi: number): string {
  const span = hi - lo || 1;
  const dx = ys.length > 1 ? w / (ys.length - 1) : 0;
  return ys
    .map((y, i) => `${(x0 + i * dx).toFixed(1)},${(y0 + h - ((Number.isFinite(y) ? y : lo) - lo) / span * h).toFixed(1)}`)
    .join(' ');
}

/** One line of a curves figure. */
export interface CurveSeries {
  readonly label: string;
  readonly ys: readonly number[];
  readonly color: string;
  /** Which vertical axis the line is read on (each axis spans its own lines, or `ranges`). */
  readonly axis: 'left' | 'right';
  readonly dashed?: boolean;
}

/**
 * Curves per step as an SVG document: every series on its axis (left or right, each scaled to its
 * series unless `ranges` fixes it), labels in the series' colors (left-axis labels at the top left,
 * right-axis ones at the top right). Non-finite values are drawn at the axis floor.
 */
export function curvesSvg(fig: { title: string; subtitle?: string; series: readonly CurveSeries[]; ranges?: Partial<Record<'left' | 'right', readonly [number, number]>> }): string {
  const W = 640, H = 360, L = 56, R = 56, T = 48, B = 40;
  const w = W - L - R, h = H - T - B;
  const range = (axis: 'left' | 'right'): [number, number] => {
    const fixed = fig.ranges?.[axis];
    if (fixed) return [fixed[0], fixed[1]];
    const f = fig.series.filter((s) => s.axis === axis).flatMap((s) => s.ys.filter(Number.isFinite));
    if (f.length === 0) return [0, 1];
    const lo = Math.min(...f), hi = Math.max(...f);
    return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
  };
  const axes = { left: range('left'), right: range('right') };
  const color = (axis: 'left' | 'right') => fig.series.find((s) => s.axis === axis)?.color;
  const n = Math.max(0, ...fig.series.map((s) => s.ys.length));
  const tick = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(fig.title)}</text>`,
    ...(fig.subtitle ? [`<text x="${W / 2}" y="36" text-anchor="middle" fill="#555">${esc(fig.subtitle)}</text>`] : []),
    `<rect x="${L}" y="${T}" width="${w}" height="${h}" fill="none" stroke="#999"/>`,
  ];
  const left = color('left'), right = color('right');
  if (left) parts.push(`<text x="${L - 6}" y="${T + 4}" text-anchor="end" fill="${left}">${tick(axes.left[1])}</text>`, `<text x="${L - 6}" y="${T + h}" text-anchor="end" fill="${left}">${tick(axes.left[0])}</text>`);
  if (right) parts.push(`<text x="${L + w + 6}" y="${T + 4}" fill="${right}">${tick(axes.right[1])}</text>`, `<text x="${L + w + 6}" y="${T + h}" fill="${right}">${tick(axes.right[0])}</text>`);
  parts.push(`<text x="${L}" y="${H - 12}">step 1</text>`, `<text x="${L + w}" y="${H - 12}" text-anchor="end">step ${n}</text>`);
  const labelRow = { left: 0, right: 0 };
  for (const s of fig.series) {
    const y = T + 16 * (1 + labelRow[s.axis]++);
    parts.push(s.axis === 'left' ? `<text x="${L + 8}" y="${y}" fill="${s.color}">${esc(s.label)}</text>` : `<text x="${L + w - 8}" y="${y}" text-anchor="end" fill="${s.color}">${esc(s.label)}</text>`);
  }
  for (const s of fig.series) {
    if (s.ys.length === 0) continue;
    const [lo, hi] = axes[s.axis];
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="${s.dashed ? 1.5 : 2}"${s.dashed ? ' stroke-dasharray="4 3"' : ''} points="${polyline(s.ys, L, T, w, h, lo, hi)}"/>`);
  }
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}


/** The metrics.jsonl lines of the steps a checkpoint covers (the ones after it will be written again). */
export function metricsBefore(jsonl: string, at: { readonly phase: 'sft' | 'rl'; readonly step: number }): string {
  const keep = jsonl.split('\n').filter((line) => {
    if (line.trim() === '') return false;
    const m = JSON.parse(line) as { phase: 'sft' | 'rl'; step: number };
    return m.phase === at.phase ? m.step < at.step : m.phase === 'sft' && at.phase === 'rl';
  });
  return keep.map((l) => `${l}\n`).join('');
}
