/**
 * The `agents` part's figures, verdicts, JSON and markdown section — pure functions over the runs
 * (Node unit tests check them on hand-made runs). Issue 25's targets, per game:
 * - signal: success together ≥ 0.9 after training (chance 1/k), and each agent's contribution
 *   visible: with either one swapped for an untrained stand-in, success at chance;
 * - bargain: both learners' returns settle, and each is measured against a fixed scripted opponent
 *   before and after (the seller against a truthful buyer, the buyer against random prices);
 * - nim: self-play lifts the score against Bouton's player above the warm start's.
 */
import { curvesSvg } from '../../src/cli/report.ts';
import { bargainReferences } from '../../src/env/envs/bargain.ts';
import { type NimOptions, resolveNimOptions } from '../../src/env/envs/nim.ts';
import { NIM_JOB } from '../../src/runtime/job_envs.ts';
import { resolveSignalOptions, type SignalOptions } from '../../src/env/envs/signal.ts';
import type { AgentsEvaluation } from '../../src/runtime/agents_settings.ts';
import type { AgentsBenchReport, GameReport } from './agents.ts';
import type { SeatExtras } from './agents_settings.ts';
import { fmtNum } from './harness.ts';
import { f3, markdownTable, yes } from './markdown.ts';
import { meanCurve } from './paper_report.ts';
import { meanSd } from './paper_stats.ts';

const pm = (xs: readonly number[]) => {
  const { mean, sd } = meanSd(xs);
  return Number.isFinite(sd) ? `${f3(mean)} ± ${f3(sd)}` : f3(mean);
};

export interface Steadiness {
  readonly window: number;
  /** Mean of the last window minus the mean of the one before. */
  readonly drift: number;
  /** 3 standard errors of that difference, from the two windows' own step-to-step spread. */
  readonly limit: number;
  readonly settled: boolean;
}

/**
 * Whether a per-step return curve has settled: the mean of its last `window` steps moved from the
 * window before by no more than three standard errors of a difference of two window means, the
 * error estimated from the steps' spread around their own window's mean (pooled, n − 2 degrees of
 * freedom). A curve that still climbs or falls steadily fails; one that wanders within its noise
 * passes. Null when the curve is shorter than two windows.
 */
export function steadiness(curve: readonly number[], window: number): Steadiness | null {
  if (!Number.isInteger(window) || window < 2) throw new RangeError(`steadiness: window must be an integer ≥ 2, got ${window}`);
  if (curve.length < 2 * window) return null;
  const last = curve.slice(curve.length - window);
  const prev = curve.slice(curve.length - 2 * window, curve.length - window);
  const m = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ss = (xs: readonly number[]) => xs.reduce((a, x) => a + (x - m(xs)) ** 2, 0);
  const sd = Math.sqrt((ss(last) + ss(prev)) / (2 * window - 2));
  const drift = m(last) - m(prev);
  const limit = 3 * sd * Math.sqrt(2 / window);
  return { window, drift, limit, settled: Math.abs(drift) <= limit };
}

