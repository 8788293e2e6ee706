// The sale game (src/env/envs/bargain.ts) through the multi-agent protocol: private numbers, the
// price as the buyer's observation, opposed payoffs; the best responses on each side beat the
// warm start's random play against the fixed scripted opponents a learner is measured against.
import { describe, expect, it } from 'vitest';
import { groupEpisodes } from '../../src/env/batch.ts';
import {
  bargainBestPrice, bargainBestSeller, bargainDemonstrations, bargainEnv, bargainGame, bargainPayoffs, bargainRandomBuyer, bargainRandomSeller, bargainReferences,
  bargainAnswer, bargainTruthfulBuyer, parseAccept, parsePrice, resolveBargainOptions,
} from '../../src/env/envs/bargain.ts';
import { rolloutTurnBased, type ScriptedPolicy, type Seat } from '../../src/env/multiagent.ts';
import { formatAnswer } from '../../src/env/actions.ts';
import { Rng } from '../../src/util/rng.ts';

const GAMES = 2000;
const meanReturns = async (seats: Seat[]) => {
  const b = await rolloutTurnBased(bargainEnv(), seats, groupEpisodes(GAMES, 1, 11), { seed: 5 });
  expect(b.games.length).toBe(GAMES);
  return [0, 1].map((p) => b.games.reduce((s, g) => s + g.rewardsP[p], 0) / GAMES);
};
/** Exact expectations over the default uniform costs 0..4 and values 3..9. */
const costs = [0, 1, 2, 3, 4], values = [3, 4, 5, 6, 7, 8, 9];
const expectation = (f: (c: number, v: number) => number) => costs.reduce((s, c) => s + values.reduce((t, v) => t + f(c, v), 0), 0) / (costs.length * values.length);

