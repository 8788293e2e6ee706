import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { datumFromSequence } from '../../src/algorithms/datum.ts';
import { dpoDatums, dpoPairLoss, dpoPairsFromGroups, dpoPairsFromPreferences, dpoReference, sequenceLogprob } from '../../src/algorithms/dpo.ts';
import type { TrajectoryGroup } from '../../src/env/types.ts';
import { simpleTraj } from './algo_fixtures.ts';
import { tok } from './env_fakes.ts';

describe('DPO pair loss', () => {
  it('matches a hand-computed pair', () => {
    // π_c = −10, ref_c = −11, π_r = −12, ref_r = −11, β = 0.1:
    //   chosen reward 0.1·(1) = 0.1, rejected 0.1·(−1) = −0.1, z = 0.2
    //   L = log(1 + e^{−0.2}) = 0.598138869;  σ(−0.2) = 0.450166003;  ∂L/∂π_c = −0.0450166, ∂L/∂π_r = +0.0450166
    const r = dpoPairLoss({ policyChosen: -10, policyRejected: -12, refChosen: -11, refRejected: -11 }, 0.1);
    expect(r.loss).toBeCloseTo(0.598138869, 9);
    expect(r.dPolicyChosen).toBeCloseTo(-0.0450166003, 9);
    expect(r.dPolicyRejected).toBeCloseTo(0.0450166003, 9);
    expect(r.chosenReward).toBeCloseTo(0.1, 12);
    expect(r.rejectedReward).toBeCloseTo(-0.1, 12);
  });
  it('is ln 2 with gradient ∓β/2 when policy equals reference', () => {
    const r = dpoPairLoss({ policyChosen: -5, policyRejected: -7, refChosen: -5, refRejected: -7 }, 0.5);
    expect(r.loss).toBeCloseTo(Math.LN2, 12);
    expect([r.dPolicyChosen, r.dPolicyRejected]).toEqual([-0.25, 0.25]);
  });
  it('stays finite for huge margins and matches finite differences (fast-check)', () => {
    expect(dpoPairLoss({ policyChosen: 0, policyRejected: -1e6, refChosen: 0, refRejected: 0 }, 1).loss).toBe(0);
    expect(dpoPairLoss({ policyChosen: -1e6, policyRejected: 0, refChosen: 0, refRejected: 0 }, 1).loss).toBe(1e6);
    fc.assert(
      fc.property(fc.double({ min: -50, max: 0, noNaN: true }), fc.double({ min: -50, max: 0, noNaN: true }), fc.double({ min: -50, max: 0, noNaN: true }), fc.double({ min: -50, max: 0, noNaN: true }), fc.double({ min: 0.01, max: 1, noNaN: true }), (pc, pr, rc, rr, beta) => {
        const f = (c: number, r: number) => dpoPairLoss({ policyChosen: c, policyRejected: r, refChosen: rc, refRejected: rr }, beta).loss;
        const g = dpoPairLoss({ policyChosen: pc, policyRejected: pr, refChosen: rc, refRejected: rr }, beta);
        const h = 1e-5;
        return Math.abs((f(pc + h, pr) - f(pc - h, pr)) / (2 * h) - g.dPolicyChosen) < 1e-6 && Math.abs((f(pc, pr + h) - f(pc, pr - h)) / (2 * h) - g.dPolicyRejected) < 1e-6;
      }),
    );
  });
  it('sums log-probs over masked tokens only', () => {
    expect(sequenceLogprob([-1, -2, -3], [1, 0, 1])).toBe(-4);
    expect(() => sequenceLogprob([-1], [1, 1])).toThrow(/1 logprobs, 2 mask/);
  });
});

