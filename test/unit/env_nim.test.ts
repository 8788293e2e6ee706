import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/env/agent.ts';
import { replayTurnBasedDemonstrations } from '../../src/env/demos.ts';
import {
  isLegalNimMove, nimDemonstrations, nimEnv, nimOptimalMove, nimOptimalPolicy, nimPiles, nimRandomPolicy, nimStallMove, parseNimMove, parseNimPiles, randomNimMove,
} from '../../src/env/envs/nim.ts';
import { rolloutTurnBased } from '../../src/env/multiagent.ts';
import { Rng } from '../../src/util/rng.ts';
import { fakePolicy, tok } from './env_fakes.ts';

describe('nim environment', () => {
  it('deals piles from the seed and shows the rules in each player’s first observation', async () => {
    expect(nimPiles(3, 3, 5)).toEqual(nimPiles(3, 3, 5));
    const env = nimEnv().create();
    const first = await env.reset(3);
    const piles = nimPiles(3, 3, 5);
    expect(first).toEqual({ player: 0, observation: `Nim, you are player 1. Take the last object to win. Move: <answer>PILE COUNT</answer>. Piles: ${piles.join(' ')}. Your move.` });
    const r = await env.step('<answer>1 1</answer>');
    piles[0] -= 1;
    expect(r.player).toBe(1);
    expect(r.rewardsP).toEqual([0, 0]);
    if (!r.done) expect(r.observation).toMatch(new RegExp(`^Nim, you are player 2\\..*Player 1 took 1 from pile 1\\. Piles: ${piles.join(' ')}\\. Your move\\.$`));
  });

  it('gives +1 to whoever takes the last object and −1 to the other', async () => {
    const spec = nimEnv({ piles: 1, maxPile: 5 });
    const env = spec.create();
    await env.reset(0);
    const n = nimPiles(0, 1, 5)[0];
    const r = await env.step(`<answer>1 ${n}</answer>`);
    expect(r).toMatchObject({ done: true, rewardsP: [1, -1], info: { winner: 0 } });
  });

  it('makes an illegal or unparseable move lose at once', async () => {
    const env = nimEnv().create();
    for (const bad of ['<answer>9 1</answer>', '<answer>1 0</answer>', '<answer>1 99</answer>', 'take some']) {
      await env.reset(1);
      const r = await env.step(bad);
      expect(r).toMatchObject({ done: true, rewardsP: [-1, 1], info: { illegal: true, loser: 0 } });
    }
  });

  it('parses moves and piles', () => {
    expect(parseNimMove('<answer>2 3</answer>')).toEqual({ pile: 1, count: 3 });
    expect(parseNimMove('pile 2, take 3')).toEqual({ pile: 1, count: 3 });
    expect(parseNimMove('23')).toBeNull();
    expect(parseNimPiles('Piles: 3 1 4. then Piles: 1 0 4.')).toEqual([1, 0, 4]);
    expect(isLegalNimMove([1, 0, 4], { pile: 1, count: 1 })).toBe(false);
  });

  it('the optimal move leaves nim-sum 0 whenever the position allows', () => {
    const rng = new Rng(5);
    for (let i = 0; i < 300; i++) {
      const piles = Array.from({ length: 3 }, () => rng.nextInt(8));
      if (piles.every((p) => p === 0)) continue;
      const m = nimOptimalMove(piles, rng);
      expect(isLegalNimMove(piles, m)).toBe(true);
      const after = piles.slice();
      after[m.pile] -= m.count;
      if (piles.reduce((a, b) => a ^ b) !== 0) expect(after.reduce((a, b) => a ^ b)).toBe(0);
      expect(isLegalNimMove(piles, randomNimMove(piles, rng))).toBe(true);
    }
  });

  it('an optimal agent beats the random evaluation opponent from winning positions', async () => {
    const optimal = fakePolicy((p, r) => {
      const piles = parseNimPiles(p)!;
      const m = nimOptimalMove(piles, new Rng(r.seed));
      return `<answer>${m.pile + 1} ${m.count}</answer>`;
    });
    const spec = nimEnv();
    const games = Array.from({ length: 60 }, (_, i) => ({ seed: i, groupId: i }));
    const out = await rolloutTurnBased(spec, [new Agent({ sample: optimal, tokenizer: tok, maxTurns: 20 }), nimRandomPolicy()], games, { seed: 1 });
    for (const g of out.games) {
      expect(g.endReason).toBe('done');
      if (nimPiles(g.seed, 3, 5).reduce((a, b) => a ^ b) !== 0) expect(g.rewardsP).toEqual([1, -1]);
    }
    const wins = out.games.filter((g) => g.rewardsP[0] === 1).length;
    expect(wins).toBeGreaterThan(50);
    expect(out.seats[0]!.metrics.meanReward).toBeCloseTo((2 * wins - 60) / 60, 12);
  });

  it('the optimal scripted player never loses a winnable position to random play, moving first or second', async () => {
    for (const losing of ['stall', 'random'] as const) {
      const optimal = nimOptimalPolicy('opt', losing);
      const random = nimRandomPolicy();
      const rng = new Rng(11);
      // Every winnable position of up to three piles of 0..5, its turn: it takes the last object.
      for (let code = 1; code < 6 ** 3; code++) {
        const start = [code % 6, Math.floor(code / 6) % 6, Math.floor(code / 36)];
        if ((start[0] ^ start[1] ^ start[2]) === 0) continue;
        for (let game = 0; game < 3; game++) {
          const piles = start.slice();
          for (let turn = 0; ; turn++) {
            const m = parseNimMove(await (turn % 2 === 0 ? optimal : random).act(`Piles: ${piles.join(' ')}. Your move.`, rng))!;
            expect(isLegalNimMove(piles, m)).toBe(true);
            piles[m.pile] -= m.count;
            if (piles.every((n) => n === 0)) {
              expect(turn % 2).toBe(0);
              break;
            }
          }
        }
      }
      // Through the environment: as player 1 it wins every board whose nim-sum is not 0; as player 2 every board whose nim-sum is 0.
      const games = Array.from({ length: 80 }, (_, i) => ({ seed: i, groupId: i }));
      const first = await rolloutTurnBased(nimEnv(), [optimal, random], games, { seed: 2 });
      const second = await rolloutTurnBased(nimEnv(), [random, optimal], games, { seed: 2 });
      const zero = (seed: number) => nimPiles(seed, 3, 5).reduce((a, b) => a ^ b) === 0;
      for (const g of first.games) if (!zero(g.seed)) expect(g.rewardsP).toEqual([1, -1]);
      for (const g of second.games) if (zero(g.seed)) expect(g.rewardsP).toEqual([-1, 1]);
      expect(first.games.filter((g) => g.rewardsP[0] === 1).length).toBeGreaterThan(60);
    }
    // From a losing position: 'stall' (the default) takes one object off the largest pile.
    expect(await nimOptimalPolicy().act('Piles: 2 3 1. Your move.', new Rng(0))).toBe('<answer>2 1</answer>');
    expect(await nimOptimalPolicy().act('Piles: 2 3 2. Your move.', new Rng(0))).toBe('<answer>1 1</answer>');
  });

  it("with demoLosingMove 'stall' every demonstrated move is a function of the piles: Bouton's move, else one from the largest pile", () => {
    expect(nimStallMove([2, 5, 5])).toEqual({ pile: 1, count: 1 });
    expect(() => nimStallMove([0, 0])).toThrow(/empty/);
    // nim-sum 0: a losing position, so the stall move; otherwise the winning move.
    expect(nimOptimalMove([1, 2, 3], new Rng(1), 'stall')).toEqual({ pile: 2, count: 1 });
    expect(nimOptimalMove([1, 2, 4], new Rng(1), 'stall')).toEqual({ pile: 2, count: 1 });
    expect(nimOptimalMove([3, 5, 1], new Rng(1), 'stall')).toEqual({ pile: 1, count: 3 });
    const opts = { demoOptimalRate: 1, demoLosingMove: 'stall' } as const;
    for (const d of nimDemonstrations(40, new Rng(9), opts)) {
      const piles = nimPiles(d.seed, 3, 5);
      for (const a of d.actions) {
        const m = nimOptimalMove(piles, new Rng(0), 'stall');
        expect(a).toBe(`<answer>${m.pile + 1} ${m.count}</answer>`);
        piles[m.pile] -= m.count;
      }
      expect(piles.every((n) => n === 0)).toBe(true);
    }
    expect(() => nimEnv({ demoLosingMove: 'sometimes' as never })).toThrow(/demoLosingMove/);
  });

  it("with demoOthers 'random' player 1 plays as set and the others play random legal moves (the evaluation's positions)", () => {
    const opts = { piles: 2, demoOptimalRate: 1, demoLosingMove: 'stall', demoOthers: 'random' } as const;
    let othersOptimal = 0, others = 0;
    const firstMoves = new Set<string>();
    for (const d of nimDemonstrations(200, new Rng(3), opts)) {
      const piles = nimPiles(d.seed, 2, 5);
      d.actions.forEach((a, i) => {
        const m = parseNimMove(a)!;
        expect(isLegalNimMove(piles, m)).toBe(true);
        const best = nimOptimalMove(piles, new Rng(0), 'stall');
        if (i % 2 === 0) {
          expect(m).toEqual(best);
          if (i === 0) firstMoves.add(a);
        } else {
          others++;
          if (m.pile === best.pile && m.count === best.count) othersOptimal++;
        }
        piles[m.pile] -= m.count;
      });
      expect(piles.every((n) => n === 0)).toBe(true);
    }
    expect(othersOptimal / others).toBeLessThan(0.6); // random, not Bouton's
    expect(firstMoves.size).toBeGreaterThanOrEqual(6);
    expect(() => nimEnv({ demoOthers: 'clever' as never })).toThrow(/demoOthers/);
  });

  it("with demoSeat 'each' game i demonstrates seat i mod players: that seat plays Bouton's moves, the others random ones", () => {
    const opts = { piles: 2, demoOptimalRate: 1, demoLosingMove: 'stall', demoOthers: 'random', demoSeat: 'each' } as const;
    const demos = nimDemonstrations(120, new Rng(5), opts);
    expect(demos.map((d) => d.player ?? 0)).toEqual(demos.map((_, i) => i % 2));
    let othersOptimal = 0, others = 0;
    for (const d of demos) {
      const piles = nimPiles(d.seed, 2, 5);
      d.actions.forEach((a, i) => {
        const m = parseNimMove(a)!;
        const best = nimOptimalMove(piles, new Rng(0), 'stall');
        if (i % 2 === (d.player ?? 0)) expect(m).toEqual(best);
        else {
          others++;
          if (m.pile === best.pile && m.count === best.count) othersOptimal++;
        }
        piles[m.pile] -= m.count;
      });
    }
    expect(othersOptimal / others).toBeLessThan(0.6);
    // The default demonstrates player 1 and names no seat; three players rotate over three seats.
    expect(nimDemonstrations(4, new Rng(5), { ...opts, demoSeat: 'first' }).every((d) => d.player === undefined)).toBe(true);
    expect(nimDemonstrations(6, new Rng(5), { ...opts, players: 3 }).map((d) => d.player ?? 0)).toEqual([0, 1, 2, 0, 1, 2]);
    expect(() => nimEnv({ demoSeat: 'last' as never })).toThrow(/demoSeat/);
  });

  it('demonstrations are whole legal games that replay into one trajectory per seat', async () => {
    const demos = nimDemonstrations(30, new Rng(4));
    expect(nimDemonstrations(30, new Rng(4))).toEqual(demos);
    const replay = await replayTurnBasedDemonstrations(nimEnv(), demos, { tokenizer: tok });
    expect(replay.dropped).toEqual([]);
    for (let i = 0; i < demos.length; i++) {
      const ts = replay.trajectories.filter((t) => t.episodeId === i);
      expect(ts.length).toBe(demos[i].actions.length >= 2 ? 2 : 1);
      const winner = (demos[i].actions.length - 1) % 2;
      for (const t of ts) {
        expect(t.endReason).toBe('done');
        expect(t.reward).toBe(t.player === winner ? 1 : -1);
        expect(t.turns.map((x) => x.action)).toEqual(demos[i].actions.filter((_, k) => k % 2 === t.player));
      }
    }
  });
});
