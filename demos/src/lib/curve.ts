/**
 * A live learning curve: uPlot over aligned columns (x, then one column per series), with points
 * appended as a job reports steps. Series may sit on different y scales (a loss and a reward);
 * a step that has no value for a series leaves a gap (null). The container carries the point
 * count in `data-points`, which the end-to-end tests read.
 */
import uPlot from 'uplot';

export interface CurveSeries {
  readonly label: string;
  readonly scale: string;
  readonly color: string;
}

export interface CurveOptions {
  readonly title?: string;
  readonly xLabel: string;
  readonly series: readonly CurveSeries[];
  /** Per scale, the least range shown (the data widens it; default: the data's range). */
  readonly ranges?: Readonly<Record<string, readonly [number, number]>>;
  readonly height?: number;
}

export class Curve {
  readonly el: HTMLElement;
  readonly plot: uPlot;
  #data: (number | null)[][];
  #resize: ResizeObserver;

  constructor(el: HTMLElement, o: CurveOptions) {
    this.el = el;
    this.#data = [[], ...o.series.map(() => [])];
    const scales: uPlot.Scales = { x: { time: false } };
    const scaleKeys = [...new Set(o.series.map((s) => s.scale))];
    for (const k of scaleKeys) {
      const r = o.ranges?.[k];
      scales[k] = r ? { auto: true, range: (_u, min, max) => [Math.min(r[0], min ?? r[0]), Math.max(r[1], max ?? r[1])] } : { auto: true };
    }
    // Steps are whole numbers: no ticks between them.
    const axes: uPlot.Axis[] = [{ label: o.xLabel, stroke: '#555', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }];
    scaleKeys.forEach((k, i) => axes.push({ scale: k, label: k, side: i === 0 ? 3 : 1, stroke: '#555', grid: { show: i === 0 } }));
    this.plot = new uPlot(
      {
        ...(o.title ? { title: o.title } : {}),
        width: Math.max(240, el.clientWidth || 480),
        height: o.height ?? 220,
        scales,
        axes,
        series: [{ label: o.xLabel }, ...o.series.map((s) => ({ label: s.label, scale: s.scale, stroke: s.color, width: 2, spanGaps: false, points: { show: true, size: 5 } }))],
        legend: { live: false },
        cursor: { show: false },
      },
      this.#data as uPlot.AlignedData,
      el,
    );
    this.#resize = new ResizeObserver(() => {
      const w = el.clientWidth;
      if (w > 0 && Math.abs(w - this.plot.width) > 4) this.plot.setSize({ width: w, height: this.plot.height });
    });
    this.#resize.observe(el);
    this.#mark();
  }

  /** Points plotted so far (x values). */
  get points(): number {
    return this.#data[0].length;
  }

  /** Append one x with a value (or null) per series. */
  push(x: number, values: readonly (number | null | undefined)[]): void {
    this.#data[0].push(x);
    for (let i = 1; i < this.#data.length; i++) {
      const v = values[i - 1];
      this.#data[i].push(v === undefined || v === null || !Number.isFinite(v) ? null : v);
    }
    this.plot.setData(this.#data as uPlot.AlignedData);
    this.#mark();
  }

  clear(): void {
    for (const col of this.#data) col.length = 0;
    this.plot.setData(this.#data as uPlot.AlignedData);
    this.#mark();
  }

  #mark(): void {
    this.el.dataset.points = String(this.points);
  }

  destroy(): void {
    this.#resize.disconnect();
    this.plot.destroy();
  }
}

/** The SFT-loss / RL-reward curve of a training run (and RL success, where asked), as every page draws it. */
export function trainingCurve(el: HTMLElement, o: { success?: boolean; height?: number } = {}): Curve {
  return new Curve(el, {
    xLabel: 'step',
    ...(o.height !== undefined ? { height: o.height } : {}),
    series: [
      { label: 'SFT loss', scale: 'loss', color: '#c0392b' },
      { label: 'RL mean reward', scale: 'reward', color: '#2471a3' },
      ...(o.success ? [{ label: 'RL success', scale: 'reward', color: '#27ae60' }] : []),
    ],
    ranges: { reward: [0, 1] },
  });
}
