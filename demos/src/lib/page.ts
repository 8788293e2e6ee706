/**
 * What every demo page shares: the header (navigation and the WebGPU line), the stylesheet, the
 * page's WorkerService (service.ts) and small formatters.
 */
import { html, render } from 'lit';
import { checkWebGpu, type WebGpuStatus } from './webgpu.ts';
import './style.css';

export { errorText, pageService } from './service.ts';

const PAGES = [
  ['index.html', 'home', 'webtinker demos'],
  ['train.html', 'train', 'Train'],
  ['chat.html', 'chat', 'Chat while training'],
  ['arena.html', 'arena', 'Arena'],
  ['embed.html', 'embed', 'Embed'],
  ['fleet.html', 'fleet', 'Fleet'],
] as const;

export type PageName = (typeof PAGES)[number][1];

/** Renders the header into #header and says whether WebGPU is usable here. */
export async function pageShell(active: PageName): Promise<WebGpuStatus> {
  const header = document.getElementById('header')!;
  const draw = (line: unknown) =>
    render(
      html`<nav>${PAGES.map(([href, name, label]) => html`<a href=${href} class=${name === active ? 'active' : ''}>${label}</a>`)}</nav>
        <div id="gpu-line">${line}</div>`,
      header,
    );
  draw('checking WebGPU…');
  const status = await checkWebGpu();
  draw(status.ok
    ? html`<span class="ok">WebGPU: ${status.description}</span>${status.software ? html` <span class="warn">(a software adapter: expect seconds per step, and tens of seconds for the first, which compiles the kernels)</span>` : ''}`
    : html`<span class="no-webgpu" data-testid="no-webgpu">${status.message}</span>`);
  document.body.dataset.webgpu = status.ok ? 'yes' : 'no';
  return status;
}

export const fmtPct = (x: number) => `${Math.round(100 * x)}%`;

export function fmtSeconds(s: number): string {
  if (!Number.isFinite(s) || s < 0) return '–';
  if (s < 90) return `${s.toFixed(0)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Query parameters of this page, for parseSettings. */
export function query(): (name: string) => string | null {
  const p = new URLSearchParams(location.search);
  return (name) => p.get(name);
}
