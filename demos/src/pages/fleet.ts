/**
 * The fleet page: connects to a fleet's NATS server over WebSocket (`?nats=ws://host:port`, or the
 * form), follows every job through the WT_EVENTS stream (one ordered consumer over all jobs, from
 * the start, so a job's history folds exactly as `npm run fleet -- status` folds it), draws each
 * job's mean reward per RL step as its step events arrive, submits jobs checked by the CLI's own
 * parsers (parseFleetArgs, then makeJob — the same refusals as `npm run fleet -- submit`), cancels
 * them, and copies a finished job's adapter into this browser's demo store (fleet_runs.ts).
 */
import { html, render } from 'lit';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectFleetWs, openStore } from '../../../src/fleet/browser.ts';
import { parseFleetArgs, priorityOf } from '../../../src/fleet/cli_args.ts';
import { cancelJob, type FleetCtx, submitJob } from '../../../src/fleet/control.ts';
import { type FleetEvent, foldEvents, type FoldedJob } from '../../../src/fleet/events.ts';
import { ensureFleet, EVENTS_STREAM, EVENTS_SUBJECT, makeJob } from '../../../src/fleet/jobs.ts';
import { ALGOS, ConfigError, ENV_NAMES, type KvStore, PRESETS, type StepMetrics, TRAIN_DEFAULTS } from '../../../src/mod.ts';
import { DemoStore } from '../lib/adapters.ts';
import { Curve } from '../lib/curve.ts';
import { saveFleetRun } from '../lib/fleet_runs.ts';
import { LendPanel } from '../lib/lend.ts';
import { errorText, pageShell, query } from '../lib/page.ts';

type Message = { kind: 'info' | 'error'; text: string } | null;

interface JobView {
  readonly id: string;
  readonly events: FleetEvent[];
  readonly el: HTMLElement;
  readonly head: HTMLElement;
  readonly curve: Curve;
  /** RL steps plotted, as (step, reward) — compared with the fold to redraw a resumed run. */
  plotted: [number, number | null][];
  /** Steps of the phase running now, from its 'phase' event. */
  phaseSteps?: number;
  busy: boolean;
  message: Message;
  saved: boolean;
}

const store = new DemoStore();
const get = query();
const jobsEl = document.getElementById('jobs')!;
const jobs = new Map<string, JobView>();
let url = get('nats') ?? '';
let conn: { state: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'error' | 'closed'; text: string } = { state: 'idle', text: 'Not connected.' };
let ctx: FleetCtx | null = null;
let fleetKv: Promise<KvStore> | null = null;
let submitMsg: Message = null;
let submitting = false;

const form = {
  env: get('env') ?? TRAIN_DEFAULTS.env,
  algo: get('algo') ?? 'grpo',
  model: get('model') ?? 'tiny-gpt2',
  steps: get('steps') ?? '20',
  seed: get('seed') ?? '0',
  flags: get('flags') ?? '',
};

// --- connection ---------------------------------------------------------------------------------

function drawConnect(): void {
  render(html`
    <h2>Server</h2>
    <form id="connect-form" @submit=${(e: Event) => (e.preventDefault(), void connect())}>
      <label>NATS WebSocket URL <input id="nats-url" name="nats" size="32" placeholder="ws://127.0.0.1:8080" .value=${url}
        @input=${(e: Event) => (url = (e.target as HTMLInputElement).value.trim())}></label>
      <button id="connect" type="submit" ?disabled=${conn.state === 'connecting'}>${conn.state === 'connected' ? 'Reconnect' : 'Connect'}</button>
    </form>
    <p id="conn" data-state=${conn.state} class=${conn.state === 'error' ? 'error' : conn.state === 'connected' ? 'info' : ''}>${conn.text}</p>
    <p class="about">The server needs JetStream and a WebSocket listener: <code>nats-server -js -c nats.conf</code> with
      <code>websocket { listen: "0.0.0.0:8080", no_tls: true }</code> in nats.conf.</p>`, document.getElementById('connect-card')!);
}

