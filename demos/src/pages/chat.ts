/**
 * The chat page: talk to a policy while a training job runs. Both are jobs of the page's one
 * scheduler: the training run (its training clients and rollout samplers, class 'normal') and
 * the chat (a sampler per reply, class 'interactive', so it is served at the next quantum
 * boundary). "Live" replies sample a snapshot of the training job's weights as they are at that
 * moment; a stored adapter (from the train page) can be chosen instead. The share panel shows
 * the device time of each, as the scheduler accounts it.
 */
import { html, render } from 'lit';
import { ENV_NAMES, type JobEnv, jobEnv, type ModelConfig, type SampleFn, type WorkerService } from '../../../src/mod.ts';
import { DemoStore, type SavedRun } from '../lib/adapters.ts';
import { type Curve, trainingCurve } from '../lib/curve.ts';
import { BASE_LABELS, DEFAULT_SETTINGS, DEMO_ALGOS, DEMO_BASES, DemoJob, type DemoSettings, parseSettings } from '../lib/job.ts';
import { errorText, fmtSeconds, pageService, pageShell, query } from '../lib/page.ts';
import { SharePanel } from '../lib/shares.ts';
import { reply, type ReplyTurn, sampleTask } from '../lib/talk.ts';

interface Message {
  readonly who: 'user' | 'agent' | 'system';
  text: string;
  turns?: ReplyTurn[];
  source?: string;
  detail?: string;
  /** Optimizer steps of the weights that replied (live replies). */
  steps?: number;
  whileTraining?: boolean;
}

const app = document.getElementById('app')!;
const store = new DemoStore();
const chatIds = new Set<string>();
// The pages' run from the shipped warm start (replies make sense from the first message), longer, without evaluations.
let settings: DemoSettings = parseSettings(query(), { ...DEFAULT_SETTINGS, steps: 30, evalEpisodes: 0 });
let job: DemoJob | null = null;
let runs: SavedRun[] = [];
let source = 'live';
const messages: Message[] = [];
let pending = false;
let shares: SharePanel | null = null;
let curve: Curve;
/** The stored adapter loaded for chatting (one at a time). */
let loaded: { name: string; modelId: string; sample: SampleFn; close: () => Promise<void>; env: JobEnv; cfg: ModelConfig } | null = null;

const status = await pageShell('chat');

