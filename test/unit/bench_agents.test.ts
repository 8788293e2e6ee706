// The pure parts of the bench's agents part (test/bench/agents_report.ts, agents.ts' settings):
// the settling test, the per-game figures and verdicts, the figures' curves and the section —
// against hand-computed values on hand-made runs, no GPU.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openSafetensors } from '../../src/model/safetensors.ts';
import type { AgentsEvaluation } from '../../src/runtime/agents_settings.ts';
import { agentsModelConfig } from '../../src/runtime/agents_job.ts';
import type { AgentsBenchReport, GameReport, GameSeedRun } from '../../test/bench/agents.ts';
import { gameSettings, gameWarmStart, shippedFile } from '../../test/bench/agents.ts';
import {
  agentsFigures, agentsJson, agentsMarkdown, bargainFigures, meanRewardCurves, nimDemosText, nimFigures, nimScore, printable, seatExtrasText, signalFigures, signalGameText, steadiness,
} from '../../test/bench/agents_report.ts';
import { AGENTS_QUICK, AGENTS_RUN, GAMES } from '../../test/bench/agents_settings.ts';
import { rerenderAgents } from '../../test/bench/rerender.ts';

const evaluation = (o: Partial<AgentsEvaluation>): AgentsEvaluation => ({ together: 0, returns: [0, 0], swapped: [null, null], swappedReturns: [null, null], ...o });
const seedRun = (o: Partial<GameSeedRun>): GameSeedRun => ({
  seed: 0, before: evaluation({}), after: evaluation({}), rewardCurves: [[], []], successCurve: [], trainedSteps: [0, 0], lastTranscript: [[], []], seconds: 1, ...o,
});
const game = (g: GameReport['game'], runs: GameSeedRun[], evalGames = 100): GameReport => ({
  game: g, run: { ...AGENTS_RUN.games[g], evalGames }, seats: g === 'signal' ? ['speaker', 'listener'] : g === 'bargain' ? ['seller', 'buyer'] : ['A', 'B'], warmStart: 'w', runs,
});

describe('agents part: settling', () => {
  it('compares the last window with the one before, against 3 standard errors from their own spread', () => {
    // prev [0, 2] mean 1, last [1, 3] mean 2: drift 1; pooled ss (2 + 2) / (4 − 2) = 2 → sd √2; limit 3·√2·√(2/2) = 4.243
    const s = steadiness([9, 9, 0, 2, 1, 3], 2)!;
    expect(s.drift).toBeCloseTo(1, 12);
    expect(s.limit).toBeCloseTo(3 * Math.SQRT2, 12);
    expect(s.settled).toBe(true);
    // a steady climb with little noise moves: prev [0, 0.1] last [1, 1.1]: drift 1, sd √(0.005·2/2) ≈ 0.0707, limit 0.212
    expect(steadiness([0, 0.1, 1, 1.1], 2)!.settled).toBe(false);
    expect(steadiness([1, 2, 3], 2)).toBeNull();
    expect(() => steadiness([1, 2, 3, 4], 1)).toThrow(RangeError);
  });

  it('scores nim returns with a draw as ½ and keeps agents’ words printable', () => {
    expect([nimScore(1), nimScore(-1), nimScore(0), nimScore(0.5)]).toEqual([1, 0, 0.5, 0.75]);
    expect(printable('<answer>b</answer>')).toBe('`<answer>b</answer>`');
    expect(printable('a\u0001`b')).toBe("`a·'b`");
    expect(printable('x'.repeat(50))).toBe(`\`${'x'.repeat(39)}…\``);
  });
});

