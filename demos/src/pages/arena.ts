/**
 * The arena: two agents learn Nim at the same time — two runs of the job runner on the page's
 * one scheduler, each against a player of uniformly random legal moves — with their win rates
 * (the share of each RL step's games won) drawn as they go. When both are done they play each
 * other: half the games with A moving first, half with B.
 */
import { html, render } from 'lit';
import {
  Agent,
  ByteTokenizer,
  engine,
  groupEpisodes,
  jobEnv,
  rolloutTurnBased,
  type SampleFn,
  type WorkerService,
} from '../../../src/mod.ts';
import { Curve } from '../lib/curve.ts';
import { DEMO_ALGOS, DemoJob, type DemoSettings, parseSettings } from '../lib/job.ts';
import { errorText, fmtSeconds, pageService, pageShell, query } from '../lib/page.ts';
import { SharePanel } from '../lib/shares.ts';

const app = document.getElementById('app')!;
const q = query();
const base: DemoSettings = parseSettings(q, { env: 'nim', algo: 'grpo', model: 'tiny-gpt2', hub: '', base: 'scratch', steps: 6, warmstart: 20, groups: 2, groupSize: 4, seed: 1, evalEpisodes: 0 });
let algoA = parseSettings((k) => (k === 'algo' ? q('algoA') : null), base).algo;
let algoB = parseSettings((k) => (k === 'algo' ? q('algoB') : null), { ...base, algo: 'rloo' }).algo;
let agents: DemoJob[] = [];
let winCurve: Curve;
let shares: SharePanel | null = null;
const matchIds = new Set<string>();
let match: { state: 'playing' | 'done' | 'failed'; games: number; winsA: number; winsB: number; unfinished: number; text?: string } | null = null;
let message = '';
const COLORS = ['#2471a3', '#c0392b'];
const tok = new ByteTokenizer();

const status = await pageShell('arena');

function draw(): void {
  const running = agents.some((a) => a.running);
  const algoSelect = (name: string, value: string, set: (v: DemoSettings['algo']) => void) =>
    html`<select name=${name} ?disabled=${running} @change=${(e: Event) => set((e.target as HTMLSelectElement).value as DemoSettings['algo'])}>
      ${DEMO_ALGOS.map((o) => html`<option ?selected=${value === o}>${o}</option>`)}</select>`;
  render(
    html`
      <h1>Arena: two agents learn Nim at once</h1>
      ${status.ok ? '' : html`<p class="error">${status.message}</p>`}
      <p class="about">Nim: piles of objects, each move takes one or more from one pile, whoever takes the last object wins. Each agent is a
      tiny model from scratch, warm-started on demonstration games and then trained by RL against a player of random legal moves; an
      illegal move loses the game. Both runs share the device through the scheduler. Nim games are long sequences: on a software
      adapter the defaults take several minutes and leave the win rates near zero; on a GPU, raise the warm-start and RL steps
      (<code>arena.html?warmstart=200&amp;steps=40</code>) for them to move.</p>
      <form class="settings" @submit=${start}>
        <label>agent A ${algoSelect('algoA', algoA, (v) => (algoA = v))}</label>
        <label>agent B ${algoSelect('algoB', algoB, (v) => (algoB = v))}</label>
        <label>warm-start steps <input id="warmstart" type="number" min="0" .value=${String(base.warmstart)} ?disabled=${running} /></label>
        <label>RL steps <input id="steps" type="number" min="1" .value=${String(base.steps)} ?disabled=${running} /></label>
        <button id="start" type="submit" ?disabled=${running || !status.ok}>Start both</button>
        <button type="button" ?disabled=${!running} @click=${() => agents.forEach((a) => a.stop())}>Stop</button>
      </form>
      ${message ? html`<p class="error">${message}</p>` : ''}
      <section class="grid">
        <div class="card">
          <h2>Win rate against random moves, per RL step</h2>
          <div id="wins" class="curve"></div>
          ${agents.map((a, i) => html`<p class="agent-status" data-agent=${'AB'[i]} data-phase=${a.phase} data-done=${a.done}>
            <span class="swatch" style="background:${COLORS[i]}"></span><b>${'AB'[i]} (${a.settings.algo})</b>: ${a.phase} · step ${a.done} / ${a.total} · ${fmtSeconds(a.elapsed)}
            ${a.phase === 'failed' ? html` · <span class="error">${errorText(a.error)}</span>` : ''}</p>`)}
        </div>
        <div class="card">
          <h2>Device time</h2>
          <div id="shares"></div>
        </div>
      </section>
      <section class="card">
        <h2>A against B</h2>
        ${match === null ? html`<p>When both have finished, they play each other.</p>` : html`<p id="match" data-state=${match.state}>
          ${match.state === 'playing' ? 'playing…' : match.state === 'failed' ? html`<span class="error">${match.text}</span>` : html`
            ${match.games} games: A (${algoA}) won ${match.winsA}, B (${algoB}) won ${match.winsB}${match.unfinished > 0 ? `, ${match.unfinished} unfinished` : ''}.`}
        </p>`}
      </section>
    `,
    app,
  );
}