async function connect(): Promise<void> {
  await lend.stop();
  if (ctx) await ctx.nc.close().catch(() => {});
  ctx = null;
  fleetKv = null;
  for (const v of jobs.values()) v.curve.destroy();
  jobs.clear();
  jobsEl.replaceChildren();
  conn = { state: 'connecting', text: `Connecting to ${url}…` };
  draw();
  let nc: NatsConnection;
  try {
    nc = await connectFleetWs(url, 'webtinker fleet page');
  } catch (e) {
    conn = {
      state: 'error',
      text: e instanceof ConfigError && /expected ws/.test(e.message)
        ? errorText(e)
        : `Cannot reach ${url} over WebSocket: nothing listens there, or its nats-server has no websocket listener (see below). ${errorText(e)}`,
    };
    return draw();
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: 20_000 });
    await ensureFleet(jsm);
    ctx = { nc, js: jetstream(nc, { timeout: 20_000 }), jsm };
  } catch (e) {
    await nc.close().catch(() => {});
    conn = { state: 'error', text: `Connected to ${url}, but its JetStream is not usable (start nats-server with -js): ${errorText(e)}` };
    return draw();
  }
  conn = { state: 'connected', text: `Connected to ${url}.` };
  draw();
  const mine = ctx;
  void watchStatus(mine);
  void nc.closed().then((err) => {
    if (ctx !== mine) return;
    conn = { state: 'closed', text: `The connection to ${url} closed${err ? `: ${errorText(err)}` : ''}.` };
    draw();
  });
  void follow(mine).catch((e) => {
    if (ctx !== mine) return;
    conn = { state: 'error', text: `Stopped following the jobs' events: ${errorText(e)}` };
    draw();
  });
}

/** The connection's ups and downs: it reconnects on its own (connectFleetWs), the page says so. */
async function watchStatus(c: FleetCtx): Promise<void> {
  for await (const st of c.nc.status()) {
    if (ctx !== c) return;
    if (st.type === 'disconnect') conn = { state: 'reconnecting', text: `Lost the connection to ${url}: reconnecting…` };
    else if (st.type === 'reconnect') conn = { state: 'connected', text: `Connected to ${url} (reconnected).` };
    else continue;
    draw();
  }
}

/** Every job's events from the start of the stream, then live: one ordered consumer. */
async function follow(c: FleetCtx): Promise<void> {
  const consumer = await c.js.consumers.get(EVENTS_STREAM, { filter_subjects: `${EVENTS_SUBJECT}.>`, deliver_policy: DeliverPolicy.All });
  const it = await consumer.consume();
  for await (const m of it) {
    if (ctx !== c) break;
    const e = m.json<FleetEvent>();
    (jobs.get(e.job) ?? addJob(e.job)).events.push(e);
    scheduleUpdate(e.job);
  }
}

// --- jobs ---------------------------------------------------------------------------------------

function addJob(id: string): JobView {
  const el = document.createElement('section');
  el.className = 'job card';
  el.dataset.job = id;
  const head = document.createElement('div');
  const plot = document.createElement('div');
  plot.className = 'curve';
  el.append(head, plot);
  jobsEl.prepend(el);
  document.getElementById('no-jobs')!.hidden = true;
  const curve = new Curve(plot, { xLabel: 'RL step', series: [{ label: 'mean reward', scale: 'reward', color: '#2471a3' }], ranges: { reward: [0, 1] }, height: 160 });
  const view: JobView = { id, events: [], el, head, curve, plotted: [], busy: false, message: null, saved: false };
  jobs.set(id, view);
  return view;
}

const pending = new Set<string>();
function scheduleUpdate(id: string): void {
  if (pending.size === 0) queueMicrotask(() => {
    for (const j of pending) updateJob(jobs.get(j)!);
    pending.clear();
  });
  pending.add(id);
}