describe('agents part: figures and verdicts', () => {
  it('signal: success ≥ 0.9 and both swaps at chance (within 2 se of 1/4 over the held-out games)', () => {
    const good = game('signal', [
      seedRun({ seed: 0, before: evaluation({ together: 0.25 }), after: evaluation({ together: 0.95, swapped: [0.26, 0.2] }) }),
      seedRun({ seed: 1, before: evaluation({ together: 0.3 }), after: evaluation({ together: 0.93, swapped: [0.25, 0.28] }) }),
    ]);
    const f = signalFigures(good);
    expect(f.chance).toBe(0.25);
    expect(f.after).toEqual([0.95, 0.93]);
    expect(f.speakerSwapped).toEqual([0.26, 0.25]);
    expect(f.successMet).toBe(true);
    // 2 se of 0.25 over 100 games = 2·√(0.1875/100) = 0.0866: 0.2 and 0.28 are within
    expect(f.swapsAtChance).toBe(true);
    const far = signalFigures(game('signal', [seedRun({ after: evaluation({ together: 0.95, swapped: [0.5, 0.25] }) })]));
    expect(far.swapsAtChance).toBe(false);
    expect(f.seedsMet).toBe(2);
    expect(f.leftChance).toBe(true);
    expect(signalFigures(game('signal', [seedRun({ after: evaluation({ together: 0.85, swapped: [0.25, 0.25] }) })])).successMet).toBe(false);
    // Two seeds of three at 0.977 and one at 0.664: the mean misses 0.9, two seeds meet it, every seed left chance.
    const most = signalFigures(game('signal', [0.977, 0.664, 0.977].map((x, seed) => seedRun({ seed, after: evaluation({ together: x, swapped: [0.25, 0.25] }) }))));
    expect([most.successMet, most.seedsMet, most.leftChance]).toEqual([false, 2, true]);
    // A seed at chance: the swaps show nothing there.
    expect(signalFigures(game('signal', [0.95, 0.27].map((x, seed) => seedRun({ seed, after: evaluation({ together: x }) })))).leftChance).toBe(false);
    // Chance is 1/k of the run's own objects.
    const three = { ...game('signal', [seedRun({ after: evaluation({ together: 0.95, swapped: [0.34, 0.3] }) })]), run: { ...AGENTS_RUN.games.signal, evalGames: 100, signal: { objects: ['ring', 'box', 'star'] } } };
    expect(signalFigures(three).chance).toBeCloseTo(1 / 3, 12);
    expect(signalFigures(three).swapsAtChance).toBe(true);
  });

  it('bargain: each learner against its fixed opponent (seller: swappedReturns[1][0]; buyer: swappedReturns[0][1]) and the settling of both curves', () => {
    const flat = [0.1, 0.12, 0.1, 0.12, 0.11, 0.11, 0.1, 0.12];
    const g = game('bargain', [
      seedRun({
        before: evaluation({ swappedReturns: [[0.1, 0.05], [0.04, 0.2]] }), after: evaluation({ swappedReturns: [[0.1, 0.07], [0.09, 0.2]] }),
        rewardCurves: [flat, [0, 0, 0, 0, 0.2, 0.2, 0.2, 0.2]],
      }),
    ]);
    const f = bargainFigures(g, 2);
    expect([f.sellerBefore, f.sellerAfter, f.buyerBefore, f.buyerAfter]).toEqual([[0.04], [0.09], [0.05], [0.07]]);
    expect(f.sellerRose && f.buyerRose).toBe(true);
    expect(f.settling[0][0]!.settled).toBe(true);
    // the buyer's last windows [0.2, 0.2] and [0.2, 0.2]: no drift, no spread — settled
    expect(f.settling[1][0]!.drift).toBe(0);
    expect(f.settled).toBe(true);
    expect(f.refs.sellerBest).toBeCloseTo(0.26, 2);
    const climbing = bargainFigures(game('bargain', [seedRun({ rewardCurves: [[0, 0.01, 0.1, 0.11], flat] })]), 2);
    expect(climbing.settled).toBe(false);
    expect(climbing.sellerRose).toBe(false); // NaN figures (no stand-in) never count as a rise
  });

  it('nim: scores as player 1 (A, with B swapped) and player 2 (B, with A swapped); a rise must exceed 2 se of a difference', () => {
    // A: returns −0.2 → 0.2 = scores 0.4 → 0.6; over 2 seeds × 100 boards se(0.4) = √(0.24/200) = 0.0346, limit 2·√2·0.0346 = 0.098
    const g = game('nim', [0, 1].map((seed) => seedRun({
      seed, before: evaluation({ swappedReturns: [[0, -0.8], [-0.2, 0]] }), after: evaluation({ swappedReturns: [[0, -0.76], [0.2, 0]] }),
    })));
    const f = nimFigures(g);
    expect(f.aBefore.map((x) => x.toFixed(3))).toEqual(['0.400', '0.400']);
    expect(f.aAfter.map((x) => x.toFixed(3))).toEqual(['0.600', '0.600']);
    expect(f.aRose).toBe(true);
    // B: 0.1 → 0.12: a gain of 0.02 is within the noise
    expect(f.bRose).toBe(false);
  });

  it('averages each seat’s reward curve over the seeds, draws one figure per game, and writes every game into the section', () => {
    const g = game('bargain', [seedRun({ rewardCurves: [[0, 1, 2], [1, 1, 1]] }), seedRun({ seed: 1, rewardCurves: [[2, 3], [3, 3]] })]);
    expect(meanRewardCurves(g)).toEqual([[1, 2], [2, 2]]);
    const rep: AgentsBenchReport = {
      settings: AGENTS_RUN, seconds: 12,
      games: [game('signal', [seedRun({ lastTranscript: [['<answer>b</answer>'], ['<answer>star</answer>']] })]), g, game('nim', [seedRun({})])],
    };
    expect([...agentsFigures(rep).keys()]).toEqual(['agents-signal.svg', 'agents-bargain.svg', 'agents-nim.svg']);
    const md = agentsMarkdown(rep, '_measured_', false, (x) => `B.${x}`);
    for (const h of ['### Signalling game', '### Sale game', '### Nim self-play', '![signal', '(B.agents-nim.svg)', '`<answer>b</answer>` → `<answer>star</answer>`', 'Whole part: 12']) expect(md).toContain(h);
    expect(Object.keys(agentsJson(rep).agents as object)).toEqual(['settings', 'seconds', 'signal', 'bargain', 'nim']);
  });
});