describe('sale game', () => {
  it('keeps each side\'s number private, passes the price on, and pays opposed amounts', async () => {
    const env = bargainEnv().create();
    const { cost, value } = bargainGame(42);
    const first = await env.reset(42);
    expect(first).toEqual({ player: 0, observation: expect.stringContaining(`The item cost you ${cost}.`) });
    expect(first.observation).not.toContain('worth');
    const asked = await env.step('<answer>7</answer>');
    expect(asked).toMatchObject({ player: 1, done: false, rewardsP: [0, 0] });
    expect(asked.observation).toContain(`worth ${value} to you. Price asked: 7.`);
    expect(asked.observation).not.toContain('cost');
    expect((await env.step('<answer>accept</answer>')).rewardsP).toEqual([(7 - cost) / 9, (value - 7) / 9]);
    await env.reset(42);
    await env.step('<answer>7</answer>');
    expect((await env.step('<answer>maybe</answer>')).rewardsP).toEqual([0, 0]); // not an acceptance
    // No digit: no sale, and the buyer is not asked.
    await env.reset(42);
    expect(await env.step('<answer>ten</answer>')).toMatchObject({ done: true, rewardsP: [0, 0] });
  });

  it('parses prices and answers strictly, and refuses bad options by name', () => {
    expect([parsePrice('<answer>0</answer>'), parsePrice('9'), parsePrice('<answer>10</answer>'), parsePrice('<answer>x</answer>')]).toEqual([0, 9, null, null]);
    expect([parseAccept('<answer>accept</answer>'), parseAccept('<answer>Accept</answer>'), parseAccept('<answer>reject</answer>'), parseAccept('accepted')]).toEqual([true, true, false, false]);
    expect(bargainPayoffs(2, 8, 5, true)).toEqual([3 / 9, 3 / 9]);
    expect(bargainPayoffs(2, 8, null, true)).toEqual([0, 0]);
    expect(() => resolveBargainOptions({ costs: [] })).toThrow(/costs/);
    expect(() => resolveBargainOptions({ values: [3, 3] })).toThrow(/values/);
    expect(() => resolveBargainOptions({ values: [10] })).toThrow(/values/);
  });

  it('has one best price per cost against a truthful buyer', () => {
    // argmax_p (p − c)·#{v ≥ p}, v ∈ 3..9.
    expect(costs.map((c) => bargainBestPrice(c))).toEqual([5, 5, 6, 6, 7]);
  });

  it('the best responses beat random play against the fixed opponents, by the exact expectations', async () => {
    const gainAt = (c: number, v: number, p: number) => (p <= v ? (p - c) / 9 : 0);
    // Seller against the truthful buyer: the best price vs a random one.
    const [best] = await meanReturns([bargainBestSeller(), bargainTruthfulBuyer()]);
    const [random] = await meanReturns([bargainRandomSeller(), bargainTruthfulBuyer()]);
    expect(best).toBeCloseTo(expectation((c, v) => gainAt(c, v, bargainBestPrice(c))), 1);
    expect(random).toBeCloseTo(expectation((c, v) => [...Array(10).keys()].reduce((s, p) => s + gainAt(c, v, p), 0) / 10), 1);
    expect(best).toBeGreaterThan(random + 0.05);
    // Buyer against random prices: accepting exactly p ≤ v vs answering at random.
    const [, truthful] = await meanReturns([bargainRandomSeller(), bargainTruthfulBuyer()]);
    const [, coin] = await meanReturns([bargainRandomSeller(), bargainRandomBuyer()]);
    const buyerAt = (_c: number, v: number) => [...Array(10).keys()].reduce((s, p) => s + (p <= v ? (v - p) / 9 : 0), 0) / 10;
    expect(truthful).toBeCloseTo(expectation(buyerAt), 1);
    expect(truthful).toBeGreaterThan(coin + 0.1);
    // The exact references the bench and the arena quote: the same sums, and the figures in words.
    const refs = bargainReferences();
    expect(refs.sellerBest).toBeCloseTo(expectation((c, v) => gainAt(c, v, bargainBestPrice(c))), 12);
    expect(refs.sellerRandom).toBeCloseTo(expectation((c, v) => [...Array(10).keys()].reduce((s, p) => s + gainAt(c, v, p), 0) / 10), 12);
    expect(refs.buyerTruthful).toBeCloseTo(expectation(buyerAt), 12);
    expect(refs.buyerCoin).toBeCloseTo(expectation((_c, v) => [...Array(10).keys()].reduce((s, p) => s + (v - p) / 9, 0) / 20), 12);
    expect([refs.sellerRandom, refs.sellerBest, refs.buyerCoin, refs.buyerTruthful].map((x) => x.toFixed(3))).toEqual(['0.100', '0.260', '0.083', '0.256']);
  });

  it('a malformed price ends the game before the buyer acts', async () => {
    const mute: ScriptedPolicy = { kind: 'scripted', id: 'mute', act: () => formatAnswer('soon') };
    const b = await rolloutTurnBased(bargainEnv(), [mute, bargainTruthfulBuyer()], groupEpisodes(20, 1, 3), { seed: 1 });
    expect(b.games.every((g) => g.endReason === 'done' && g.steps === 1 && g.rewardsP.every((r) => r === 0))).toBe(true);
  });

  it('demonstrates both seats\' formats with random prices and answers', () => {
    const demos = bargainDemonstrations(400, new Rng(5));
    expect(demos.filter((d) => d.player === 1).length).toBe(200);
    const prices = new Set(demos.map((d) => parsePrice(d.actions[0])));
    expect(prices.size).toBe(10);
    const accepts = demos.filter((d) => parseAccept(d.actions[1])).length;
    expect(Math.abs(accepts / 400 - 0.5)).toBeLessThan(0.1); // a coin: sd 0.025
  });

  it("short prompts: each seat's numbers alone; the scripted seats read them as the full ones", async () => {
    const o = { prompt: 'short' as const };
    const env = bargainEnv(o).create();
    const { cost, value } = bargainGame(42);
    expect((await env.reset(42)).observation).toBe(`Seller. Cost ${cost}.`);
    expect((await env.step('<answer>6</answer>')).observation).toBe(`Buyer. Worth ${value}. Price 6.`);
    expect(bargainBestSeller(o).act(`Seller. Cost 3.`, new Rng(1))).toBe(formatAnswer(String(bargainBestPrice(3))));
    expect(bargainTruthfulBuyer().act('Buyer. Worth 7. Price 5.', new Rng(1))).toBe(formatAnswer('accept'));
    expect(bargainTruthfulBuyer().act('Buyer. Worth 4. Price 5.', new Rng(1))).toBe(formatAnswer('reject'));
    // The same games pay the same as with the full prompts.
    const returns = async (opts: { prompt?: 'short' }) => {
      const b = await rolloutTurnBased(bargainEnv(opts), [bargainBestSeller(opts), bargainTruthfulBuyer()], groupEpisodes(200, 1, 11), { seed: 5 });
      return b.games.map((g) => g.rewardsP);
    };
    expect(await returns(o)).toEqual(await returns({}));
    expect(() => bargainEnv({ prompt: 'tiny' as 'short' })).toThrow(/prompt must be 'full' or 'short'/);
  });

  it('bare answers: the digit alone and y or n, one byte token each, paid as the tagged ones', async () => {
    const o = { prompt: 'short' as const, answers: 'bare' as const };
    expect([bargainAnswer(o, '7'), bargainAnswer(o, 'accept'), bargainAnswer(o, 'reject')]).toEqual(['7', 'y', 'n']);
    expect(bargainAnswer({}, 'accept')).toBe(formatAnswer('accept'));
    expect([parseAccept('y'), parseAccept(' Y '), parseAccept('n'), parseAccept('yes')]).toEqual([true, true, false, false]);
    const demos = bargainDemonstrations(200, new Rng(5), o);
    expect(demos.every((d) => /^[0-9]$/.test(d.actions[0]) && /^[yn]$/.test(d.actions[1]))).toBe(true);
    expect(new Set(demos.map((d) => d.actions[1])).size).toBe(2);
    // The environment's demonstrations follow its option.
    expect(bargainEnv(o).demonstrations!(10, new Rng(5))).toEqual(bargainDemonstrations(10, new Rng(5), o));
    // A bare seller and buyer playing the best responses are paid exactly what the tagged ones are.
    const bareSeller: ScriptedPolicy = { kind: 'scripted', id: 'bare-best', act: async (obs, rng) => bargainAnswer(o, String(parsePrice(await bargainBestSeller(o).act(obs, rng)))) };
    const bareBuyer: ScriptedPolicy = { kind: 'scripted', id: 'bare-truthful', act: async (obs, rng) => bargainAnswer(o, parseAccept(await bargainTruthfulBuyer().act(obs, rng)) ? 'accept' : 'reject') };
    const play = async (opts: object, seats: Seat[]) => (await rolloutTurnBased(bargainEnv(opts), seats, groupEpisodes(200, 1, 11), { seed: 5 })).games.map((g) => g.rewardsP);
    const bare = await play(o, [bareSeller, bareBuyer]);
    expect(bare).toEqual(await play({ prompt: 'short' }, [bargainBestSeller(o), bargainTruthfulBuyer()]));
    expect(bare.some((r) => r[0] > 0)).toBe(true);
    // The full prompt names the bare forms.
    const env = bargainEnv({ answers: 'bare' }).create();
    expect((await env.reset(42)).observation).toMatch(/the digit alone\.$/);
    expect((await env.step('6')).observation).toMatch(/Answer y \(accept\) or n \(reject\)\.$/);
    expect(() => bargainEnv({ answers: 'plain' as 'bare' })).toThrow(/answers must be 'tagged' or 'bare'/);
  });
});
