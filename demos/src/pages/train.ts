/**
 * The train page: choose an environment and an algorithm, train in this tab (the GPU worker
 * behind the scheduler), watch the learning curve, progress and device shares; finished runs are
 * saved in IndexedDB and listed, and can be tried (loaded into the worker and played), exported as
 * PEFT files, or deleted. Settings come from the form, and from the URL for a first visit
 * (`train.html?env=nim&algo=rloo&steps=10`).
 *
 * Beside the from-scratch presets, the model picker (picker.ts) offers Hub models and a custom
 * repo id, each judged against this adapter before any download; a pretrained run downloads the
 * checkpoint into Cache Storage (with progress; the next visit reads it from there alone) and
 * trains a LoRA adapter on it. `?hub=URL` sets the Hub endpoint, `?budget=MiB` the page's budget.
 */
import { html, render } from 'lit';
import { unsafeSVG } from 'lit/directives/unsafe-svg.js';
import { runCurvesSvgWith } from '../../../src/plot/run_curves.ts';
import { ENV_NAMES, jobEnv, type StepMetrics, type WorkerService } from '../../../src/mod.ts';
import { DemoStore, download, type SavedRun, savedCurves } from '../lib/adapters.ts';
import { type Curve, trainingCurve } from '../lib/curve.ts';
import { fmtBytes } from '../lib/hub_models.ts';
import { BASE_LABELS, DEFAULT_SETTINGS, DEMO_ALGOS, DEMO_BASES, DEMO_MODELS, DemoJob, type DemoSettings, FULL_SETTINGS, isPretrained, parseSettings } from '../lib/job.ts';
import { ModelPicker, pageBudgetBytes } from '../lib/picker.ts';
import { errorText, fmtPct, fmtSeconds, pageService, pageShell, query } from '../lib/page.ts';
import { type ShareGroup, SharePanel } from '../lib/shares.ts';
import { type Episode, playEpisodes } from '../lib/talk.ts';

const app = document.getElementById('app')!;
const store = new DemoStore();
const tryIds = new Set<string>();
let settings: DemoSettings = parseSettings(query(), undefined, { pretrained: true });
let job: DemoJob | null = null;
let jobs: DemoJob[] = [];
let runs: SavedRun[] = [];
let message: { kind: 'info' | 'error'; text: string } | null = null;
let lastStep: StepMetrics | null = null;
let tried: { name: string; episodes: Episode[] | null } | null = null;
const busy = new Set<string>();
let curve: Curve;
let shares: SharePanel | null = null;
/** The saved run whose curves are drawn (default: the newest). */
let shown: string | null = null;

const status = await pageShell('train');
const budgetBytes = pageBudgetBytes(status.ok && status.software, query()('budget'));
const picker = new ModelPicker(status.ok ? status.adapter : null, budgetBytes, () => draw());
const service = () => pageService({ memoryBudgetBytes: budgetBytes });

/** The defaults in words, for the software-adapter note. */
const DEFAULT_RUN = `${DEFAULT_SETTINGS.steps} RL steps of ${DEFAULT_SETTINGS.groups} × ${DEFAULT_SETTINGS.groupSize} from the shipped warm start, ${DEFAULT_SETTINGS.evalEpisodes} held-out episodes before and after`;

/** This page with the full run's settings (the environment and algorithm as chosen). */
function fullRunHref(): string {
  const f = { ...FULL_SETTINGS, env: settings.env, algo: settings.algo };
  const q = new URLSearchParams({ env: f.env, algo: f.algo, model: f.model, base: f.base, warmstart: String(f.warmstart), steps: String(f.steps), groups: String(f.groups), groupSize: String(f.groupSize), evalEpisodes: String(f.evalEpisodes), seed: String(f.seed) });
  return `?${q}`;
}

/** The drawn curves of a saved run (drawn once: the page redraws on every step of a job). */
const curveSvgs = new Map<string, string>();

/** The curves of the saved run `shown` (else the newest): curve.svg's specification, drawn in this page. */
function savedCurveView() {
  const r = runs.find((x) => x.name === shown) ?? runs[0];
  if (!r) return '';
  const key = `${r.name}@${r.meta.createdAt}`; // a deleted name may be taken again by a later run
  if (!curveSvgs.has(key)) curveSvgs.set(key, runCurvesSvgWith(document, savedCurves(r)));
  return html`<section class="card"><h2>Finished run: ${r.name} <small>(kept with the run in IndexedDB)</small></h2>
    <div id="saved-curve" class="saved-curve" data-run=${r.name} data-rl-steps=${r.info.rewardCurve.length}
      data-success-before=${r.info.successBefore} data-success-after=${r.info.successAfter}>${unsafeSVG(curveSvgs.get(key)!)}</div></section>`;
}

