/**
 * What a finished run prints and writes, as pure functions over its summary: the summary table
 * (plain text), a metrics.jsonl line, and a learning-curve SVG (reward per RL step, loss on a
 * second axis; no dependencies, so it opens in any browser and diffs as text).
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
    ['final loss', s.lossCurve.length === 0 ? '-' : s.lossCurve[s.lossCurve.length - 1].toFixed(4)],
    ['throughput', `train ${s.trainTokensPerSecond.toFixed(0)} tok/s, sample ${s.sampleTokensPerSecond.toFixed(0)} tok/s`],
    ['peak GPU memory', `${(s.peakGpuBytes / 2 ** 20).toFixed(1)} MiB`],
    ['device', `${s.adapter.description || s.adapter.vendor || 'unknown'}${s.adapter.isFallbackAdapter ? ' (software)' : ''}`],
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

/**
 * Learning curves as an SVG document: reward (left axis) and loss (right axis) per step, with the
 * held-out success before and after in the title. Non-finite values are drawn at the axis floor.
 */
export function learningCurveSvg(curves: { title: string; reward: readonly number[]; loss: readonly number[]; subtitle?: string }): string {
  const W = 640, H = 360, L = 56, R = 56, T = 48, B = 40;
  const w = W - L - R, h = H - T - B;
  const finite = (xs: readonly number[]) => xs.filter(Number.isFinite);
  const range = (xs: readonly number[]): [number, number] => {
    const f = finite(xs);
    if (f.length === 0) return [0, 1];
    const lo = Math.min(...f), hi = Math.max(...f);
    return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
  };
  const [rLo, rHi] = range(curves.reward);
  const [lLo, lHi] = range(curves.loss);
  const n = Math.max(curves.reward.length, curves.loss.length);
  const tick = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(curves.title)}</text>`,
    ...(curves.subtitle ? [`<text x="${W / 2}" y="36" text-anchor="middle" fill="#555">${esc(curves.subtitle)}</text>`] : []),
    `<rect x="${L}" y="${T}" width="${w}" height="${h}" fill="none" stroke="#999"/>`,
    `<text x="${L - 6}" y="${T + 4}" text-anchor="end" fill="#1f77b4">${tick(rHi)}</text>`,
    `<text x="${L - 6}" y="${T + h}" text-anchor="end" fill="#1f77b4">${tick(rLo)}</text>`,
    `<text x="${L + w + 6}" y="${T + 4}" fill="#d62728">${tick(lHi)}</text>`,
    `<text x="${L + w + 6}" y="${T + h}" fill="#d62728">${tick(lLo)}</text>`,
    `<text x="${L}" y="${H - 12}">step 1</text>`,
    `<text x="${L + w}" y="${H - 12}" text-anchor="end">step ${n}</text>`,
    `<text x="${L + 8}" y="${T + 16}" fill="#1f77b4">mean reward</text>`,
    `<text x="${L + w - 8}" y="${T + 16}" text-anchor="end" fill="#d62728">loss</text>`,
  ];
  if (curves.reward.length > 0) parts.push(`<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="${polyline(curves.reward, L, T, w, h, rLo, rHi)}"/>`);
  if (curves.loss.length > 0) parts.push(`<polyline fill="none" stroke="#d62728" stroke-width="1.5" stroke-dasharray="4 3" points="${polyline(curves.loss, L, T, w, h, lLo, lHi)}"/>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
