/**
 * The arena: two agents that learn from each other at once (`trainAgents`), each with its own
 * LoRA adapter on a shared base, on one of two dialogue games — the sale game (`bargainEnv`: the
 * seller's price is the buyer's observation, their interests opposed, each side's number private)
 * or Lewis's signalling game (`signalEnv`: the speaker's letter is the listener's observation, and
 * only a code both share scores above chance). Drawn live: both agents' mean rewards per RL step,
 * and what each said in the step's first game. Before and after the run, each agent is measured
 * against a fixed opponent in the other seat (the partner-swap test): the seller against a buyer
 * who accepts exactly the prices at or below its value, the buyer against random prices; in the
 * signalling game, each agent with a partner that has no code.
 *
 * The run starts from the game's shipped warm start (formats only: random prices and answers,
 * random letters and picks — scripts/demo_models.ts), so learning shows within minutes on a
 * software adapter; `base=scratch` warm-starts in the tab instead.
 */
import { html, render } from 'lit';
import {
  agentsModelConfig,
  type AgentsResult,
  type AgentsSettings,
  type AgentsStepMetrics,
  bargainEnv,
  bargainRandomSeller,
  bargainTruthfulBuyer,
  signalEnv,
  signalRandomListener,
  signalRandomSpeaker,
  trainAgents,
} from '../../../src/mod.ts';
import { Curve } from '../lib/curve.ts';
import { errorText, fmtSeconds, pageService, pageShell, query } from '../lib/page.ts';
import { hasShipped, shippedWeights } from '../lib/shipped.ts';

/** A game the page offers: its environment, seat names, stand-ins, and how an agent is measured against a fixed opponent. */
interface ArenaGame {
  readonly title: string;
  readonly about: string;
  readonly settings: () => Pick<AgentsSettings, 'env' | 'partners'>;
  readonly seats: readonly [string, string];
  /** Per seat: what its score against the fixed opponent is called, and whether it is a return (else success). */
  readonly measured: readonly [string, string];
  readonly returns: boolean;
}

const SIGNAL = { symbols: 'abcd' } as const;
const GAMES: Readonly<Record<'bargain' | 'signal', ArenaGame>> = {
  bargain: {
    title: 'the sale game',
    about: 'The seller alone knows what the item cost it (0–4), the buyer alone what it is worth to it (3–9). The seller names a price, ' +
      'the buyer accepts or rejects; a sale pays the seller (price − cost)/9 and the buyer (value − price)/9. Their interests are opposed.',
    settings: () => ({ env: bargainEnv(), partners: [bargainRandomSeller(), bargainTruthfulBuyer()] }),
    seats: ['seller', 'buyer'],
    measured: ['seller against a buyer who accepts exactly the prices at or below its value (best play earns 0.260)', 'buyer against random prices (best play earns 0.256)'],
    returns: true,
  },
  signal: {
    title: "Lewis's signalling game",
    about: 'The speaker sees which of four shapes the listener must pick and sends one letter (a–d); the listener sees the shapes and ' +
      'the letter and picks one. Both score when the pick is right: above chance (1/4) only with a code both share, which only their interaction can make.',
    settings: () => ({ env: signalEnv(SIGNAL), partners: [signalRandomSpeaker(SIGNAL), signalRandomListener(SIGNAL)] }),
    seats: ['speaker', 'listener'],
    measured: ['speaker with a listener that picks at random', 'listener with a speaker that sends random letters'],
    returns: false,
  },
};

const MODEL = 'gpt2-100k';
const COLORS = ['#2471a3', '#c0392b'];
const app = document.getElementById('app')!;
const q = query();
const num = (name: string, d: number) => {
  const v = q(name);
  return v === null || v === '' ? d : Number(v);
};
let gameName: keyof typeof GAMES = q('game') === 'signal' ? 'signal' : 'bargain';
const defaults = { steps: num('steps', 12), groups: num('groups', 8), groupSize: num('groupSize', 4), lr: num('lr', 0.006), klBeta: num('kl', 0.3), evalGames: num('eval', 64), seed: num('seed', 1) };
const scratch = q('base') === 'scratch';

let phase: 'idle' | 'loading' | 'evaluating' | 'training' | 'done' | 'failed' | 'stopped' = 'idle';
let steps: AgentsStepMetrics[] = [];
let result: AgentsResult | null = null;
let message = '';
let started = 0;
let abort: AbortController | null = null;
let rewardCurve: Curve;

const status = await pageShell('arena');

/** Seat k's score against its fixed opponent (the other seat's stand-in) in an evaluation. */
function measuredScore(g: ArenaGame, e: AgentsResult['before'], k: number): number | null {
  const other = 1 - k;
  return g.returns ? (e.swappedReturns[other]?.[k] ?? null) : e.swapped[other];
}

const fmt = (x: number | null | undefined) => (x === null || x === undefined ? '–' : x.toFixed(3));