function draw(): void {
  const running = job?.running ?? false;
  const field = (name: keyof DemoSettings, label: string, min = 0) =>
    html`<label>${label} <input name=${name} type="number" min=${min} .value=${String(settings[name])} ?disabled=${running} /></label>`;
  const select = (name: 'env' | 'algo' | 'model', label: string, options: readonly string[]) =>
    html`<label>${label} <select name=${name} ?disabled=${running}>${options.map((o) => html`<option ?selected=${settings[name] === o}>${o}</option>`)}</select></label>`;
  const hubRepos = [...picker.rows, ...(picker.custom ? [picker.custom] : [])].filter((r) => r.fit?.ok).map((r) => r.repo);
  const models = [...DEMO_MODELS, ...new Set([...hubRepos, ...(isPretrained(settings) ? [settings.model] : [])])];
  const pretrained = isPretrained(settings);
  render(
    html`
      <h1>Train an agent in this tab</h1>
      ${status.ok ? '' : html`<p class="error">${status.message}</p>`}
      <form id="settings" class="settings" @submit=${start}>
        ${select('env', 'environment', ENV_NAMES)} ${select('algo', 'algorithm', DEMO_ALGOS)} ${select('model', 'model', models)}
        ${pretrained ? '' : html`<label>start from <select name="base" ?disabled=${running}>${DEMO_BASES.map((o) => html`<option value=${o} ?selected=${settings.base === o}>${BASE_LABELS[o]}</option>`)}</select></label>`}
        ${field('warmstart', 'SFT warm-start steps')} ${field('steps', 'RL steps', 1)} ${field('groups', 'tasks per step', 1)}
        ${field('groupSize', 'attempts per task', 1)} ${field('evalEpisodes', 'held-out episodes')} ${field('seed', 'seed')}
        <button id="start" type="submit" ?disabled=${running || !status.ok}>Train</button>
        <button id="stop" type="button" ?disabled=${!running} @click=${() => job?.stop()}>Stop</button>
      </form>
      ${pretrained
        ? html`<p class="about">${settings.model} from the Hub: LoRA ${settings.algo.toUpperCase()} on the pretrained model, in its own chat template and native
          tool-call syntax${settings.warmstart > 0 ? ', after a LoRA SFT warm start on the environment\'s demonstrations' : ''} — downloaded into this browser's cache
          on first use, then the library's job runner (<code>runTraining</code>) over the GPU worker and its scheduler.</p>`
        : settings.base === 'shipped'
        ? html`<p class="about">A ${settings.model} transformer from the full-parameter SFT warm start on the environment's demonstrations that
          <code>npm run train</code> runs first, shipped with the demos${settings.warmstart > 0 ? `, ${settings.warmstart} more SFT steps in this tab` : ''},
          then LoRA ${settings.algo.toUpperCase()} — the library's job runner (<code>runTraining</code>) over the GPU worker and its scheduler.</p>`
        : html`<p class="about">A ${settings.model} transformer from scratch: a full-parameter SFT warm start on the environment's demonstrations, then LoRA
          ${settings.algo.toUpperCase()} — the library's job runner (<code>runTraining</code>) over the GPU worker and its scheduler.</p>`}
      ${status.ok && status.software ? html`<p class="note" id="software-note">This browser's WebGPU adapter is a software one (${status.description}):
        every kernel runs on the CPU. The defaults (${DEFAULT_RUN}) take about 3 minutes here; the full run — <code>npm run train</code>'s, its
        ${FULL_SETTINGS.warmstart}-step warm start in this tab, then ${FULL_SETTINGS.steps} RL steps of ${FULL_SETTINGS.groups} × ${FULL_SETTINGS.groupSize} —
        takes ten minutes or more here (<a id="full-run" href=${fullRunHref()}>start it anyway</a>); on a GPU it is a matter of minutes.</p>` : ''}
      ${message ? html`<p class=${message.kind} id="message">${message.text}</p>` : ''}
      <section class="grid">
        <div class="card">
          <h2>Learning curve</h2>
          <div id="curve" class="curve"></div>
          ${progressView()}
        </div>
        <div class="card">
          <h2>Device time</h2>
          <div id="shares"></div>
          ${shares ? '' : html`<p class="note">The page's GPU worker and its scheduler start with the first job.</p>`}
        </div>
      </section>
      ${savedCurveView()}
      <section class="card" id="picker">
        <h2>Start from a Hub model <small>(judged against this adapter before any download: its limits, and this page's ${fmtBytes(budgetBytes)} budget, <code>?budget=MiB</code> to change)</small></h2>
        ${picker.view(settings.model, running, pick)}
        <p class="settings">
          <label>custom repo id <input id="custom-repo" placeholder="org/name" style="width: 16rem" ?disabled=${running} /></label>
          <label>Hub endpoint <input id="hub-endpoint" form="settings" name="hub" placeholder="https://huggingface.co" style="width: 16rem" .value=${settings.hub} ?disabled=${running} /></label>
          <button id="check-repo" type="button" ?disabled=${running || picker.checking} @click=${checkRepo}>${picker.checking ? 'Reading config.json…' : 'Check'}</button>
        </p>
      </section>
      <section class="card">
        <h2>Hub models in this browser <small>(Cache Storage)</small></h2>
        ${picker.cacheView(running, deleteCached)}
      </section>
      <section class="card">
        <h2>Adapters in this browser <small>(IndexedDB)</small></h2>
        ${runs.length === 0 ? html`<p id="no-adapters">None yet: a finished run is saved here.</p>` : html`
          <table id="adapters" class="adapters">
            <thead><tr><th>name</th><th>env</th><th>algorithm</th><th>model</th><th>steps</th><th>held-out success</th><th>size</th><th>saved</th><th></th></tr></thead>
            <tbody>${runs.map((r) => html`
              <tr data-adapter=${r.name}>
                <td>${r.name}</td><td>${r.info.settings.env}</td><td>${r.info.settings.algo}</td><td>${r.info.cfg.name}</td>
                <td>${r.info.settings.base === 'shipped' ? 'shipped warm start' : `${r.info.settings.warmstart} SFT`}${r.info.settings.base === 'shipped' && r.info.settings.warmstart > 0 ? ` + ${r.info.settings.warmstart} SFT` : ''} + ${r.info.settings.steps} RL</td>
                <td>${r.info.settings.evalEpisodes > 0 ? `${fmtPct(r.info.successBefore)} → ${fmtPct(r.info.successAfter)}` : '–'}</td>
                <td>${(r.meta.bytes / 1024).toFixed(0)} KiB</td>
                <td>${new Date(r.meta.createdAt).toLocaleString()}</td>
                <td class="actions">
                  <button class="curve-btn" @click=${() => { shown = r.name; draw(); }}>Curves</button>
                  <button class="try" ?disabled=${busy.has(r.name) || !status.ok} @click=${() => tryRun(r.name)}>Load &amp; play</button>
                  <button class="export" ?disabled=${busy.has(r.name)} @click=${() => exportRun(r.name)}>Export PEFT</button>
                  <button class="delete" ?disabled=${busy.has(r.name)} @click=${() => deleteRun(r.name)}>Delete</button>
                </td>
              </tr>`)}
            </tbody>
          </table>`}
        ${tried ? html`<div id="tried" data-adapter=${tried.name}>
          <h3>${tried.name}: ${tried.episodes ? `${tried.episodes.length} episodes` : 'loading into the GPU worker…'}</h3>
          ${(tried.episodes ?? []).map((e) => html`<figure class="episode"><figcaption>reward ${e.reward.toFixed(2)} (${e.endReason})</figcaption><pre>${e.text}</pre></figure>`)}
        </div>` : ''}
      </section>
    `,
    app,
  );
  // The select shows settings.model even after the user touched it (options' `selected` is only the default).
  const sel = app.querySelector<HTMLSelectElement>('select[name="model"]');
  if (sel) sel.value = settings.model;
}

/** Picks a Hub model (one that fits): it becomes the form's model, with no warm start (a pretrained model's default). */
function pick(repo: string): void {
  try {
    settings = { ...formSettings(), model: repo, warmstart: 0 };
    message = null;
  } catch (e) {
    message = { kind: 'error', text: errorText(e) };
  }
  draw();
}

/** Reads a custom repo's config.json (cache first, then the Hub at the endpoint given) and picks it when it fits. */
async function checkRepo(): Promise<void> {
  const repo = (document.getElementById('custom-repo') as HTMLInputElement).value.trim();
  try {
    settings = parseSettings((k) => (k === 'model' ? repo : null), formSettings(), { pretrained: true });
  } catch (e) {
    message = { kind: 'error', text: errorText(e) };
    return draw();
  }
  const row = await picker.check(repo, settings.hub);
  if (row.fit?.ok) pick(repo);
  else {
    message = { kind: 'error', text: `${repo}: ${row.error ?? (row.fit ? `refused: ${row.fit.reason}` : 'no WebGPU adapter to judge it on')}` };
    draw();
  }
}

function deleteCached(repo: string): Promise<void> {
  return withBusy(repo, async () => {
    await picker.deleteCached(repo);
    message = { kind: 'info', text: `Deleted ${repo} from this browser's cache.` };
  });
}