describe('agents part: nim in words', () => {
  it('describes nim\'s demonstrations from the game settings (defaults filled in)', () => {
    expect(nimDemosText({})).toBe("3 piles of 1..5, 2 players; the demonstrated seat is player 1, playing Bouton's moves with probability 0.8, else random ones (a random move where no move wins), and the other seats play the same way");
    expect(nimDemosText({ players: 3, demoSeat: 'each', demoOptimalRate: 1 })).toContain('in game i the demonstrated seat is player (i mod 3) + 1, playing Bouton\'s moves (');
    expect(() => nimDemosText({ demoSeat: 'both' as never })).toThrow(/demoSeat/);
  });
});

describe('agents part: the signalling game and the seats in words', () => {
  it('describes the game from its options (defaults filled in) and a seat from its extras', () => {
    expect(signalGameText(undefined)).toBe("the speaker sees one of 4 objects (circle, square, star, cross) and sends one of the letters a, b, c, d, e, f, g, h (the letter in answer tags); the listener sees the letter and picks an object (by name in answer tags); full prompts. Both get 1 for the target, so success is the same for both (chance 0.250). The warm start's demonstrations are random letters and picks: formats, no code.");
    const t = signalGameText({ objects: ['ring', 'box', 'star'], symbols: 'aeio', prompt: { speaker: 'short', listener: 'minimal' }, message: 'bare', pick: 'initial', drills: 0.5, speakerDrills: 0.25 });
    for (const part of ['one of 3 objects (ring, box, star)', 'letters a, e, i, o (the letter alone)', '(by its first letter)', 'short prompts for the speaker, minimal for the listener', 'chance 0.333', "0.5 of the listener's are reading drills", "0.25 of the speaker's naming drills"]) expect(t).toContain(part);
    expect(() => signalGameText({ symbols: 'a' })).toThrow(RangeError);
    expect(seatExtrasText(undefined)).toBe('');
    expect(seatExtrasText({ expectedReward: true, informationBonus: 0.3, maxNewTokens: 1 })).toBe("credited the expected reward under its partner's policy, information bonus 0.3, 1 token per action");
    expect(seatExtrasText({ expectedReward: true, bestResponse: true })).toBe("credited the expected reward under its partner's policy, learning also its best one-to-one response to its partner (supervised)");
    expect(seatExtrasText({ bestResponse: { own: 1 } })).toBe('learning also its best one-to-one response to its partner (supervised, its own log-probabilities weighed 1)');
    expect(seatExtrasText({ hindsight: true, temperature: 0, schedule: 'cosine' })).toBe('learning from hindsight (supervised, greedy), cosine schedule');
    expect(seatExtrasText({ hindsight: true, temperature: 0, hindsightSteps: 4 })).toBe("learning from hindsight (supervised, greedy, on its last 4 steps' games)");
    expect(seatExtrasText({ informationBonus: { posterior: 0.5, marginal: 0 } })).toBe('information bonus posterior 0.5');
    expect(seatExtrasText({ informationBonus: { posterior: 0.5, marginal: 0.05, steps: 4 }, vocabulary: ['a', 'e'] })).toBe('information bonus posterior 0.5, marginal 0.05 (shares over its last 4 steps), saying only a, e');
    expect(seatExtrasText({ informationBonus: { marginal: 0.05, conditional: 0.1 } })).toBe('information bonus marginal 0.05, conditional 0.1');
    expect(seatExtrasText({ algo: 'rloo', entropyCoef: 0.01, maxNewTokens: 4, loraRank: 4 })).toBe('rloo, entropy bonus 0.01, 4 tokens per action, LoRA rank 4');
  });
});

