import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/env/agent.ts';
import { replayDemonstrations } from '../../src/env/demos.ts';
import { guessNumberDemonstrations, guessNumberEnv, guessReward, parseGuess, secretNumber } from '../../src/env/envs/guess_number.ts';
import { rolloutGroups } from '../../src/env/rollout.ts';
import { Rng } from '../../src/util/rng.ts';
import { fakePolicy, tok } from './env_fakes.ts';

describe('guess-number environment', () => {
  it('picks the secret from the seed, uniformly over the range', () => {
    expect(secretNumber(9, 1, 32)).toBe(secretNumber(9, 1, 32));
    const counts = new Array(9).fill(0);
    for (let s = 0; s < 9000; s++) counts[secretNumber(s, 1, 9) - 1]++;
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
  });

  it('answers higher/lower, and pays (maxGuesses − k + 1)/maxGuesses for finding it on guess k', async () => {
    const env = guessNumberEnv({ low: 1, high: 32, maxGuesses: 6 }).create();
    expect(await env.reset(4)).toBe('Guess my number from 1 to 32 in at most 6 guesses. Reply <answer>N</answer>.');
    const secret = secretNumber(4, 1, 32);
    const below = secret === 1 ? 2 : 1;
    const first = await env.step(`<answer>${below}</answer>`);
    expect(first).toMatchObject({ reward: 0, done: false, observation: `${below < secret ? 'Higher' : 'Lower'} than ${below}. 5 left.` });
    const found = await env.step(`<answer>${secret}</answer>`);
    expect(found).toMatchObject({ reward: 5 / 6, done: true, observation: `Yes, ${secret}.`, info: { found: true, guesses: 2 } });
    expect([guessReward(1, 6), guessReward(6, 6)]).toEqual([1, 1 / 6]);
  });

  it('uses up a guess on invalid input and ends with 0 when out of guesses', async () => {
    const env = guessNumberEnv({ low: 1, high: 8, maxGuesses: 3 }).create();
    await env.reset(0);
    const secret = secretNumber(0, 1, 8);
    const wrong = secret === 8 ? 7 : 8;
    expect(await env.step('banana')).toMatchObject({ reward: 0, done: false, info: { invalid: true }, observation: 'Invalid guess. Reply <answer>N</answer> with N from 1 to 8. 2 left.' });
    expect(await env.step('<answer>99</answer>')).toMatchObject({ done: false, info: { invalid: true } });
    expect(await env.step(`${wrong}`)).toMatchObject({ reward: 0, done: true, observation: `Out of guesses; it was ${secret}.` });
  });

  it('names the interval still possible when asked (showInterval), narrowing only', async () => {
    const env = guessNumberEnv({ low: 1, high: 16, maxGuesses: 5, showInterval: true }).create();
    const seed = [...Array(200).keys()].find((k) => secretNumber(k, 1, 16) === 11)!;
    await env.reset(seed);
    expect((await env.step('<answer>8</answer>')).observation).toBe('Higher than 8, so 9 to 16. 4 left.');
    expect((await env.step('<answer>14</answer>')).observation).toBe('Lower than 14, so 9 to 13. 3 left.');
    // A guess outside the interval tells nothing new: the interval stays.
    expect((await env.step('<answer>3</answer>')).observation).toBe('Higher than 3, so 9 to 13. 2 left.');
    expect((await env.step('<answer>12</answer>')).observation).toBe('Lower than 12, so 9 to 11. 1 left.');
    expect(await env.step('<answer>11</answer>')).toMatchObject({ done: true, reward: 0.2 });
  });

  it('demonstrations that ignore feedback pick their off-midpoint guesses from the whole range', () => {
    const opts = { low: 1, high: 16, maxGuesses: 5, demoMidpointRate: 0.5, demoIgnoreFeedback: true };
    const demos = guessNumberDemonstrations(300, new Rng(3), opts);
    let outside = 0;
    for (const d of demos) {
      const secret = secretNumber(d.seed, 1, 16);
      let lo = 1, hi = 16;
      for (const a of d.actions) {
        const g = Number(/\d+/.exec(a)![0]);
        expect(g).toBeGreaterThanOrEqual(1);
        expect(g).toBeLessThanOrEqual(16);
        if (g < lo || g > hi) outside++;
        if (g < secret) lo = Math.max(lo, g + 1);
        else if (g > secret) hi = Math.min(hi, g - 1);
      }
      expect(d.actions.length).toBeLessThanOrEqual(5);
    }
    expect(outside).toBeGreaterThan(50);
    // Without the option every guess stays inside the interval.
    for (const d of guessNumberDemonstrations(100, new Rng(3), { ...opts, demoIgnoreFeedback: false })) {
      const secret = secretNumber(d.seed, 1, 16);
      let lo = 1, hi = 16;
      for (const a of d.actions) {
        const g = Number(/\d+/.exec(a)![0]);
        expect(g >= lo && g <= hi).toBe(true);
        if (g < secret) lo = g + 1;
        else hi = g - 1;
      }
    }
  });

  it('accepts a bare number as well as the answer tag', () => {
    expect([parseGuess('<answer> 12 </answer>'), parseGuess(' 7 '), parseGuess('seven'), parseGuess('1.5'), parseGuess('')]).toEqual([12, 7, null, null, null]);
  });

  it('rewards binary search above random guessing in a multi-turn rollout', async () => {
    const bounds = (p: string) => {
      let lo = 1, hi = 32;
      for (const m of p.matchAll(/(Higher|Lower) than (\d+)/g)) {
        if (m[1] === 'Higher') lo = Number(m[2]) + 1;
        else hi = Number(m[2]) - 1;
      }
      return [lo, hi];
    };
    const bisect = fakePolicy((p) => { const [lo, hi] = bounds(p); return `<answer>${Math.floor((lo + hi) / 2)}</answer>`; });
    const linear = fakePolicy((p) => `<answer>${1 + [...p.matchAll(/than/g)].length}</answer>`);
    const spec = guessNumberEnv();
    const run = async (sample: typeof bisect) => (await rolloutGroups(spec, new Agent({ sample, tokenizer: tok, maxTurns: 10 }), { groups: 50, groupSize: 1, seed: 7 })).metrics;
    const [b, l] = [await run(bisect), await run(linear)];
    expect(b.endReasons.done).toBe(50);
    expect(b.meanReward).toBeGreaterThan(0.3);
    expect(b.meanReward).toBeGreaterThan(l.meanReward + 0.15);
  });

  it('demonstrations are noisy binary searches that replay through the protocol', async () => {
    const demos = guessNumberDemonstrations(100, new Rng(2));
    expect(guessNumberDemonstrations(100, new Rng(2))).toEqual(demos);
    const replay = await replayDemonstrations(guessNumberEnv(), demos, { tokenizer: tok });
    expect(replay.trajectories.length).toBe(100);
    const found = replay.trajectories.filter((t) => t.reward > 0);
    expect(found.length).toBeGreaterThan(85);
    for (const t of found) expect(t.turns.at(-1)!.action).toBe(`<answer>${secretNumber(t.seed, 1, 32)}</answer>`);
    // Noise: some guesses are not the midpoint of the interval still possible.
    const offMidpoint = demos.filter((d) => {
      const secret = secretNumber(d.seed, 1, 32);
      let lo = 1, hi = 32;
      return d.actions.some((a) => {
        const g = Number(/\d+/.exec(a)![0]);
        const off = g !== Math.floor((lo + hi) / 2);
        if (g < secret) lo = g + 1;
        else hi = g - 1;
        return off;
      });
    });
    expect(offMidpoint.length).toBeGreaterThan(30);
    expect(offMidpoint.length).toBeLessThan(100);
  });

  it('demoLinearRate: a share of demonstrations scan upward (1, 2, 3, ...), the rest are exact binary searches', () => {
    const demos = guessNumberDemonstrations(400, new Rng(5), { low: 1, high: 16, maxGuesses: 5, demoMidpointRate: 1, demoLinearRate: 0.5 });
    let linear = 0;
    for (const d of demos) {
      const secret = secretNumber(d.seed, 1, 16);
      const guesses = d.actions.map((a) => Number(/\d+/.exec(a)![0]));
      if (guesses[0] === 1) {
        linear++;
        expect(guesses).toEqual(Array.from({ length: Math.min(secret, 5) }, (_, k) => k + 1));
      } else {
        let lo = 1, hi = 16;
        for (const g of guesses) {
          expect(g).toBe(Math.floor((lo + hi) / 2));
          if (g < secret) lo = g + 1;
          else hi = g - 1;
        }
      }
    }
    expect(linear).toBeGreaterThan(160);
    expect(linear).toBeLessThan(240);
    expect(() => guessNumberEnv({ demoLinearRate: 1.5 })).toThrow(/demoLinearRate must be in \[0, 1\], got 1.5/);
  });
});