function progressView() {
  if (!job) return html`<p id="progress" data-phase="idle">Not started.</p>`;
  const eta = job.done > 0 && job.running ? (job.elapsed / job.done) * (job.total - job.done) : NaN;
  const m = lastStep;
  const d = job.download;
  return html`<div id="progress" data-phase=${job.phase} data-done=${job.done}>
    ${d ? html`<p id="download" data-file=${d.file} data-loaded=${d.allLoaded} data-total=${d.allTotal} data-from-cache=${String(d.fromCache)}>
      ${d.fromCache ? 'Read from this browser\'s cache' : 'Downloading'} ${job.settings.model}: ${d.file} ${fmtBytes(d.loaded)} / ${fmtBytes(d.total)}
      (all files ${fmtBytes(d.allLoaded)} / ${fmtBytes(d.allTotal)})
      <progress id="download-bar" max=${Math.max(1, d.allTotal)} .value=${d.allLoaded}></progress></p>` : ''}
    ${job.opened ? html`<p id="opened" data-tool-syntax=${job.opened.format.toolSyntax?.name ?? 'tag'}>${job.settings.model} @ ${job.opened.job.commit?.slice(0, 10) ?? 'folder'}: its chat template,
      tool calls in ${job.opened.format.toolSyntax?.name ?? 'tag'} syntax, stop ids ${job.opened.eosTokenIds.join(', ')}</p>` : ''}
    <progress max=${job.total} .value=${job.done}></progress>
    <p><b>${job.phase}</b> · step ${job.done} / ${job.total} · ${fmtSeconds(job.elapsed)} elapsed${job.running ? html` · ETA ${fmtSeconds(eta)}` : ''}</p>
    ${m ? html`<p class="metrics">last: ${m.phase === 'sft' ? `SFT loss ${m.loss.toFixed(3)}` : `reward ${m.reward?.toFixed(3)}, success ${fmtPct(m.success ?? 0)}, loss ${m.loss.toFixed(4)}${m.datums === 0 ? ' (every group tied: no update)' : ''}`},
      ${m.trainTokens} tokens trained in ${m.trainSeconds.toFixed(1)} s${m.phase === 'rl' ? `, ${m.sampledTokens} sampled in ${m.sampleSeconds.toFixed(1)} s` : ''}</p>` : ''}
    ${job.result ? html`<p id="result" data-success-before=${job.result.successBefore} data-success-after=${job.result.successAfter} data-seconds=${job.result.wallSeconds.toFixed(1)}>Held-out success ${fmtPct(job.result.successBefore)} before RL → ${fmtPct(job.result.successAfter)} after (${job.result.evalEpisodes} episodes); ${job.result.wallSeconds.toFixed(0)} s in all.</p>` : ''}
  </div>`;
}