/** An agent's words for the page: printable ASCII only (others as ·), at most 40 characters, in code quotes. */
export function printable(s: string): string {
  const t = s.replace(/[^\x20-\x7e]/g, '·').replace(/`/g, "'");
  return `\`${t.length > 40 ? `${t.slice(0, 39)}…` : t}\``;
}

/** How a nim game and its demonstrations are set, in words. */
export function nimDemosText(game: NimOptions): string {
  const g = resolveNimOptions(game);
  const seat = g.demoSeat === 'each' ? `in game i the demonstrated seat is player (i mod ${g.players}) + 1` : 'the demonstrated seat is player 1';
  const moves = g.demoOptimalRate >= 1 ? "Bouton's moves" : `Bouton's moves with probability ${g.demoOptimalRate}, else random ones`;
  const losing = g.demoLosingMove === 'stall' ? 'one object off the largest pile where no move wins' : 'a random move where no move wins';
  const others = g.demoOthers === 'random' ? 'the other seats move at random' : 'the other seats play the same way';
  return `${g.piles} piles of 1..${g.maxPile}, ${g.players} players; ${seat}, playing ${moves} (${losing}), and ${others}`;
}

/** The binomial standard error of a share p measured over n games. */
const se = (p: number, n: number) => Math.sqrt(Math.max(p * (1 - p), 1e-12) / n);

/** One figure of each seed's evaluations, before training and after. */
function beforeAfter(g: GameReport, of: (e: AgentsEvaluation) => number): { before: number[]; after: number[] } {
  return { before: g.runs.map((r) => of(r.before)), after: g.runs.map((r) => of(r.after)) };
}

/** A nim return (+1 won, −1 lost, 0 nobody won) as a score: a draw counts ½. */
export const nimScore = (ret: number) => (1 + ret) / 2;

export interface SignalFigures {
  readonly chance: number;
  readonly before: readonly number[];
  readonly after: readonly number[];
  /** After training, per seed: success with the speaker, then the listener, swapped for its untrained stand-in. */
  readonly speakerSwapped: readonly number[];
  readonly listenerSwapped: readonly number[];
  readonly successMet: boolean;
  /** Seeds whose success after is ≥ 0.9. */
  readonly seedsMet: number;
  /** Success after above chance by more than 2 standard errors on every seed: only then does a swap falling to chance show each agent's part. */
  readonly leftChance: boolean;
  /** Both swaps within 2 standard errors of chance on every seed (each agent's part is visible only once success is above chance). */
  readonly swapsAtChance: boolean;
}

export function signalFigures(g: GameReport): SignalFigures {
  const chance = 1 / resolveSignalOptions(g.run.signal).objects.length;
  const n = g.run.evalGames;
  const { before, after } = beforeAfter(g, (e) => e.together);
  const speakerSwapped = g.runs.map((r) => r.after.swapped[0] ?? NaN);
  const listenerSwapped = g.runs.map((r) => r.after.swapped[1] ?? NaN);
  const near = (x: number) => Math.abs(x - chance) <= 2 * se(chance, n);
  return {
    chance, before, after, speakerSwapped, listenerSwapped,
    successMet: meanSd(after).mean >= 0.9,
    seedsMet: after.filter((x) => x >= 0.9).length,
    leftChance: after.length > 0 && after.every((x) => x - chance > 2 * se(chance, n)),
    swapsAtChance: [...speakerSwapped, ...listenerSwapped].every(near),
  };
}

export interface BargainFigures {
  readonly refs: ReturnType<typeof bargainReferences>;
  /** Per seed: the seller against the truthful buyer, the buyer against random prices — before and after. */
  readonly sellerBefore: readonly number[];
  readonly sellerAfter: readonly number[];
  readonly buyerBefore: readonly number[];
  readonly buyerAfter: readonly number[];
  /** Per seed: both agents' returns together, before and after. */
  readonly together: readonly { readonly before: readonly number[]; readonly after: readonly number[] }[];
  /** Per seat, per seed: the settling test of its per-step return. */
  readonly settling: readonly (readonly (Steadiness | null)[])[];
  readonly sellerRose: boolean;
  readonly buyerRose: boolean;
  readonly settled: boolean;
}

export function bargainFigures(g: GameReport, window: number): BargainFigures {
  // The seller against the buyer's stand-in (seat 1 swapped), the buyer against the seller's (seat 0 swapped).
  const { before: sellerBefore, after: sellerAfter } = beforeAfter(g, (e) => e.swappedReturns[1]?.[0] ?? NaN);
  const { before: buyerBefore, after: buyerAfter } = beforeAfter(g, (e) => e.swappedReturns[0]?.[1] ?? NaN);
  const settling = [0, 1].map((k) => g.runs.map((r) => steadiness(r.rewardCurves[k], window)));
  return {
    refs: bargainReferences(), sellerBefore, sellerAfter, buyerBefore, buyerAfter,
    together: g.runs.map((r) => ({ before: r.before.returns, after: r.after.returns })), settling,
    sellerRose: sellerAfter.every((x, i) => x > sellerBefore[i]),
    buyerRose: buyerAfter.every((x, i) => x > buyerBefore[i]),
    settled: settling.every((seat) => seat.every((x) => x?.settled === true)),
  };
}

export interface NimFigures {
  /** Per seed: A's score as player 1 and B's as player 2 against Bouton's player, before (the warm start) and after. */
  readonly aBefore: readonly number[];
  readonly aAfter: readonly number[];
  readonly bBefore: readonly number[];
  readonly bAfter: readonly number[];
  /** The mean gain over the seeds exceeds 2 standard errors of a difference of two scores over evalGames boards, for A / for B. */
  readonly aRose: boolean;
  readonly bRose: boolean;
}

export function nimFigures(g: GameReport): NimFigures {
  // A as player 1 against B's stand-in (seat 1 swapped), B as player 2 against A's.
  const { before: aBefore, after: aAfter } = beforeAfter(g, (e) => nimScore(e.swappedReturns[1]?.[0] ?? NaN));
  const { before: bBefore, after: bAfter } = beforeAfter(g, (e) => nimScore(e.swappedReturns[0]?.[1] ?? NaN));
  const n = g.run.evalGames * g.runs.length;
  const rose = (before: readonly number[], after: readonly number[]) => {
    const b = meanSd(before).mean, a = meanSd(after).mean;
    return a - b > 2 * Math.SQRT2 * se(b, n);
  };
  return { aBefore, aAfter, bBefore, bAfter, aRose: rose(aBefore, aAfter), bRose: rose(bBefore, bAfter) };
}

/** Per seat, the mean over the seeds of its per-step reward. */
export function meanRewardCurves(g: GameReport): number[][] {
  return g.seats.map((_, k) => meanCurve(g.runs.map((r) => r.rewardCurves[k])));
}

const COLORS = ['#2471a3', '#c0392b'];

/** One figure per game: each seat's mean reward per step over the seeds. */
export function agentsFigures(rep: AgentsBenchReport): Map<string, string> {
  return new Map(rep.games.map((g) => {
    const curves = meanRewardCurves(g);
    return [`agents-${g.game}.svg`, curvesSvg({
      title: `${g.game}, ${rep.settings.model}: each agent's mean reward per step`,
      subtitle: `mean over seeds ${g.runs.map((r) => r.seed).join(', ')}; ${g.run.groups} games × ${g.run.groupSize} a step${g.run.pool ? ', pool games included' : ''}`,
      series: g.seats.map((name, k) => ({ label: name, ys: curves[k], color: COLORS[k], axis: 'left' as const })),
    })];
  }));
}

export function agentsJson(rep: AgentsBenchReport): Record<string, unknown> {
  const out: Record<string, unknown> = { settings: rep.settings, seconds: rep.seconds };
  for (const g of rep.games) {
    const figures = g.game === 'signal' ? signalFigures(g) : g.game === 'bargain' ? bargainFigures(g, rep.settings.window) : nimFigures(g);
    out[g.game] = { seats: g.seats, warm_start: g.warmStart, figures, runs: g.runs };
  }
  return { agents: out };
}

/** A best response's settings in words. */
function bestResponseText(br: true | { readonly own?: number; readonly keep?: number }): string {
  const o = br === true ? {} : br;
  return ['supervised', (o.own ?? 0) > 0 ? `its own log-probabilities weighed ${o.own}` : '', (o.keep ?? 0) > 0 ? `each target's last letter kept unless another beats it by ${o.keep} nat${o.keep === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ');
}

/** A seat's settings beyond its rate and KL penalty, in words (empty when it has none). */
export function seatExtrasText(x: SeatExtras | undefined): string {
  if (!x) return '';
  const parts = [
    x.hindsight ? `learning from hindsight (supervised${x.temperature === 0 ? ', greedy' : x.temperature !== undefined ? `, temperature ${x.temperature}` : ''}${(x.hindsightSteps ?? 1) > 1 ? `, on its last ${x.hindsightSteps} steps' games` : ''})` : x.algo ? x.algo : '',
    x.expectedReward ? 'credited the expected reward under its partner\'s policy' : '',
    x.bestResponse ? `learning also its best one-to-one response to its partner (${bestResponseText(x.bestResponse)})` : '',
    x.informationBonus === undefined ? '' : typeof x.informationBonus === 'number' ? `information bonus ${x.informationBonus}`
      : `information bonus ${Object.entries(x.informationBonus).filter(([part, w]) => w && part !== 'steps').map(([part, w]) => `${part} ${w}`).join(', ')}` +
        ((x.informationBonus.steps ?? 1) > 1 ? ` (shares over its last ${x.informationBonus.steps} steps)` : ''),
    x.vocabulary ? `saying only ${x.vocabulary.join(', ')}` : '',
    x.entropyCoef ? `entropy bonus ${x.entropyCoef}` : '',
    x.maxNewTokens !== undefined ? `${x.maxNewTokens} token${x.maxNewTokens === 1 ? '' : 's'} per action` : '',
    x.schedule && x.schedule !== 'constant' ? `${x.schedule} schedule` : '',
    x.loraRank !== undefined ? `LoRA rank ${x.loraRank}` : '',
  ].filter((t) => t !== '');
  return parts.join(', ');
}

function runLine(g: GameReport, quick: boolean): string {
  const r = g.run;
  const seats = g.seats.map((name, k) => {
    const extras = seatExtrasText(r.seats?.[k]);
    return `${name} lr ${r.lr[k]}${r.klBeta[k] > 0 ? ` with klBeta ${r.klBeta[k]}` : ''}${extras ? `, ${extras}` : ''}`;
  }).join('; ');
  const pool = r.pool ? `; opponent pool every ${r.pool.every} steps, ${r.pool.size} kept per seat, share ${r.pool.share ?? 0.5} of the groups against copies${r.pool.rotate ? ', the learner rotated through the seats' : ''}` : '';
  const rl = g.seats.every((_, k) => r.seats?.[k]?.hindsight !== true) ? 'GRPO steps' : 'steps';
  return `From ${quick ? 'a warm start run here' : g.warmStart}: per seed ${r.steps} ${rl} of ${r.groups} games × ${r.groupSize} (${seats}${pool}); ${r.evalGames} held-out games per evaluation, the same games before and after and for each stand-in.`;
}

/** The signalling game as the run sets it, in words. */
export function signalGameText(options: SignalOptions | undefined): string {
  const o = resolveSignalOptions(options);
  const letters = [...o.symbols].join(', ');
  const prompts = o.prompt.speaker === o.prompt.listener ? `${o.prompt.speaker} prompts` : `${o.prompt.speaker} prompts for the speaker, ${o.prompt.listener} for the listener`;
  const msg = o.message === 'bare' ? 'the letter alone' : 'the letter in answer tags';
  const pick = o.pick === 'initial' ? 'by its first letter' : 'by name in answer tags';
  const drills = [o.drills > 0 ? `${o.drills} of the listener's are reading drills (a name as the message, copied)` : '', o.speakerDrills > 0 ? `${o.speakerDrills} of the speaker's naming drills (the target's own name as the message)` : ''].filter((t) => t !== '');
  return `the speaker sees one of ${o.objects.length} objects (${o.objects.join(', ')}) and sends one of the letters ${letters} (${msg}); the listener sees the letter and picks an object (${pick}); ${prompts}. Both get 1 for the target, so success is the same for both (chance ${f3(1 / o.objects.length)}). The warm start's demonstrations are random letters and picks: formats, no code${drills.length ? `; ${drills.join(', ')} — no drill pairs a letter with an object` : ''}.`;
}

function signalSection(g: GameReport, quick: boolean): string[] {
  const f = signalFigures(g);
  return [
    '### Signalling game (cooperative, a code from scratch)',
    '',
    `Lewis's game: ${signalGameText(g.run.signal)} ${runLine(g, quick)}`,
    '',
    markdownTable(['seed', 'success before', 'success after', 'speaker swapped for a random one', 'listener swapped for a random one', 's'], g.runs.map((r, i) => [
      String(r.seed), f3(f.before[i]), f3(f.after[i]), f3(f.speakerSwapped[i]), f3(f.listenerSwapped[i]), fmtNum(r.seconds),
    ])),
    '',
    markdownTable(['target (issue 25)', 'measured', 'met'], [
      ['success together ≥ 0.9 (mean over the seeds)', `${pm(f.after)} (before ${pm(f.before)}); ≥ 0.9 on ${f.seedsMet} of ${f.after.length} seeds`, yes(f.successMet)],
      [`with either agent swapped for an untrained stand-in, success falls to chance (${f3(f.chance)}, within 2 standard errors on every seed)`, `speaker swapped ${pm(f.speakerSwapped)}, listener swapped ${pm(f.listenerSwapped)}`, f.leftChance ? yes(f.swapsAtChance) : 'moot: success did not leave chance on every seed'],
    ]),
    '',
    `Last step's first game (speaker → listener): ${g.runs.map((r) => `seed ${r.seed} ${r.lastTranscript.map((t) => t.map(printable).join(' ')).join(' → ')}`).join('; ')}.`,
  ];
}

function bargainSection(g: GameReport, window: number, quick: boolean): string[] {
  const f = bargainFigures(g, window);
  const st = (x: Steadiness | null) => (x === null ? 'too short' : `${x.drift >= 0 ? '+' : ''}${f3(x.drift)} (±${f3(x.limit)}) ${x.settled ? 'settled' : '**moving**'}`);
  return [
    '### Sale game (competitive, private values)',
    '',
    `The seller alone knows its cost (0–4), the buyer alone its value (3–9); the seller names a price 0–9, the buyer accepts or rejects; a sale pays the seller (price − cost)/9 and the buyer (value − price)/9. Each learner is measured against a fixed opponent: the seller against a truthful buyer (asking at random earns ${f3(f.refs.sellerRandom)} a game, the best prices ${f3(f.refs.sellerBest)}), the buyer against random prices (answering by coin earns ${f3(f.refs.buyerCoin)}, truthfully ${f3(f.refs.buyerTruthful)}). ${runLine(g, quick)} Settled: over the last ${window} steps a seat's mean return moved from the window before by at most 3 standard errors (from the steps' own spread).`,
    '',
    markdownTable(['seed', 'seller vs truthful buyer before → after', 'buyer vs random prices before → after', 'together before → after (seller, buyer)', 'seller settling', 'buyer settling', 's'], g.runs.map((r, i) => [
      String(r.seed), `${f3(f.sellerBefore[i])} → ${f3(f.sellerAfter[i])}`, `${f3(f.buyerBefore[i])} → ${f3(f.buyerAfter[i])}`,
      `${f.together[i].before.map(f3).join(', ')} → ${f.together[i].after.map(f3).join(', ')}`, st(f.settling[0][i]), st(f.settling[1][i]), fmtNum(r.seconds),
    ])),
    '',
    markdownTable(['target (issue 25)', 'measured', 'met'], [
      ['the seller improves against a fixed (truthful) buyer, every seed', `${pm(f.sellerBefore)} → ${pm(f.sellerAfter)}`, yes(f.sellerRose)],
      ['the buyer improves against fixed (random) prices, every seed', `${pm(f.buyerBefore)} → ${pm(f.buyerAfter)}`, yes(f.buyerRose)],
      [`both learners' returns settle (last ${window} steps, every seed)`, `${f.settling.flat().filter((x) => x?.settled).length} of ${f.settling.flat().length} seat-runs settled`, yes(f.settled)],
    ]),
  ];
}

function nimSection(g: GameReport, quick: boolean): string[] {
  const f = nimFigures(g);
  return [
    '### Nim self-play (against earlier versions)',
    '',
    `The jobs' nim (${nimDemosText(NIM_JOB)} in the warm start's demonstrations): each agent is measured against Bouton's player (\`nimOptimalPolicy\`, stalling from a losing position) over ${g.run.evalGames} held-out boards — A moving first, B second; a score counts a win 1 and a game nobody won ½. ${runLine(g, quick)}`,
    '',
    markdownTable(['seed', 'A as player 1: before → after', 'B as player 2: before → after', 's'], g.runs.map((r, i) => [
      String(r.seed), `${f3(f.aBefore[i])} → ${f3(f.aAfter[i])}`, `${f3(f.bBefore[i])} → ${f3(f.bAfter[i])}`, fmtNum(r.seconds),
    ])),
    '',
    markdownTable(['target (issue 25)', 'measured', 'met'], [
      ['A\'s score against the optimal player rises above the warm start\'s (mean gain > 2 se)', `${pm(f.aBefore)} → ${pm(f.aAfter)}`, yes(f.aRose)],
      ['B\'s likewise', `${pm(f.bBefore)} → ${pm(f.bAfter)}`, yes(f.bRose)],
    ]),
  ];
}

/** The section; `figure(suffix)` links a figure file written beside the markdown. */
export function agentsMarkdown(rep: AgentsBenchReport, measured: string, quick: boolean, figure: (suffix: string) => string): string {
  const lines = [
    '## Several agents',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): tiny-gpt2, a few steps, one seed — a smoke test, not a measurement.' : '',
    '',
    `The paper's third result — agents that learn at once, from each other — through the public \`trainAgents\`: one LoRA agent per seat on a shared warm-started ${rep.settings.model}, each with its own rate, each trained on its own tokens; seeds ${rep.settings.seeds.join(', ')}. The partner-swap and fixed-opponent figures are trainAgents' own evaluations (\`swapped\`, \`swappedReturns\`).`,
    '',
  ];
  for (const g of rep.games) {
    lines.push(...(g.game === 'signal' ? signalSection(g, quick) : g.game === 'bargain' ? bargainSection(g, rep.settings.window, quick) : nimSection(g, quick)));
    lines.push('', `![${g.game}: each agent's mean reward per step](${figure(`agents-${g.game}.svg`)})`, '');
  }
  lines.push(`Whole part: ${fmtNum(rep.seconds)} s.`, '');
  return lines.join('\n');
}