function draw(): void {
  const g = GAMES[gameName];
  const running = phase === 'loading' || phase === 'evaluating' || phase === 'training';
  const last = steps.at(-1);
  render(
    html`
      <h1>Arena: two agents learn from each other</h1>
      ${status.ok ? '' : html`<p class="error">${status.message}</p>`}
      <p class="about">${g.about} Each agent is a LoRA adapter on one shared ${MODEL} base, trained by GRPO on its own tokens alone
      (a KL penalty to its start keeps the answer format); what one says reaches the other only as its observation.</p>
      <form class="settings" @submit=${start}>
        <label>game <select name="game" ?disabled=${running} @change=${(e: Event) => {
          gameName = (e.target as HTMLSelectElement).value as keyof typeof GAMES;
          draw();
        }}>${Object.entries(GAMES).map(([k, x]) => html`<option value=${k} ?selected=${k === gameName}>${x.title}</option>`)}</select></label>
        <label>RL steps <input id="steps" type="number" min="1" .value=${String(defaults.steps)} ?disabled=${running} /></label>
        <label>learning rate <input id="lr" type="number" min="0" step="any" .value=${String(defaults.lr)} ?disabled=${running} /></label>
        <button id="start" type="submit" ?disabled=${running || !status.ok}>Start</button>
        <button type="button" ?disabled=${!running} @click=${() => abort?.abort(new Error('stopped'))}>Stop</button>
      </form>
      ${message ? html`<p class="error">${message}</p>` : ''}
      <p id="arena-status" data-phase=${phase} data-steps=${steps.length}>${phase}${steps.length > 0 ? ` · step ${steps.length} / ${defaults.steps}` : ''}
        ${started > 0 ? ` · ${fmtSeconds((performance.now() - started) / 1000)}` : ''}</p>
      <section class="grid">
        <div class="card">
          <h2>Mean reward per RL step</h2>
          <div id="rewards" class="curve"></div>
        </div>
        <div class="card">
          <h2>The step's first game</h2>
          <div id="transcript">${last ? g.seats.map((name, k) => html`<p><b>${name}</b>: <code>${last.transcript[k]?.join(' ') || '(did not act)'}</code></p>`) : html`<p>—</p>`}</div>
        </div>
      </section>
      <section class="card">
        <h2>Against a fixed opponent, before and after</h2>
        <table id="measured" data-state=${result ? 'done' : 'pending'}>
          <tr><th></th><th>before</th><th>after</th></tr>
          ${g.seats.map((name, k) => html`<tr data-seat=${name}
              data-before=${result ? String(measuredScore(g, result.before, k)) : ''} data-after=${result ? String(measuredScore(g, result.after, k)) : ''}>
            <td>${g.measured[k]}</td><td>${result ? fmt(measuredScore(g, result.before, k)) : '…'}</td><td>${result ? fmt(measuredScore(g, result.after, k)) : '…'}</td></tr>`)}
          <tr><td>both agents together: ${g.returns ? 'mean returns' : 'success'}</td>
            <td>${result ? (g.returns ? result.before.returns.map(fmt).join(' / ') : fmt(result.before.together)) : '…'}</td>
            <td>${result ? (g.returns ? result.after.returns.map(fmt).join(' / ') : fmt(result.after.together)) : '…'}</td></tr>
        </table>
      </section>
    `,
    app,
  );
}

async function start(ev: Event): Promise<void> {
  ev.preventDefault();
  const get = (id: string) => Number((document.getElementById(id) as HTMLInputElement).value);
  const g = GAMES[gameName];
  const lr = get('lr');
  const settings: AgentsSettings = {
    ...g.settings(),
    seats: g.seats.map((name) => ({ name, algo: 'grpo' as const, lr, klBeta: defaults.klBeta })),
    model: MODEL, steps: get('steps'), groups: defaults.groups, groupSize: defaults.groupSize, evalGames: defaults.evalGames, seed: defaults.seed,
  };
  phase = 'loading';
  steps = [];
  result = null;
  message = '';
  started = performance.now();
  rewardCurve.destroy();
  rewardCurve = makeCurve();
  abort = new AbortController();
  const tick = setInterval(draw, 1000);
  draw();
  try {
    const service = await pageService();
    const weights = !scratch && hasShipped(gameName, MODEL) ? await shippedWeights(gameName, MODEL, agentsModelConfig(settings), abort.signal) : undefined;
    phase = 'evaluating';
    draw();
    result = await trainAgents({
      ...settings, service, signal: abort.signal, ...(weights ? { weights } : {}),
      onStep: (m) => {
        phase = 'training';
        steps.push(m);
        rewardCurve.push(m.step + 1, m.reward);
        draw();
      },
    });
    phase = 'done';
  } catch (e) {
    phase = abort.signal.aborted ? 'stopped' : 'failed';
    if (!abort.signal.aborted) message = errorText(e);
  } finally {
    clearInterval(tick);
    draw();
  }
}

const makeCurve = () =>
  new Curve(document.getElementById('rewards')!, {
    xLabel: 'RL step',
    series: [0, 1].map((k) => ({ label: `${GAMES[gameName].seats[k]} reward`, scale: 'reward', color: COLORS[k] })),
  });
draw();
rewardCurve = makeCurve();