function formSettings(): DemoSettings {
  const form = document.getElementById('settings') as HTMLFormElement;
  const data = new FormData(form);
  return parseSettings((k) => data.get(k) as string | null, settings, { pretrained: true });
}

async function start(ev: Event): Promise<void> {
  ev.preventDefault();
  let svc: WorkerService;
  try {
    settings = formSettings();
    if (isPretrained(settings)) {
      // Judged before anything is downloaded: a listed model by its committed config, a custom one by its config.json.
      const row = picker.row(settings.model) ?? (await picker.check(settings.model, settings.hub));
      if (!row.fit?.ok) {
        message = { kind: 'error', text: `${settings.model}: ${row.error ?? (row.fit ? `refused: ${row.fit.reason}` : 'no WebGPU adapter to judge it on')}` };
        return draw();
      }
    }
    svc = await service();
  } catch (e) {
    message = { kind: 'error', text: errorText(e) };
    return draw();
  }
  ensurePanels(svc);
  const j = new DemoJob(svc, settings);
  job = j;
  jobs.push(j);
  lastStep = null;
  message = null;
  curve.clear();
  j.on((e) => {
    if (e.type === 'step') {
      lastStep = e.metrics;
      const m = e.metrics;
      curve.push(e.done, [m.phase === 'sft' ? m.loss : null, m.phase === 'rl' ? m.reward : null, m.phase === 'rl' ? m.success : null]);
    }
    draw();
  });
  draw();
  const r = await j.start();
  if (j.opened) await picker.refreshCache();
  if (r && j.opened) {
    message = { kind: 'info', text: `Trained a LoRA adapter on ${settings.model} (not saved: this page saves adapters of from-scratch runs only).` };
  } else if (r && j.tap.base) {
    try {
      const name = await store.save(j.settings, r, j.tap.base);
      shown = name;
      message = { kind: 'info', text: `Saved as adapter "${name}".` };
    } catch (e) {
      message = { kind: 'error', text: `The run finished but could not be saved: ${errorText(e)}` };
    }
    await refresh();
  } else if (j.phase === 'failed') {
    message = { kind: 'error', text: `Training failed: ${errorText(j.error)}` };
  } else if (j.phase === 'stopped') {
    message = { kind: 'info', text: 'Stopped.' };
  }
  draw();
}