describe('agents part: settings', () => {
  it('builds valid trainAgents settings for every game, three seeds in the measured run', () => {
    expect(AGENTS_RUN.seeds).toHaveLength(3);
    for (const s of [AGENTS_RUN, AGENTS_QUICK]) {
      for (const g of GAMES) {
        const t = gameSettings(s, g, 7);
        expect(t.seed).toBe(7);
        expect(t.seats).toHaveLength(2);
        expect(() => agentsModelConfig(t)).not.toThrow();
        // Each learner measured against a stand-in in each seat.
        expect(t.partners).toHaveLength(2);
      }
    }
    // nim's trajectories need the jobs' context
    expect(agentsModelConfig(gameSettings(AGENTS_RUN, 'nim', 0)).maxSeqLen).toBe(512);
  });
});

describe('agents part: the shipped warm starts', () => {
  it('has one per game that the measured run reads one for, written for the config trainAgents builds', async () => {
    for (const g of GAMES.filter((x) => gameWarmStart(AGENTS_RUN, x) === 'shipped')) {
      const f = await openSafetensors(new Uint8Array(readFileSync(shippedFile(g, AGENTS_RUN.model))));
      expect(f.metadata['webtinker.model'], g).toBe(JSON.stringify(agentsModelConfig(gameSettings(AGENTS_RUN, g, 0))));
      expect(JSON.parse(f.metadata['webtinker.made']).trainAgents, g).toBe(true);
    }
  });
});

describe('agents part: --from-json', () => {
  const rep: AgentsBenchReport = {
    settings: AGENTS_RUN, seconds: 12,
    games: [game('signal', [0.97, 0.66].map((x, seed) => seedRun({ seed, after: evaluation({ together: x, swapped: [0.25, 0.25] }) })), 128)],
  };
  const run = {
    date: '2026-01-02T03:04:05Z', command: 'npm run bench -- --only agents --json r.json',
    adapter: { vendor: 'v', architecture: '', device: '0', description: 'llvmpipe', isFallbackAdapter: true, features: [] },
    machine: { cpu: 'cpu', cores: 2, os: 'linux', deno: '2', loadavg: null },
  };
  const existing = ['<!-- generated -->', '# Benchmarks', '- Latest run: 2026-01-02T03:04:05Z', '<!-- bench:header:end -->', '', '<!-- bench:kernels:begin -->', 'kernels body', '<!-- bench:kernels:end -->', '',
    '<!-- bench:agents:begin -->', '## Several agents', '', '_Measured 2026-01-02T03:04:05Z with `old line`._', 'old body', '<!-- bench:agents:end -->', ''].join('\n');
  const figure = (suffix: string) => `B.${suffix}`;

  it('renders the section from the saved report, keeping the header and the other sections, with the run\'s measured line', () => {
    const json = { date: run.date, quick: false, run, ...agentsJson(rep) };
    const r = rerenderAgents(JSON.parse(JSON.stringify(json)), existing, figure);
    expect(r.markdown.startsWith('<!-- generated -->\n# Benchmarks\n- Latest run: 2026-01-02T03:04:05Z\n<!-- bench:header:end -->')).toBe(true);
    expect(r.markdown).toContain('kernels body');
    expect(r.markdown).not.toContain('old body');
    expect(r.markdown).toContain(agentsMarkdown(rep, '_Measured 2026-01-02T03:04:05Z with `npm run bench -- --only agents --json r.json` on v / 0 / llvmpipe (fallback adapter); cpu, 2 cores, linux, Deno 2._', false, figure).trim());
    expect([...r.figures.keys()]).toEqual([...agentsFigures(rep).keys()]);
  });

  it('a JSON without its run takes the section\'s own measured line of that date, and refuses another date', () => {
    const json = { date: run.date, quick: false, ...agentsJson(rep) };
    expect(rerenderAgents(json, existing, figure).markdown).toContain('_Measured 2026-01-02T03:04:05Z with `old line`._');
    expect(() => rerenderAgents({ ...json, date: '2026-02-02T00:00:00Z' }, existing, figure)).toThrow(/not that run's \(2026-02-02T00:00:00Z\)/);
    expect(() => rerenderAgents({ date: run.date, run }, existing, figure)).toThrow(/no agents results/);
    expect(() => rerenderAgents({ ...json, run }, null, figure)).toThrow(/no markdown to update/);
  });
});
