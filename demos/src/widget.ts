/**
 * `<webtinker-demo>`: a small live training run to embed in a documentation page. One script tag
 * (the built `webtinker-demo.js`, which fetches its GPU worker from beside itself) and one element:
 *
 *   <script type="module" src="webtinker-demo.js"></script>
 *   <webtinker-demo env="calculator" steps="20"></webtinker-demo>
 *
 * Attributes, each defaulting to the demo pages' run (QUICK_SETTINGS: gpt2-100k from the warm start
 * shipped with the demos, 10 GRPO steps of 8 × 4, held-out success before and after — learning
 * shows within about 3 minutes even on a software adapter): env (calculator | guess-number | nim),
 * steps (RL steps), base (shipped | scratch: where the model starts; scratch, and environments
 * with no shipped warm start, warm-start in the tab), warmstart (SFT steps in the tab), algo (grpo
 * | rloo | reinforce | ppo | dpo), model (tiny-gpt2 | gpt2-100k | gpt2-1m), seed, evals (held-out
 * episodes before and after RL, 0 for none), autostart (start without waiting for a click). Where WebGPU is missing — no navigator.gpu,
 * or no adapter — the element says so in one sentence and starts nothing. Every widget on a page
 * shares one GPU worker, whose scheduler takes turns between them.
 */
import { css, html, LitElement, type PropertyValues, unsafeCSS } from 'lit';
import uplotCss from 'uplot/dist/uPlot.min.css?inline';
import { type Curve, trainingCurve } from './lib/curve.ts';
import { DemoJob, type DemoSettings, parseSettings, QUICK_SETTINGS } from './lib/job.ts';

const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
const PHASE_LINES: Readonly<Record<string, string>> = {
  starting: 'starting the GPU worker…',
  warmstart: 'SFT warm start…',
  'eval-before': 'measuring held-out success before RL…',
  rl: 'RL…',
  'eval-after': 'measuring held-out success after RL…',
};
import { errorText, pageService } from './lib/service.ts';
import { checkWebGpu } from './lib/webgpu.ts';

type WidgetState = 'checking' | 'no-webgpu' | 'ready' | 'running' | 'done' | 'stopped' | 'error';

export class WebtinkerDemo extends LitElement {
  static override properties = {
    env: { type: String },
    steps: { type: Number },
    base: { type: String },
    warmstart: { type: Number },
    evals: { type: Number },
    algo: { type: String },
    model: { type: String },
    seed: { type: Number },
    autostart: { type: Boolean },
    state: { state: true },
    message: { state: true },
    line: { state: true },
  };

  static override styles = [
    unsafeCSS(uplotCss),
    css`
      :host { display: block; font: 14px/1.4 system-ui, sans-serif; color: #1d2330; border: 1px solid #dde2ea; border-radius: 6px; padding: 0.6rem 0.8rem; max-width: 640px; background: #fff; }
      header { display: flex; justify-content: space-between; align-items: baseline; gap: 0.5rem; }
      .title { font-weight: 600; }
      .curve { width: 100%; min-height: 160px; }
      .line { font-size: 0.85rem; color: #445; margin: 0.25rem 0; }
      .message { font-weight: 600; color: #b03a2e; margin: 0.5rem 0; }
      .foot { font-size: 0.75rem; color: #778; }
      button { font: inherit; padding: 0.15rem 0.6rem; cursor: pointer; border-radius: 4px; border: 1px solid #2471a3; background: #2471a3; color: #fff; }
      button:disabled { opacity: 0.5; cursor: default; }
    `,
  ];

  declare env: string | undefined;
  declare steps: number | undefined;
  declare base: string | undefined;
  declare warmstart: number | undefined;
  declare evals: number | undefined;
  declare algo: string | undefined;
  declare model: string | undefined;
  declare seed: number | undefined;
  declare autostart: boolean;
  declare state: WidgetState;
  declare message: string;
  declare line: string;
  #job: DemoJob | null = null;
  #curve: Curve | null = null;
  #device = '';

  constructor() {
    super();
    this.autostart = false;
    this.state = 'checking';
    this.message = '';
    this.line = '';
  }

  override connectedCallback(): void {
    super.connectedCallback();
    void this.#check();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.#job?.stop();
  }