function ensurePanels(svc: WorkerService): void {
  shares ??= new SharePanel(document.getElementById('shares')!, svc.scheduler, (): ShareGroup[] => [
    ...jobs.map((j, i) => ({ label: `training ${i + 1}: ${j.label}`, color: ['#2471a3', '#8e44ad', '#16a085'][i % 3], ids: j.tap.schedIds })),
    { label: 'load & play', color: '#d35400', ids: tryIds },
  ]);
}

async function refresh(): Promise<void> {
  try {
    runs = await store.list();
  } catch (e) {
    message = { kind: 'error', text: `Could not read the adapters in IndexedDB: ${errorText(e)}` };
  }
  draw();
}

async function withBusy(name: string, f: () => Promise<void>): Promise<void> {
  busy.add(name);
  draw();
  try {
    await f();
  } catch (e) {
    message = { kind: 'error', text: `${name}: ${errorText(e)}` };
  } finally {
    busy.delete(name);
    draw();
  }
}

function tryRun(name: string): Promise<void> {
  return withBusy(name, async () => {
    tried = { name, episodes: null };
    draw();
    const svc = await service();
    ensurePanels(svc);
    const run = await store.load(name);
    const modelId = await svc.createModel(run.info.cfg, { params: run.base });
    tryIds.add(`model:${modelId}`);
    try {
      const s = await svc.createSamplingClient(modelId, { lora: run.info.lora, tensors: run.adapter });
      tryIds.add(s.id);
      try {
        const episodes = await playEpisodes(s.sample, jobEnv(run.info.settings.env), 3, { maxSeqLen: run.info.cfg.maxSeqLen, seed: Date.now() >>> 0 });
        tried = { name, episodes };
      } finally {
        await s.close();
      }
    } finally {
      await svc.releaseModel(modelId);
    }
  });
}

function exportRun(name: string): Promise<void> {
  return withBusy(name, async () => {
    const { filename, blob } = await store.exportZip(name);
    download(blob, filename);
    message = { kind: 'info', text: `Exported ${filename} (${(blob.size / 1024).toFixed(0)} KiB): PEFT adapter files and the base model.` };
  });
}

function deleteRun(name: string): Promise<void> {
  return withBusy(name, async () => {
    await store.delete(name);
    if (tried?.name === name) tried = null;
    message = { kind: 'info', text: `Deleted "${name}".` };
    runs = await store.list();
  });
}

draw();
curve = trainingCurve(document.getElementById('curve')!, { success: true });
await Promise.all([refresh(), picker.refreshCache()]);
if (status.ok && query()('autostart') === '1') document.getElementById('start')!.click();
