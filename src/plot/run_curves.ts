/**
 * A run's curves drawn with Observable Plot — the one specification of the CLI's curve.svg
 * (src/cli/plot.ts renders it without a browser, on linkedom's DOM) and of a finished run's curve
 * on the demo pages (the page's own document): the SFT warm start's loss beside the RL steps'
 * mean reward and loss, with the held-out evaluations (success before and after RL) as points —
 * labelled axes, gridlines, ticks Plot chooses. One SVG, the panels side by side under the title.
 *
 * Departures from a plain line chart: the reward axis always spans [0, 1] at least (a constant
 * reward gets a readable axis, not −0.5…0.5), and the RL loss, whose scale has nothing to do with
 * the reward's, gets its own panel rather than a second axis over the data.
 */
import * as Plot from '@observablehq/plot';

export interface RunCurves {
  readonly title: string;
  readonly subtitle?: string;
  /** Mean reward per RL step. */
  readonly reward: readonly number[];
  /** Loss per RL step (for an SFT job: per SFT step). */
  readonly loss: readonly number[];
  /** The warm start's loss per SFT step. */
  readonly sftLoss?: readonly number[];
  /** Held-out success (reward > 0) before RL (after the warm start) and after. */
  readonly evaluation?: { readonly before: number; readonly after: number; readonly episodes: number };
  /** What `loss` is the loss of ('RL' by default; 'SFT' for an SFT job). */
  readonly lossPhase?: 'RL' | 'SFT';
}

const W = 420;
const H = 280;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

type Point = { step: number; value: number; series: string };
const finite = (ys: readonly number[], series: string, first = 1): Point[] => ys.flatMap((value, i) => (Number.isFinite(value) ? [{ step: i + first, value, series }] : []));

function panel(document: Document, marks: Plot.Markish[], x: string, y: string, yDomain?: [number, number]): string {
  const svg = Plot.plot({
    document, width: W, height: H, marginLeft: 60, marginBottom: 40, grid: true, style: { fontSize: '11px' },
    // Two significant digits, exponents for tiny values (GRPO's surrogate loss is ~1e-8): labels fit the margin.
    x: { label: x, labelAnchor: 'center', labelArrow: 'none' }, y: { label: y, labelArrow: 'none', tickFormat: '.2~g', ...(yDomain ? { domain: yDomain } : {}) },
    color: { legend: false },
    marks,
  }) as unknown as { outerHTML: string };
  return svg.outerHTML;
}

/** The run's curves as one standalone SVG document, drawn with `document` (a browser's, or linkedom's). */
export function runCurvesSvgWith(document: Document, c: RunCurves): string {
  const panels: string[] = [];
  const sft = finite(c.sftLoss ?? [], 'SFT loss');
  if (sft.length > 0) {
    panels.push(panel(document, [Plot.lineY(sft, { x: 'step', y: 'value', stroke: '#7f7f7f' }), Plot.ruleY([0])], 'SFT step', 'warm-start loss'));
  }
  const reward = finite(c.reward, 'mean reward');
  if (reward.length > 0 || c.evaluation) {
    const ys = [...reward.map((p) => p.value), ...(c.evaluation ? [c.evaluation.before, c.evaluation.after] : [])];
    const domain: [number, number] = [Math.min(0, ...ys), Math.max(1, ...ys)];
    const n = Math.max(1, c.reward.length);
    const evals = c.evaluation ? [{ step: 0, value: c.evaluation.before, series: 'held-out success' }, { step: n, value: c.evaluation.after, series: 'held-out success' }] : [];
    panels.push(panel(document, [
      Plot.lineY(reward, { x: 'step', y: 'value', stroke: '#1f77b4' }),
      Plot.dot(evals, { x: 'step', y: 'value', fill: '#2ca02c', r: 4, symbol: 'diamond' }),
      Plot.text(evals, { x: 'step', y: 'value', text: (d: Point) => `${(100 * d.value).toFixed(0)}%`, dy: -10, fill: '#2ca02c' }),
      Plot.text(reward.length > 0 ? [reward.at(-1)!] : [], { x: 'step', y: 'value', text: () => 'reward', dx: -18, dy: 10, fill: '#1f77b4' }),
    ], 'RL step', `mean reward · held-out success${c.evaluation ? ` (${c.evaluation.episodes} ep.)` : ''}`, domain));
  }
  const loss = finite(c.loss, 'loss');
  if (loss.length > 0) {
    panels.push(panel(document, [Plot.lineY(loss, { x: 'step', y: 'value', stroke: '#d62728' }), Plot.ruleY([0])], `${c.lossPhase ?? 'RL'} step`, `${c.lossPhase ?? 'RL'} loss`));
  }
  const top = c.subtitle ? 44 : 28;
  const width = Math.max(1, panels.length) * W;
  const body = panels.map((p, i) => `<g class="panel" transform="translate(${i * W},${top})">${p}</g>`).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + top}" viewBox="0 0 ${width} ${H + top}" font-family="system-ui, sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="12" y="18" font-size="14" font-weight="bold">${esc(c.title)}</text>`,
    ...(c.subtitle ? [`<text x="12" y="36" font-size="12" fill="#444">${esc(c.subtitle)}</text>`] : []),
    panels.length === 0 ? `<text x="12" y="${top + 20}" font-size="12">no steps</text>` : body,
    '</svg>',
    '',
  ].join('\n');
}