describe('DPO pairs', () => {
  it('from preference data: shared prompt, loss mask on each completion', () => {
    const [p] = dpoPairsFromPreferences([{ prompt: 'Q', chosen: 'yes', rejected: 'no' }], tok, { appendEos: false });
    // chosen tokens [bos, Q, y, e, s] → targets [Q, y, e, s], mask [0, 1, 1, 1]
    expect(p.chosen.lossMaskT).toEqual([0, 1, 1, 1]);
    expect(tok.decode(p.chosen.targetsT.filter((_, t) => p.chosen.lossMaskT[t]))).toBe('yes');
    expect(tok.decode(p.rejected.targetsT.filter((_, t) => p.rejected.lossMaskT[t]))).toBe('no');
    expect([p.chosen.pair, p.rejected.pair]).toEqual([{ id: 0, role: 'chosen' }, { id: 0, role: 'rejected' }]);
    expect([p.chosen.sequenceId, p.rejected.sequenceId]).toEqual([0, 1]);
  });

  it('online: ranks a group by reward and pairs best with worst, outside in', () => {
    // rewards by episode: 0 → 0.2, 1 → 1, 2 → 0, 3 → 1; ranked (ties by id): 1, 3, 0, 2
    // pairs (1 vs 2, margin 1) and (3 vs 0, margin 0.8)
    const g: TrajectoryGroup = { groupId: 0, seed: 0, trajectories: [0.2, 1, 0, 1].map((r, i) => simpleTraj(r, i)) };
    const uniform: TrajectoryGroup = { groupId: 1, seed: 1, trajectories: [1, 1].map((r, i) => simpleTraj(r, 10 + i, 2, 1)) };
    const ids = (ps: ReturnType<typeof dpoPairsFromGroups>) => ps.map((p) => [p.chosen.sequenceId, p.rejected.sequenceId, p.chosen.pair!.id]);
    const pairs = dpoPairsFromGroups([g, uniform]);
    expect(ids(pairs)).toEqual([[0, 1, 0], [2, 3, 1]]);
    expect(pairs.map((p) => [p.chosen.targetsT.length, p.rejected.lossMaskT.reduce((a, b) => a + b)])).toEqual([[3, 2], [3, 2]]);
    expect(ids(dpoPairsFromGroups([g], { minMargin: 0.9 }))).toEqual([[0, 1, 0]]);
    const withRef = dpoPairsFromGroups([g], { refLogprobs: () => [0, -1, -1] });
    expect(withRef[0].chosen.refLogprobsT).toEqual([0, -1, -1]);
    expect(dpoDatums(pairs).map((d) => d.pair!.role)).toEqual(['chosen', 'rejected', 'chosen', 'rejected']);
  });

  it('dpoReference: mean over pairs, each pair’s gradient spread over its masked tokens', () => {
    const mk = (id: number, role: 'chosen' | 'rejected', seq: number, ref: number[]) =>
      datumFromSequence(seq, [0, 1, 2, 3], [0, 0, 1, 1], [0, 0, 0, 0], { pair: { id, role }, refLogprobsT: ref });
    // pair 0: policy sums −3 (chosen) and −7 (rejected); reference sums −4 and −6 → the same numbers as
    // (π_c − r_c) − (π_r − r_r) = 1 − (−1) = 2 → z = 0.2 at β = 0.1 (see the hand-computed pair above)
    const c0 = mk(0, 'chosen', 0, [9, -2, -2]);
    const r0 = mk(0, 'rejected', 1, [9, -3, -3]);
    // pair 1: policy = reference → L = ln 2, gradients ∓β/2
    const c1 = mk(1, 'chosen', 2, [0, -1, -1]);
    const r1 = mk(1, 'rejected', 3, [0, -1, -1]);
    const out = dpoReference(0.1, [
      { datum: c0, logprobsT: [5, -1, -2] }, { datum: r0, logprobsT: [5, -3, -4] },
      { datum: c1, logprobsT: [0, -1, -1] }, { datum: r1, logprobsT: [0, -1, -1] },
    ]);
    expect(out.loss).toBeCloseTo((0.598138869 + Math.LN2) / 2, 9);
    expect(out.dlogprobsST[0][0]).toBe(0); // masked position
    expect(out.dlogprobsST[0][1]).toBeCloseTo(-0.0450166003 / 2, 9);
    expect(out.dlogprobsST[1][2]).toBeCloseTo(0.0450166003 / 2, 9);
    expect(out.dlogprobsST[3]).toEqual([0, 0.025, 0.025]);
    expect(out.accuracy).toBe(0.5);
    expect(out.meanMargin).toBeCloseTo(0.1, 12);
    expect(() => dpoReference(0.1, [{ datum: c0, logprobsT: [0, 0, 0] }])).toThrow(/missing a side/);
  });
});
