/**
 * The fleet page's "lend this tab": the tab becomes a rollout worker of the fleet (RolloutWorker
 * over the page's WebSocket connection, sampling on this tab's WebGPU device): RL jobs' trainers
 * hand it slices of their steps' episodes, as they hand them to `npm run fleet -- rollout-worker`
 * hosts. The panel shows the slices served and failed, and the worker's last lines.
 */
import { html, type TemplateResult } from 'lit';
import type { NatsConnection } from '@nats-io/nats-core';
import { RolloutWorker } from '../../../src/fleet/browser.ts';
import { errorText } from './page.ts';

export class LendPanel {
  #worker: RolloutWorker | null = null;
  #log: string[] = [];
  #error = '';
  #timer: ReturnType<typeof setInterval> | null = null;
  readonly name = `tab-${Math.random().toString(36).slice(2, 8)}`;
  readonly #redraw: () => void;

  constructor(redraw: () => void) {
    this.#redraw = redraw;
  }

  get lending(): boolean {
    return this.#worker !== null;
  }

  async start(nc: NatsConnection): Promise<void> {
    if (this.#worker) return;
    this.#error = '';
    const w = new RolloutWorker(nc, { name: this.name, log: (line) => (this.#log = [...this.#log.slice(-4), line]) });
    try {
      await w.start();
    } catch (e) {
      this.#error = errorText(e);
      return this.#redraw();
    }
    this.#worker = w;
    // The counts change inside the worker: the panel reads them once a second while lending.
    this.#timer = setInterval(() => this.#redraw(), 1000);
    this.#redraw();
  }

  async stop(): Promise<void> {
    const w = this.#worker;
    if (!w) return;
    this.#worker = null;
    if (this.#timer) clearInterval(this.#timer);
    await w.stop().catch((e) => (this.#error = errorText(e)));
    this.#redraw();
  }

  view(nc: NatsConnection | null): TemplateResult {
    const w = this.#worker;
    return html`
      <h2>Lend this tab</h2>
      <p class="about">This tab can sample rollouts for the fleet's RL jobs, on its own WebGPU device, as
        <code>npm run fleet -- rollout-worker</code> does on a host: a job's trainer hands it slices of a step's episodes and
        trains on what comes back (at the job's staleness 0, what the tab samples is what the trainer would have sampled).</p>
      <p><button id="lend" ?disabled=${!nc && !w} @click=${() => (w ? this.stop() : nc && this.start(nc))}>${w ? 'Stop lending' : 'Lend this tab as a rollout worker'}</button></p>
      <p id="lend-status" data-lending=${w ? 'yes' : 'no'} data-served=${w?.counts.served ?? 0} data-failed=${w?.counts.failed ?? 0}>
        ${w ? `Lending as ${this.name}: ${w.counts.served} slices served, ${w.counts.failed} failed.` : 'Not lending.'}</p>
      ${this.#error ? html`<p class="error">${this.#error}</p>` : ''}
      ${this.#log.length ? html`<pre class="lend-log">${this.#log.join('\n')}</pre>` : ''}`;
  }
}