  async #check(): Promise<void> {
    const status = await checkWebGpu();
    if (!status.ok) {
      this.state = 'no-webgpu';
      this.message = status.message;
      return;
    }
    this.#device = `${status.description}${status.software ? ' (software adapter: slow)' : ''}`;
    this.state = 'ready';
    if (this.autostart) {
      await this.updateComplete;
      void this.start();
    }
  }

  /** The run the attributes ask for, the rest QUICK_SETTINGS' (a ConfigError names a bad attribute). */
  settings(): DemoSettings {
    const attrs: Record<string, unknown> = {
      env: this.env, algo: this.algo, model: this.model, base: this.base, steps: this.steps, warmstart: this.warmstart, seed: this.seed, evalEpisodes: this.evals,
    };
    return parseSettings((k) => (attrs[k] === undefined || attrs[k] === null ? null : String(attrs[k])), QUICK_SETTINGS);
  }

  /** Start the run (what the button does). */
  async start(): Promise<void> {
    if (this.state === 'running' || this.state === 'no-webgpu' || this.state === 'checking') return;
    let job: DemoJob;
    try {
      job = new DemoJob(await pageService(), this.settings());
    } catch (e) {
      this.state = 'error';
      this.message = errorText(e);
      return;
    }
    this.#job = job;
    this.#curve?.clear();
    this.state = 'running';
    this.line = 'starting the GPU worker…';
    job.on((e) => {
      if (e.type === 'phase') this.line = PHASE_LINES[e.phase] ?? `${e.phase}…`;
      if (e.type === 'step') {
        const m = e.metrics;
        this.#curve?.push(e.done, [m.phase === 'sft' ? m.loss : null, m.phase === 'rl' ? m.reward : null]);
        this.line = `step ${e.done}/${e.total} · ${m.phase === 'sft' ? `warm start, loss ${m.loss.toFixed(3)}` : `RL, mean reward ${m.reward?.toFixed(2)}`} · ${job.elapsed.toFixed(0)} s`;
      }
    });
    const r = await job.start();
    if (r) {
      this.state = 'done';
      const evals = r.evalEpisodes > 0 ? ` · held-out success ${pct(r.successBefore)} → ${pct(r.successAfter)}` : '';
      this.line = `done in ${r.wallSeconds.toFixed(0)} s · ${r.rewardCurve.length} RL steps, mean reward ${r.rewardCurve[0]?.toFixed(2) ?? '–'} → ${r.rewardCurve.at(-1)?.toFixed(2) ?? '–'}${evals}`;
      this.dataset.successBefore = String(r.successBefore);
      this.dataset.successAfter = String(r.successAfter);
    } else if (job.phase === 'stopped') {
      this.state = 'stopped';
      this.line = 'stopped';
    } else {
      this.state = 'error';
      this.message = `Training failed: ${errorText(job.error)}`;
    }
  }

  stop(): void {
    this.#job?.stop();
  }

  protected override updated(changed: PropertyValues): void {
    super.updated(changed);
    this.dataset.state = this.state;
    const el = this.renderRoot.querySelector<HTMLElement>('.curve');
    if (el && !this.#curve) {
      this.#curve = trainingCurve(el, { height: 160 });
    }
  }

  protected override render() {
    const title = html`<span class="title">webtinker · ${(this.algo ?? QUICK_SETTINGS.algo).toUpperCase()} on ${this.env ?? QUICK_SETTINGS.env}</span>`;
    if (this.state === 'no-webgpu') {
      return html`<header>${title}</header><p class="message" part="message">${this.message}</p>`;
    }
    const running = this.state === 'running';
    let about = '';
    try {
      const s = this.settings();
      about = `${s.model}${s.base === 'shipped' ? ' from its shipped warm start' : ` from scratch: ${s.warmstart} warm-start steps`}${s.base === 'shipped' && s.warmstart > 0 ? ` + ${s.warmstart} SFT steps` : ''}, then ${s.steps} ${s.algo.toUpperCase()} steps of ${s.groups} × ${s.groupSize}${s.evalEpisodes > 0 ? `, held-out success before and after (${s.evalEpisodes} episodes)` : ''}, in this tab`;
    } catch (e) {
      about = errorText(e);
    }
    return html`
      <header>${title}
        ${running ? html`<button @click=${() => this.stop()}>Stop</button>` : html`<button ?disabled=${this.state === 'checking'} @click=${() => this.start()}>${this.state === 'ready' ? 'Train' : 'Train again'}</button>`}
      </header>
      <div class="curve"></div>
      <p class="line" part="line">${this.state === 'checking' ? 'checking WebGPU…' : this.state === 'ready' ? about : this.line}</p>
      ${this.state === 'error' ? html`<p class="message" part="message">${this.message}</p>` : ''}
      <p class="foot">${this.#device ? `WebGPU: ${this.#device}` : ''}</p>
    `;
  }
}

if (!customElements.get('webtinker-demo')) customElements.define('webtinker-demo', WebtinkerDemo);

declare global {
  interface HTMLElementTagNameMap {
    'webtinker-demo': WebtinkerDemo;
  }
}