async function start(ev: Event): Promise<void> {
  ev.preventDefault();
  let service: WorkerService;
  try {
    const get = (id: string) => (document.getElementById(id) as HTMLInputElement).value;
    const s = parseSettings((k) => (k === 'steps' || k === 'warmstart' ? get(k) : null), base);
    service = await pageService();
    agents = [
      new DemoJob(service, { ...s, algo: algoA, seed: s.seed }, `A: ${algoA}`),
      new DemoJob(service, { ...s, algo: algoB, seed: s.seed + 1 }, `B: ${algoB}`),
    ];
  } catch (e) {
    message = errorText(e);
    return draw();
  }
  message = '';
  match = null;
  winCurve.clear();
  shares ??= new SharePanel(document.getElementById('shares')!, service.scheduler, () => [
    ...agents.map((a, i) => ({ label: `agent ${a.label}`, color: COLORS[i], ids: a.tap.schedIds })),
    { label: 'A against B', color: '#7f8c8d', ids: matchIds },
  ]);
  // One row per RL step: x is the step, each agent fills its own column when it gets there.
  const rows = new Map<number, (number | null)[]>();
  let plotted = 0;
  agents.forEach((a, i) =>
    a.on((e) => {
      if (e.type === 'step' && e.metrics.phase === 'rl') {
        const row = rows.get(e.metrics.step) ?? [null, null];
        row[i] = e.metrics.success ?? 0;
        rows.set(e.metrics.step, row);
        // Points go in step order once both agents have reached a step (or one has finished).
        while (rows.has(plotted) && (rows.get(plotted)!.every((v) => v !== null) || agents.some((b) => !b.running))) {
          winCurve.push(plotted + 1, rows.get(plotted)!);
          plotted++;
        }
      }
      draw();
    }));
  draw();
  await Promise.all(agents.map((a) => a.start()));
  for (; rows.has(plotted); plotted++) winCurve.push(plotted + 1, rows.get(plotted)!);
  draw();
  if (agents.every((a) => a.result)) await faceOff(service);
}

/** The two final policies against each other. */
async function faceOff(service: WorkerService): Promise<void> {
  match = { state: 'playing', games: 0, winsA: 0, winsB: 0, unfinished: 0 };
  draw();
  const opened: (() => Promise<void>)[] = [];
  try {
    const samples: SampleFn[] = [];
    for (const a of agents) {
      const b = a.tap.base!;
      const modelId = await service.createModel(b.cfg, { params: b.params ?? engine.initParameters(b.cfg, b.seed ?? 0) });
      matchIds.add(`model:${modelId}`);
      const s = await service.createSamplingClient(modelId, { lora: a.result!.trained.lora!, tensors: a.result!.trained.tensors });
      matchIds.add(s.id);
      opened.push(async () => {
        await s.close();
        await service.releaseModel(modelId);
      });
      samples.push(s.sample);
    }
    const env = jobEnv('nim');
    if (env.kind !== 'game') throw new Error('nim is a two-player game');
    const cfg = agents[0].options.model;
    const mk = (sample: SampleFn, id: string) =>
      new Agent({
        sample, id, tokenizer: tok, maxTurns: env.maxTurns, maxNewTokens: env.maxNewTokens, maxSequenceTokens: cfg.maxSeqLen, temperature: 0.7,
        ...(env.format ? { format: env.format } : {}),
      });
    const [A, B] = [mk(samples[0], 'A'), mk(samples[1], 'B')];
    const half = 4;
    const seed = 0xa7e4a;
    let winsA = 0, winsB = 0, unfinished = 0;
    for (const [seats, aSeat] of [[[A, B], 0], [[B, A], 1]] as const) {
      const r = await rolloutTurnBased(env.spec, seats, groupEpisodes(half, 1, seed + aSeat), { seed: seed + aSeat, maxSteps: 2 * env.maxTurns });
      for (const g of r.games) {
        const winner = g.rewardsP.findIndex((x) => x > 0);
        if (winner < 0) unfinished++;
        else if (winner === aSeat) winsA++;
        else winsB++;
      }
    }
    match = { state: 'done', games: 2 * half, winsA, winsB, unfinished };
  } catch (e) {
    match = { state: 'failed', games: 0, winsA: 0, winsB: 0, unfinished: 0, text: errorText(e) };
  } finally {
    for (const close of opened) await close().catch(() => {});
    draw();
  }
}

draw();
winCurve = new Curve(document.getElementById('wins')!, {
  xLabel: 'RL step',
  series: [
    { label: 'A win rate', scale: 'win rate', color: COLORS[0] },
    { label: 'B win rate', scale: 'win rate', color: COLORS[1] },
  ],
  ranges: { 'win rate': [0, 1] },
});
