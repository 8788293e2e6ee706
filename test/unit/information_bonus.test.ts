// The information bonus (src/algorithms/information_bonus.ts): coef · (log π(a | s) − log p̂(a)) on
// top of each trajectory's reward, p̂ the action's share of the step; against values worked by hand,
// its batch mean against the plug-in mutual information of what the seat saw and said.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { actionLogprob, bonusSteps, informationBonus } from '../../src/algorithms/information_bonus.ts';
import type { Trajectory, TrajectoryGroup } from '../../src/env/types.ts';
import { InvalidInputError } from '../../src/env/errors.ts';

/** A one-action trajectory: prompt token, then the action's tokens with their log-probs. */
function traj(seed: number, action: string, logprobs: number[], reward: number): Trajectory {
  return {
    envName: 'x', agentId: 'a', seed, groupId: 0, episodeId: 0, player: 0, promptLength: 1, reward, endReason: 'done',
    tokensT: [0, ...logprobs.map(() => 1)], policyMaskT: [0, ...logprobs.map(() => 1)], logprobsT: [0, ...logprobs],
    turns: [{ kind: 'env', actionStart: 1, actionEnd: 1 + logprobs.length, action, observation: '', reward, info: {} }],
  };
}

describe('information bonus', () => {
  it('adds coef · (log π(a|s) − log share(a)) to each reward and keeps everything else', () => {
    const groups: TrajectoryGroup[] = [
      { groupId: 0, seed: 1, trajectories: [traj(1, 'a', [-0.5], 1), traj(1, 'a', [-0.5], 0), traj(1, 'b', [-1.5], 0)] },
      { groupId: 1, seed: 2, trajectories: [traj(2, 'b', [-0.25, -0.25], 1)] },
    ];
    const out = informationBonus(groups, 0.5);
    // Shares: a 2/4, b 2/4.
    const want = [1 + 0.5 * (-0.5 - Math.log(0.5)), 0.5 * (-0.5 - Math.log(0.5)), 0.5 * (-1.5 - Math.log(0.5)), 1 + 0.5 * (-0.5 - Math.log(0.5))];
    expect(out.flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(want.map((x) => expect.closeTo(x, 12)));
    expect(out.map((g) => [g.groupId, g.seed, g.trajectories.length])).toEqual([[0, 1, 3], [1, 2, 1]]);
    expect(out[1].trajectories[0].tokensT).toEqual(groups[1].trajectories[0].tokensT);
    expect(actionLogprob(groups[1].trajectories[0])).toBeCloseTo(-0.5, 12);
    // The input is left as it was; coef 0 changes nothing.
    expect(groups[0].trajectories[0].reward).toBe(1);
    expect(informationBonus(groups, 0).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual([1, 0, 0, 1]);
    // Compared by what got through: "<x>a" and "a" are one message; an unreadable one is not paid, and
    // counts in the shares (of all 4 actions).
    const said = (t: Trajectory) => (t.turns[0].action === '??' ? null : t.turns[0].action.replace(/[<>x]/g, ''));
    const msgs = informationBonus([{ groupId: 0, seed: 1, trajectories: [traj(1, '<x>a', [-1], 0), traj(1, 'a', [-1], 0), traj(1, 'b', [-2], 0), traj(1, '??', [-3], 0)] }], 1, said);
    expect(msgs[0].trajectories.map((t) => t.reward)).toEqual([-1 - Math.log(2 / 4), -1 - Math.log(2 / 4), -2 - Math.log(1 / 4), 0].map((x) => expect.closeTo(x, 12)));
    // The parts apart: rarity −log share, sureness log π — { 1, 1 } is coef 1; { marginal: 1, conditional: 0 } pays rarity alone.
    const whole = informationBonus(groups, 1).flatMap((g) => g.trajectories.map((t) => t.reward));
    expect(informationBonus(groups, { marginal: 1, conditional: 1 }).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(whole);
    const rare = [{ groupId: 0, seed: 1, trajectories: [traj(1, 'a', [-0.1], 0), traj(1, 'a', [-0.1], 0), traj(1, 'a', [-0.1], 0), traj(1, 'b', [-3], 1)] }];
    expect(informationBonus(rare, { marginal: 0.5, conditional: 0 })[0].trajectories.map((t) => t.reward)).toEqual([-0.5 * Math.log(3 / 4), -0.5 * Math.log(3 / 4), -0.5 * Math.log(3 / 4), 1 - 0.5 * Math.log(1 / 4)].map((x) => expect.closeTo(x, 12)));
    expect(informationBonus(rare, { marginal: 0, conditional: 2 })[0].trajectories.map((t) => t.reward)).toEqual([-0.2, -0.2, -0.2, 1 - 6].map((x) => expect.closeTo(x, 12)));
    expect(() => informationBonus(groups, { marginal: -1, conditional: 0 })).toThrow(/marginal must be a finite number/);
    expect(informationBonus(groups, { marginal: 1 }).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(informationBonus(groups, { marginal: 1, conditional: 0 }).flatMap((g) => g.trajectories.map((t) => t.reward)));
    expect(() => informationBonus(groups, {})).toThrow(/names no part/);
    expect(() => informationBonus(groups, { posterior: Number.POSITIVE_INFINITY })).toThrow(/posterior must be a finite number/);
    expect(() => informationBonus(groups, { marginal: 1, conditional: 1, rare: 1 } as never)).toThrow(/unknown part "rare" \(known: marginal, conditional, posterior, and steps\)/);
    expect(() => informationBonus(groups, -1)).toThrow(InvalidInputError);
    expect(() => informationBonus(groups, Number.NaN)).toThrow(/coef must be a finite number/);
  });

  it('pays a pooling speaker nothing and a separating one log k on average: its mean is the plug-in mutual information', () => {
    fc.assert(fc.property(fc.array(fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 3, maxLength: 3 }), { minLength: 2, maxLength: 4 }), (counts) => {
      // A batch with counts[s][m] games of observation s that sent message m, each sampled with the
      // empirical conditional log n(s,m)/n(s) as its log-prob: the bonus's mean is then the plug-in
      // mutual information Σ n(s,m)/N · log(n(s,m)·N / (n(s)·n(m))), in [0, log 3].
      const N = counts.flat().reduce((a, b) => a + b, 0);
      if (N === 0) return;
      const ns = counts.map((r) => r.reduce((a, b) => a + b, 0));
      const nm = [0, 1, 2].map((m) => counts.reduce((a, r) => a + r[m], 0));
      const groups: TrajectoryGroup[] = counts.map((r, s) => ({
        groupId: s, seed: s,
        trajectories: r.flatMap((c, m) => Array.from({ length: c }, () => traj(s, 'xyz'[m], [Math.log(c / ns[s])], 0))),
      }));
      const mean = informationBonus(groups, 1).flatMap((g) => g.trajectories).reduce((a, t) => a + t.reward, 0) / N;
      let mi = 0;
      counts.forEach((r, s) => r.forEach((c, m) => { if (c > 0) mi += (c / N) * Math.log((c * N) / (ns[s] * nm[m])); }));
      expect(mean).toBeCloseTo(mi, 9);
      expect(mean).toBeGreaterThan(-1e-9);
      expect(mean).toBeLessThan(Math.log(3) + 1e-9);
    }));
    // Pooling: every observation sends "x" for sure — nothing. Separating over 4: log 4 each.
    const pool = [0, 1, 2, 3].map((s) => ({ groupId: s, seed: s, trajectories: [traj(s, 'x', [0], 0)] }));
    expect(informationBonus(pool, 1).map((g) => g.trajectories[0].reward)).toEqual([0, 0, 0, 0]);
    const sep = [0, 1, 2, 3].map((s) => ({ groupId: s, seed: s, trajectories: [traj(s, 'wxyz'[s], [0], 0)] }));
    for (const g of informationBonus(sep, 1)) expect(g.trajectories[0].reward).toBeCloseTo(Math.log(4), 12);
  });

  it('the posterior part pays p̂(s | m): the share of the like messages of the step sent on what the seat saw', () => {
    /** A one-action trajectory whose prompt is the observation `s` (one token). */
    const seen = (s: number, action: string, reward = 0): Trajectory => ({ ...traj(s, action, [-1], reward), tokensT: [s, 1] });
    // Partial pooling: targets 1, 2, 3 send "a", target 0 sends "o" — and target 1 once sends "e".
    const groups: TrajectoryGroup[] = [0, 1, 2, 3].map((s) => ({
      groupId: s, seed: s, trajectories: [seen(s, s === 0 ? 'o' : 'a', 1), seen(s, s === 0 ? 'o' : 'a'), seen(s, s === 1 ? 'e' : s === 0 ? 'o' : 'a')],
    }));
    const paid = informationBonus(groups, { posterior: 0.5 }).map((g) => g.trajectories.map((t) => t.reward));
    // "o" names the ring alone (1); "a" is a third each of targets 1–3 (n(1, a) = 2 of 8, n(2, a) = 3 of 8); "e" was sent on target 1 alone (1).
    expect(paid).toEqual([[1.5, 0.5, 0.5], [1 + 0.5 * (2 / 8), 0.5 * (2 / 8), 0.5], [1 + 0.5 * (3 / 8), 0.5 * (3 / 8), 0.5 * (3 / 8)], [1 + 0.5 * (3 / 8), 0.5 * (3 / 8), 0.5 * (3 / 8)]].map((r) => r.map((x) => expect.closeTo(x, 12))));
    // Within target 1's group the lone "e" is paid most: the push out of the pooling.
    expect(paid[1][2]).toBeGreaterThan(paid[1][1]);
    // A code (each message one target) pays 1 for every game, pooling 1/k.
    const code = [0, 1, 2, 3].map((s) => ({ groupId: s, seed: s, trajectories: [seen(s, 'aeio'[s]), seen(s, 'aeio'[s])] }));
    expect(informationBonus(code, { posterior: 1 }).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(new Array(8).fill(1));
    const pool = [0, 1, 2, 3].map((s) => ({ groupId: s, seed: s, trajectories: [seen(s, 'a'), seen(s, 'a')] }));
    expect(informationBonus(pool, { posterior: 1 }).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(new Array(8).fill(0.25));
    // Unreadable messages are not paid and not heard: the posterior is over the readable ones.
    const said = (t: Trajectory) => (t.turns[0].action === '??' ? null : t.turns[0].action);
    const some = [{ groupId: 0, seed: 0, trajectories: [seen(0, 'a'), seen(0, '??')] }, { groupId: 1, seed: 1, trajectories: [seen(1, 'a'), seen(1, 'a')] }];
    expect(informationBonus(some, { posterior: 1 }, said).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual([1 / 3, 0, 2 / 3, 2 / 3].map((x) => expect.closeTo(x, 12)));
    // Earlier steps' actions (steps > 1) count in the shares but are not paid: a step where targets 0
    // and 1 each sent "a" once, after steps where target 0 sent "a" three times and target 1 once.
    const now = [0, 1].map((s) => ({ groupId: s, seed: s, trajectories: [seen(s, 'a')] }));
    const before = [seen(0, 'a'), seen(0, 'a'), seen(0, 'a'), seen(1, 'a')];
    expect(informationBonus(now, { posterior: 1, steps: 3 }, undefined, before).map((g) => g.trajectories.map((t) => t.reward))).toEqual([[4 / 6], [2 / 6]].map((r) => r.map((x) => expect.closeTo(x, 12))));
    expect(informationBonus(now, { posterior: 1 }).map((g) => g.trajectories.map((t) => t.reward))).toEqual([[0.5], [0.5]]);
    // The rarity part too: "a" is 6 of the 7 actions counted (a "b" earlier), so it pays −log(6/7).
    expect(informationBonus(now, { marginal: 1 }, undefined, [...before, seen(1, 'b')])[0].trajectories[0].reward).toBeCloseTo(-Math.log(6 / 7), 12);
    for (const bad of [0, 1.5, -1]) expect(() => informationBonus(now, { posterior: 1, steps: bad })).toThrow(/steps must be an integer ≥ 1/);
    expect(() => informationBonus(now, { steps: 2 })).toThrow(/names no part/);
    expect(bonusSteps({ posterior: 1, steps: 4 })).toBe(4);
    expect(bonusSteps({ posterior: 1 })).toBe(1);
    expect(bonusSteps(0.3)).toBe(1);
    // A number weighs rarity and sureness alike and leaves the posterior out, as before.
    expect(informationBonus(groups, 0.3).flatMap((g) => g.trajectories.map((t) => t.reward))).toEqual(informationBonus(groups, { marginal: 0.3, conditional: 0.3, posterior: 0 }).flatMap((g) => g.trajectories.map((t) => t.reward)));
  });
});