/** The RL steps of a folded run: (1-based step, mean reward). */
function rlPoints(f: FoldedJob): [number, number | null][] {
  const out: [number, number | null][] = [];
  for (const line of f.metrics.split('\n')) {
    if (!line) continue;
    const m = JSON.parse(line) as StepMetrics;
    if (m.phase === 'rl') out.push([m.step + 1, typeof m.reward === 'number' ? m.reward : null]);
  }
  return out;
}

function updateJob(v: JobView): void {
  const f = foldEvents(v.events);
  for (const e of v.events) if (e.type === 'phase' && e.steps !== undefined) v.phaseSteps = e.steps;
  const points = rlPoints(f);
  // A resumed run is cut back to its checkpoint: redraw when the plotted prefix no longer holds.
  const keeps = v.plotted.length <= points.length && v.plotted.every(([s, r], i) => points[i][0] === s && points[i][1] === r);
  if (!keeps) {
    v.curve.clear();
    v.plotted = [];
  }
  for (const p of points.slice(v.plotted.length)) {
    v.curve.push(p[0], [p[1]]);
    v.plotted.push(p);
  }
  v.el.dataset.state = f.state;
  const s = f.job?.settings;
  const where = f.last
    ? f.last.phase === 'rl'
      ? `RL step ${f.last.step + 1}/${s?.steps ?? '?'}`
      : `warm start step ${f.last.step + 1}${v.phaseSteps !== undefined ? `/${v.phaseSteps}` : ''}`
    : '–';
  const reward = points.length > 0 ? points[points.length - 1][1] : null;
  const done = f.state === 'done';
  const live = ['queued', 'running', 'cancelling', 'abandoned'].includes(f.state);
  render(html`
    <h3><code>${v.id}</code> <span class="state" data-state=${f.state}>${f.state}</span></h3>
    <p class="job-info">
      ${s ? html`${s.env}, ${s.algo}, ${s.model}, seed ${s.seed} · ` : ''}
      host <span class="host">${f.host ?? '–'}</span> ·
      <span class="progress">${where}</span> ·
      reward <span class="reward">${reward === null ? '–' : reward.toFixed(3)}</span>
      ${f.summary && f.summary.evalEpisodes > 0 ? html` · held-out success ${(100 * f.summary.successBefore).toFixed(0)}% → ${(100 * f.summary.successAfter).toFixed(0)}%` : ''}
      ${f.reason ? html`<br><span class="reason">${f.reason}</span>` : ''}
    </p>
    <p class="actions">
      ${live ? html`<button class="cancel" ?disabled=${v.busy || !ctx} @click=${() => void cancel(v)}>Cancel</button>` : ''}
      ${done ? html`<button class="download" ?disabled=${v.busy || !ctx} @click=${() => void downloadJob(v)}>Save adapter in this browser</button>` : ''}
      ${v.saved ? html`<a class="saved" href="train.html">listed on the train page</a>` : ''}
    </p>
    ${v.message ? html`<p class="job-msg ${v.message.kind}">${v.message.text}</p>` : ''}`, v.head);
}

async function cancel(v: JobView): Promise<void> {
  if (!ctx) return;
  v.busy = true;
  updateJob(v);
  try {
    const r = await cancelJob(ctx, v.id);
    v.message = { kind: 'info', text: r === 'cancelled' ? 'Cancelled (it was queued).' : r === 'sent' ? 'Cancel sent to its worker: it stops at its next step.' : 'It had ended already.' };
  } catch (e) {
    v.message = { kind: 'error', text: `Could not cancel: ${errorText(e)}` };
  }
  v.busy = false;
  updateJob(v);
}