function draw(): void {
  const running = job?.running ?? false;
  render(
    html`
      <h1>Chat with the policy while it trains</h1>
      ${status.ok ? '' : html`<p class="error">${status.message}</p>`}
      <p class="about">Start a training run, then ask the policy something. A live reply samples the run's current weights (a snapshot) as an
      interactive job of the same scheduler that runs the training, which keeps going: the device time panel shows both.</p>
      <section class="grid">
        <div class="card">
          <h2>Chat</h2>
          <label>answering: <select id="policy" @change=${(e: Event) => (source = (e.target as HTMLSelectElement).value)}>
            <option value="live" ?selected=${source === 'live'}>the training run, live (its current weights)</option>
            ${runs.map((r) => html`<option value=${`adapter:${r.name}`} ?selected=${source === `adapter:${r.name}`}>stored adapter ${r.name}</option>`)}
          </select></label>
          <div class="chat-log" id="chat-log">
            ${messages.map((m) => html`<div class="msg ${m.who}" data-source=${m.source ?? ''} data-while-training=${m.whileTraining ? 'yes' : 'no'} data-steps=${m.steps ?? ''}>
              ${m.who === 'agent' ? html`<div class="who">${m.source === 'live' ? 'training run (live)' : m.source} ${m.detail ? html`· ${m.detail}` : ''}</div>` : ''}
              <div class="bubble">${m.turns ? m.turns.map((t) => html`<div>${t.action || '(empty)'}</div>${t.toolOutput !== undefined ? html`<div class="pill">tool → ${t.toolOutput}</div>` : ''}`) : m.text}</div>
            </div>`)}
          </div>
          <p class="note">A byte-level model from scratch answers in random bytes; the SFT warm start teaches it the
          environment's format (<code>&lt;tool&gt;…&lt;/tool&gt;</code>, <code>&lt;answer&gt;…&lt;/answer&gt;</code>), RL when to use which.
          By default the run starts from the warm start shipped with the demos (the one <code>npm run train</code> runs first), so replies
          make sense from the first message and RL improves them as you chat.</p>
          <form class="chat-form" @submit=${send}>
            <input id="chat-input" name="text" autocomplete="off" placeholder="Ask something, e.g. What is 7*8?" ?disabled=${!status.ok} />
            <button id="send" type="submit" ?disabled=${pending || !status.ok}>Send</button>
            <button type="button" id="example" ?disabled=${!status.ok} @click=${example}>Example task</button>
          </form>
        </div>
        <div class="card">
          <h2>Training run</h2>
          <form id="settings" class="settings" @submit=${startTraining}>
            <label>environment <select name="env" ?disabled=${running}>${ENV_NAMES.map((o) => html`<option ?selected=${settings.env === o}>${o}</option>`)}</select></label>
            <label>algorithm <select name="algo" ?disabled=${running}>${DEMO_ALGOS.map((o) => html`<option ?selected=${settings.algo === o}>${o}</option>`)}</select></label>
            <label>start from <select name="base" ?disabled=${running}>${DEMO_BASES.map((o) => html`<option value=${o} ?selected=${settings.base === o}>${BASE_LABELS[o]}</option>`)}</select></label>
            <label>warm-start steps <input name="warmstart" type="number" min="0" .value=${String(settings.warmstart)} ?disabled=${running} /></label>
            <label>RL steps <input name="steps" type="number" min="1" .value=${String(settings.steps)} ?disabled=${running} /></label>
            <button id="train-start" type="submit" ?disabled=${running || !status.ok}>Train</button>
            <button id="train-stop" type="button" ?disabled=${!running} @click=${() => job?.stop()}>Stop</button>
          </form>
          ${job ? html`<p id="progress" data-phase=${job.phase} data-done=${job.done}><b>${job.phase}</b> · step ${job.done} / ${job.total} · ${fmtSeconds(job.elapsed)}</p>` : html`<p id="progress" data-phase="idle">Not started.</p>`}
          <div id="curve" class="curve"></div>
          <h2>Device time</h2>
          <div id="shares"></div>
          ${shares ? '' : html`<p class="note">The page's GPU worker and its scheduler start with the first job.</p>`}
        </div>
      </section>
    `,
    app,
  );
  const log = document.getElementById('chat-log');
  if (log) log.scrollTop = log.scrollHeight;
}

function ensureShares(service: WorkerService): void {
  shares ??= new SharePanel(document.getElementById('shares')!, service.scheduler, () => [
    { label: job ? `training: ${job.label}` : 'training', color: '#2471a3', ids: job?.tap.schedIds ?? new Set() },
    { label: 'chat', color: '#d35400', ids: chatIds },
  ]);
}

async function startTraining(ev: Event): Promise<void> {
  ev.preventDefault();
  const data = new FormData(ev.target as HTMLFormElement);
  let service: WorkerService;
  try {
    settings = parseSettings((k) => data.get(k) as string | null, settings);
    service = await pageService();
  } catch (e) {
    messages.push({ who: 'system', text: errorText(e) });
    return draw();
  }
  ensureShares(service);
  curve.clear();
  const j = new DemoJob(service, settings);
  job = j;
  j.on((e) => {
    if (e.type === 'step') curve.push(e.done, [e.metrics.phase === 'sft' ? e.metrics.loss : null, e.metrics.phase === 'rl' ? e.metrics.reward : null]);
    draw();
  });
  draw();
  const r = await j.start();
  if (r && j.tap.base) {
    try {
      const name = await store.save(j.settings, r, j.tap.base);
      messages.push({ who: 'system', text: `The training run finished and was saved as adapter "${name}".` });
      runs = await store.list();
    } catch (e) {
      messages.push({ who: 'system', text: `The run finished but could not be saved: ${errorText(e)}` });
    }
  } else if (j.phase === 'failed') {
    messages.push({ who: 'system', text: `Training failed: ${errorText(j.error)}` });
  }
  draw();
}

/** Replies from the training run's current weights; null when it has no training client right now. */
async function liveReply(j: DemoJob, text: string): Promise<Message | null> {
  if (!j.hasOptions) return null; // the shipped base is still being fetched
  const env = jobEnv(j.settings.env);
  const cfg = j.options.model;
  const t0 = performance.now();
  const r = await j.tap.withLiveSampler(async (s, info) => {
    chatIds.add(s.id);
    const turns = await reply(s.sample, env, text, { maxSeqLen: cfg.maxSeqLen, seed: Date.now() >>> 0 });
    return { turns, info };
  });
  if (r === null) return null;
  const phase = r.info.trainable === 'all' ? 'warm-start weights' : 'LoRA policy';
  return {
    who: 'agent', text: '', turns: r.turns, source: 'live', whileTraining: j.running, steps: r.info.step,
    detail: `${phase} after ${r.info.step} optimizer steps · ${((performance.now() - t0) / 1000).toFixed(1)} s${j.running ? ', training kept going' : ''}`,
  };
}

async function adapterReply(name: string, text: string): Promise<Message> {
  const service = await pageService();
  ensureShares(service);
  if (loaded?.name !== name) {
    await loaded?.close();
    loaded = null;
    const run = await store.load(name);
    const modelId = await service.createModel(run.info.cfg, { params: run.base });
    chatIds.add(`model:${modelId}`);
    const s = await service.createSamplingClient(modelId, { lora: run.info.lora, tensors: run.adapter });
    chatIds.add(s.id);
    loaded = {
      name, modelId, sample: s.sample, env: jobEnv(run.info.settings.env), cfg: run.info.cfg,
      close: async () => {
        await s.close();
        await service.releaseModel(modelId);
      },
    };
  }
  const t0 = performance.now();
  const turns = await reply(loaded.sample, loaded.env, text, { maxSeqLen: loaded.cfg.maxSeqLen, seed: Date.now() >>> 0 });
  return { who: 'agent', text: '', turns, source: name, whileTraining: job?.running ?? false, detail: `${((performance.now() - t0) / 1000).toFixed(1)} s` };
}

async function send(ev: Event): Promise<void> {
  ev.preventDefault();
  const input = document.getElementById('chat-input') as HTMLInputElement;
  const text = input.value.trim();
  if (!text || pending) return;
  input.value = '';
  messages.push({ who: 'user', text });
  pending = true;
  const thinking: Message = { who: 'system', text: 'waiting for the device…' };
  messages.push(thinking);
  draw();
  const noRun: Message = { who: 'system', text: 'No training run is going on: start one on the right, or choose a stored adapter.' };
  try {
    let m: Message | null = null;
    if (source === 'live') {
      // Between the warm start and RL the run briefly has no training client, and the snapshot of
      // a client closing under it is refused: try again while the run goes on.
      for (let attempt = 0; m === null && job?.running; attempt++) {
        try {
          m = await liveReply(job, text);
        } catch (e) {
          if (attempt >= 3 || !job.running || !/cancel|closed|finished|stopped/i.test(errorText(e))) throw e;
        }
        if (m === null) await new Promise((r) => setTimeout(r, 500));
      }
      m ??= noRun;
    } else {
      m = await adapterReply(source.slice('adapter:'.length), text);
    }
    messages.splice(messages.indexOf(thinking), 1, m);
  } catch (e) {
    messages.splice(messages.indexOf(thinking), 1, { who: 'system', text: errorText(e) });
  } finally {
    pending = false;
    draw();
  }
}

async function example(): Promise<void> {
  const env = jobEnv(source === 'live' ? (job?.settings.env ?? settings.env) : (runs.find((r) => `adapter:${r.name}` === source)?.info.settings.env ?? settings.env));
  const input = document.getElementById('chat-input') as HTMLInputElement;
  input.value = await sampleTask(env, (Math.random() * 2 ** 32) >>> 0);
}

draw();
curve = trainingCurve(document.getElementById('curve')!, { height: 160 });
try {
  runs = await store.list();
} catch (e) {
  messages.push({ who: 'system', text: `Could not read the stored adapters: ${errorText(e)}` });
}
draw();
