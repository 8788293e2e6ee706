/**
 * Who gets the device: the scheduler's own accounting (`Scheduler.jobs()`: device time and share
 * per scheduler job) added up per job of the page — a training run is several scheduler jobs (its
 * base model, its training clients, one sampler per rollout snapshot), a chat is one sampler per
 * reply. Two columns: the share since the page started, as the scheduler reports it, and the
 * share of the last 10 seconds, from the scheduler's quantum events, which shows a chat reply
 * cutting in while a run trains.
 */
import { html, render } from 'lit';
import type { runtime } from '../../../src/mod.ts';

export interface ShareGroup {
  readonly label: string;
  readonly color: string;
  /** Scheduler job ids of this group (read at every render: they grow as the job runs). */
  readonly ids: ReadonlySet<string>;
}

const WINDOW_MS = 10_000;

export class SharePanel {
  readonly el: HTMLElement;
  readonly scheduler: runtime.Scheduler;
  readonly groups: () => readonly ShareGroup[];
  #recent: { t: number; jobId: string; ms: number }[] = [];
  #timer: ReturnType<typeof setInterval>;
  #unsub: () => void;
  #queued = false;

  constructor(el: HTMLElement, scheduler: runtime.Scheduler, groups: () => readonly ShareGroup[]) {
    this.el = el;
    this.scheduler = scheduler;
    this.groups = groups;
    this.#unsub = scheduler.on((e) => {
      if (e.type !== 'quantum') return;
      this.#recent.push({ t: performance.now(), jobId: e.jobId, ms: e.deviceMs });
      this.#schedule();
    });
    this.#timer = setInterval(() => this.render(), 1000);
    this.render();
  }

  #schedule(): void {
    if (this.#queued) return;
    this.#queued = true;
    requestAnimationFrame(() => {
      this.#queued = false;
      this.render();
    });
  }

  render(): void {
    const now = performance.now();
    while (this.#recent.length > 0 && now - this.#recent[0].t > WINDOW_MS) this.#recent.shift();
    const jobs = this.scheduler.jobs();
    const groups = this.groups();
    const groupOf = (id: string) => groups.findIndex((g) => g.ids.has(id));
    // One row per group, and a last one for scheduler jobs no group claims.
    const rows = Array.from({ length: groups.length + 1 }, () => ({ deviceMs: 0, share: 0, quanta: 0, active: 0, recentMs: 0 }));
    for (const j of jobs) {
      const g = groupOf(j.id);
      const r = rows[g < 0 ? groups.length : g];
      r.deviceMs += j.deviceMs;
      r.share += j.share;
      r.quanta += j.quanta;
      if (j.state === 'active' || j.state === 'paused' || j.state === 'waiting') r.active++;
    }
    let recentTotal = 0;
    for (const q of this.#recent) {
      const g = groupOf(q.jobId);
      rows[g < 0 ? groups.length : g].recentMs += q.ms;
      recentTotal += q.ms;
    }
    const labels = [...groups, { label: 'other', color: '#999' }];
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
    const bar = (x: number, color: string) => html`<div class="bar"><div style="width:${Math.min(100, 100 * x).toFixed(1)}%;background:${color}"></div></div>`;
    render(
      html`<table class="shares">
        <thead><tr><th>job</th><th>scheduler jobs</th><th>quanta</th><th>device time</th><th>share (all)</th><th>share (last 10 s)</th></tr></thead>
        <tbody>
          ${rows.map((r, i) => {
            if (i === groups.length && r.quanta === 0) return null;
            const recent = recentTotal > 0 ? r.recentMs / recentTotal : 0;
            return html`<tr data-group=${labels[i].label} data-share=${r.share.toFixed(4)} data-recent=${recent.toFixed(4)} data-quanta=${r.quanta}>
              <td><span class="swatch" style="background:${labels[i].color}"></span>${labels[i].label}</td>
              <td>${r.active} live</td>
              <td>${r.quanta}</td>
              <td>${(r.deviceMs / 1000).toFixed(1)} s</td>
              <td>${bar(r.share, labels[i].color)}<span class="num">${pct(r.share)}</span></td>
              <td>${bar(recent, labels[i].color)}<span class="num">${pct(recent)}</span></td>
            </tr>`;
          })}
        </tbody>
      </table>
      <p class="note">Device busy ${pct(this.scheduler.busyFraction())} of the time since the page started. Shares are the scheduler's own
      accounting of device time per quantum; interactive work (chat) is served before normal work (training) at every quantum boundary.</p>`,
      this.el,
    );
  }

  destroy(): void {
    clearInterval(this.#timer);
    this.#unsub();
  }
}