async function downloadJob(v: JobView): Promise<void> {
  if (!ctx) return;
  const f = foldEvents(v.events);
  if (!f.job) return;
  v.busy = true;
  v.message = { kind: 'info', text: 'Copying the adapter into IndexedDB…' };
  updateJob(v);
  try {
    const meta = await saveFleetRun(store, await (fleetKv ??= openStore(ctx.nc)), f.job);
    v.saved = true;
    v.el.dataset.saved = 'yes';
    v.message = { kind: 'info', text: `Saved as "${meta.name}" (version ${meta.version}, ${(meta.bytes / 1024).toFixed(0)} KiB) in this browser.` };
  } catch (e) {
    v.message = { kind: 'error', text: `Could not save the adapter: ${errorText(e)}` };
  }
  v.busy = false;
  updateJob(v);
}

// --- submitting ---------------------------------------------------------------------------------

/** `npm run fleet -- submit` flags of the form: its fields, then the free flags (which win). */
function submitArgv(): string[] {
  const extra = form.flags.split(/\s+/).filter((t) => t !== '');
  return ['submit', '--nats', url, '--env', form.env, '--algo', form.algo, '--model', form.model, '--steps', form.steps, '--seed', form.seed, ...extra];
}

async function submit(): Promise<void> {
  if (!ctx) return;
  submitting = true;
  submitMsg = null;
  draw();
  try {
    const a = parseFleetArgs(submitArgv());
    if (!(a.train!.model in PRESETS)) throw new ConfigError('--model', `this page submits the from-scratch presets only (${Object.keys(PRESETS).join(', ')}); submit "${a.train!.model}" with npm run fleet -- submit, which reads its config.json`);
    const priority = priorityOf(a);
    const job = makeJob(a.train!, { ...(a.values.id ? { id: a.values.id as string } : {}), ...(priority ? { priority } : {}), ...(a.values.weight ? { weight: Number(a.values.weight) } : {}) });
    const r = await submitJob(ctx, job);
    submitMsg = { kind: 'info', text: r.duplicate ? `${r.id}: already submitted (dropped as a duplicate within the stream's two-minute window).` : `Queued ${r.id}.` };
  } catch (e) {
    submitMsg = { kind: 'error', text: errorText(e) };
  }
  submitting = false;
  draw();
}

function drawSubmit(): void {
  const field = (k: keyof typeof form) => (e: Event) => (form[k] = (e.target as HTMLInputElement).value);
  const select = (k: keyof typeof form, options: readonly string[]) =>
    html`<select name=${k} @change=${field(k)}>${options.map((o) => html`<option value=${o} ?selected=${o === form[k]}>${o}</option>`)}</select>`;
  render(html`
    <h2>Submit a job</h2>
    <form id="submit-form" class="settings" @submit=${(e: Event) => (e.preventDefault(), void submit())}>
      <label>env ${select('env', ENV_NAMES)}</label>
      <label>algorithm ${select('algo', ALGOS)}</label>
      <label>model ${select('model', Object.keys(PRESETS))}</label>
      <label>RL steps <input name="steps" size="5" .value=${form.steps} @input=${field('steps')}></label>
      <label>seed <input name="seed" size="5" .value=${form.seed} @input=${field('seed')}></label>
      <label>more flags <input name="flags" size="48" placeholder="--warmstart-steps 8 --groups 2 --priority background" .value=${form.flags} @input=${field('flags')}></label>
      <button id="submit" type="submit" ?disabled=${!ctx || submitting}>Submit</button>
    </form>
    <p class="about">Checked as <code>npm run fleet -- submit</code> checks its flags: any <code>npm run train</code> flag that
      defines the run, and <code>--id</code>, <code>--priority</code>, <code>--weight</code>.</p>
    ${submitMsg ? html`<p id="submit-msg" class=${submitMsg.kind} data-kind=${submitMsg.kind}>${submitMsg.text}</p>` : ''}`, document.getElementById('submit-card')!);
}

const lend = new LendPanel(() => render(lend.view(ctx?.nc ?? null), document.getElementById('lend-card')!));

function draw(): void {
  drawConnect();
  drawSubmit();
  render(lend.view(ctx?.nc ?? null), document.getElementById('lend-card')!);
  for (const v of jobs.values()) updateJob(v);
}

draw();
void pageShell('fleet');
if (url) void connect();
