// The signalling game (src/env/envs/signal.ts) played by scripted seats through the multi-agent
// protocol: the speaker's message reaches the listener as its observation; a shared code wins
// every game, a partner without one falls to chance (1/k); the demonstrations teach formats, no code.
import { describe, expect, it } from 'vitest';
import { groupEpisodes } from '../../src/env/batch.ts';
import {
  parsePick, parseSignal, signalCodeListener, signalCodeSpeaker, signalDemonstrations, signalEnv, signalGame, signalRandomListener, signalRandomSpeaker,
} from '../../src/env/envs/signal.ts';
import { rolloutTurnBased, type Seat } from '../../src/env/multiagent.ts';
import { Rng } from '../../src/util/rng.ts';

const GAMES = 400;
const successRate = async (seats: Seat[], opts = {}) => {
  const b = await rolloutTurnBased(signalEnv(opts), seats, groupEpisodes(GAMES, 1, 7), { seed: 3 });
  expect(b.games.length).toBe(GAMES);
  expect(b.games.every((g) => g.endReason === 'done' && g.steps === 2)).toBe(true);
  return b.games.filter((g) => g.rewardsP[0] === 1 && g.rewardsP[1] === 1).length / GAMES;
};

describe('signalling game', () => {
  it('passes the message to the listener as its observation, and pays both the same', async () => {
    const env = signalEnv().create();
    const first = await env.reset(42);
    const { target, order } = signalGame(42, 4);
    expect([...order].sort()).toEqual([0, 1, 2, 3]);
    expect(first.player).toBe(0);
    expect(first.observation).toContain(`must pick the ${['circle', 'square', 'star', 'cross'][target]}.`);
    const heard = await env.step('<answer>f</answer>');
    expect(heard).toMatchObject({ player: 1, done: false, rewardsP: [0, 0] });
    expect(heard.observation).toMatch(/Message: f\. Pick one/);
    const names = ['circle', 'square', 'star', 'cross'];
    expect(heard.observation).toContain(`Candidates: ${order.map((i) => names[i]).join(', ')}.`);
    const right = names[target];
    expect(await env.step(`<answer>${right}</answer>`)).toMatchObject({ done: true, rewardsP: [1, 1], info: { won: true, message: 'f' } });
    // A wrong pick, and a message that is no symbol (the listener hears nothing and a right guess scores 0).
    await env.reset(42);
    await env.step('<answer>b</answer>');
    expect((await env.step(`<answer>${names[(target + 1) % 4]}</answer>`)).rewardsP).toEqual([0, 0]);
    await env.reset(42);
    expect((await env.step('<answer>zz</answer>')).observation).toContain('Message: (nothing).');
    expect((await env.step(`<answer>${right}</answer>`)).rewardsP).toEqual([0, 0]);
  });

  it('a shared code wins every game; a partner without one falls to chance', async () => {
    expect(await successRate([signalCodeSpeaker(), signalCodeListener()])).toBe(1);
    // Two different codes: the listener decodes another mapping, so it is right only by coincidence.
    expect(await successRate([signalCodeSpeaker({}, 'abcd'), signalCodeListener({}, 'dcba')])).toBe(0);
    for (const seats of [[signalCodeSpeaker(), signalRandomListener()], [signalRandomSpeaker(), signalCodeListener()]]) {
      const s = await successRate(seats);
      // Chance is 1/4; over 400 games its sd is 0.022 — ±4 sd.
      expect(Math.abs(s - 0.25)).toBeLessThan(0.09);
    }
    // Six objects: chance 1/6.
    const six = { objects: ['red', 'green', 'blue', 'black', 'white', 'pink'], symbols: 'abcdefgh' };
    expect(await successRate([signalCodeSpeaker(six), signalCodeListener(six)], six)).toBe(1);
    expect(Math.abs((await successRate([signalCodeSpeaker(six), signalRandomListener(six)], six)) - 1 / 6)).toBeLessThan(0.08);
  });

  it('demonstrates the formats of both seats and no code', () => {
    const demos = signalDemonstrations(GAMES, new Rng(5));
    expect(demos.filter((d) => (d.player ?? 0) === 0).length).toBe(GAMES / 2);
    for (const d of demos) {
      expect(parseSignal(d.actions[0], 'abcdefgh')).not.toBeNull();
      expect(parsePick(d.actions[1], ['circle', 'square', 'star', 'cross'])).not.toBeNull();
    }
    // The demonstrated messages carry nothing about the target: the best decoder of them (the most
    // frequent target per symbol) does little better than always guessing the most frequent target.
    const counts = new Map<string, number[]>();
    for (const d of demos) {
      const sym = parseSignal(d.actions[0], 'abcdefgh')!;
      const row = counts.get(sym) ?? [0, 0, 0, 0];
      row[signalGame(d.seed, 4).target]++;
      counts.set(sym, row);
    }
    const decoded = [...counts.values()].reduce((s, row) => s + Math.max(...row), 0) / GAMES;
    expect(decoded).toBeLessThan(0.4); // a code would reach 1; chance is 0.25 (0.3–0.35 from overfitting 8 small cells)
  });

  it('parses messages and picks strictly, and refuses bad options', () => {
    expect(parseSignal('<answer> C </answer>', 'abc')).toBe('c');
    expect(parseSignal('<answer>ab</answer>', 'abc')).toBeNull();
    expect(parseSignal('<answer>z</answer>', 'abc')).toBeNull();
    expect(parsePick('<answer> Star</answer>', ['circle', 'star'])).toBe(1);
    expect(parsePick('<answer>stars</answer>', ['circle', 'star'])).toBeNull();
    expect(parsePick('<answer>2</answer>', ['circle', 'star'])).toBeNull();
    expect(parsePick('circle', ['circle', 'star'])).toBe(0);
    expect(() => signalEnv({ objects: ['one'] })).toThrow(RangeError);
    expect(() => signalEnv({ objects: ['a', 'a'] })).toThrow(/distinct/);
    expect(() => signalEnv({ symbols: 'aa' })).toThrow(/symbols/);
    expect(() => signalEnv({ symbols: 'A1' })).toThrow(/symbols/);
    expect(() => signalEnv({ shuffle: 'no' as unknown as boolean })).toThrow(/shuffle/);
  });

  it('shows the candidates in objects order when shuffle is false; the target is drawn as before', async () => {
    const env = signalEnv({ shuffle: false }).create();
    for (const seed of [1, 42, 99]) {
      await env.reset(seed);
      const heard = await env.step('<answer>a</answer>');
      expect(heard.observation).toContain('Candidates: circle, square, star, cross.');
      const right = ['circle', 'square', 'star', 'cross'][signalGame(seed, 4).target];
      expect((await env.step(`<answer>${right}</answer>`)).rewardsP).toEqual([1, 1]);
    }
  });
});
