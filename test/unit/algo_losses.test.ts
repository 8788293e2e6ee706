import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { datumFromSequence, type Datum } from '../../src/algorithms/datum.ts';
import { crossEntropyLoss, dpoLoss, grpoLoss, importanceSamplingLoss, ppoLoss, valueLossSpec } from '../../src/algorithms/loss_spec.ts';
import { clippedSurrogate, clippedValueLoss, grpoTerm, POLICY_TERMS } from '../../src/algorithms/loss_terms.ts';
import { aggregationScales, policyLossReference } from '../../src/algorithms/losses.ts';
import { ppoDatums, valueLossReference } from '../../src/algorithms/ppo.ts';
import { ConfigError } from '../../src/errors.ts';
import { makeTraj, worked } from './algo_fixtures.ts';

const ln = Math.log;

describe('loss specs', () => {
  it('fill documented defaults and are frozen plain data', () => {
    expect(ppoLoss()).toEqual({ kind: 'ppo', clipLow: 0.2, clipHigh: 0.2, entropyCoef: 0, aggregation: 'token_mean' });
    expect(grpoLoss()).toEqual({ kind: 'grpo', clipLow: 0.2, clipHigh: 0.2, klBeta: 0.04, entropyCoef: 0, aggregation: 'sequence_mean' });
    expect(crossEntropyLoss()).toEqual({ kind: 'cross_entropy', aggregation: 'token_mean' });
    expect(importanceSamplingLoss({ aggregation: 'sequence_mean' })).toEqual({ kind: 'importance_sampling', aggregation: 'sequence_mean' });
    expect(dpoLoss()).toEqual({ kind: 'dpo', beta: 0.1 });
    expect(ppoLoss({ dualClip: 3, value: valueLossSpec() })).toMatchObject({ dualClip: 3, value: { clip: 0.2, coef: 0.5 } });
    expect(valueLossSpec({ clip: null })).toEqual({ clip: null, coef: 0.5 });
    expect(Object.isFrozen(ppoLoss())).toBe(true);
    expect(structuredClone(grpoLoss())).toEqual(grpoLoss());
  });
  it('reject bad hyperparameters with ConfigError naming the field', () => {
    expect(() => ppoLoss({ clipLow: -0.1 })).toThrow(ConfigError);
    expect(() => ppoLoss({ clipLow: 1 })).toThrow(/clipLow/);
    expect(() => ppoLoss({ dualClip: 0.5 })).toThrow(/dualClip/);
    expect(() => grpoLoss({ klBeta: Number.NaN })).toThrow(/klBeta/);
    expect(() => dpoLoss({ beta: 0 })).toThrow(/beta/);
    expect(() => crossEntropyLoss({ aggregation: 'mean' as never })).toThrow(/aggregation/);
  });
});

describe('aggregation scales', () => {
  it('token_mean weighs every masked token 1/N; sequence_mean 1/(n_s·S)', () => {
    const masks = [[1, 1, 0], [1, 0, 0, 0]];
    expect(aggregationScales(masks, 'token_mean')).toEqual([[1 / 3, 1 / 3, 0], [1 / 3, 0, 0, 0]]);
    expect(aggregationScales(masks, 'sequence_mean')).toEqual([[0.25, 0.25, 0], [0.5, 0, 0, 0]]);
    // a sequence with no masked token does not count as a sequence
    expect(aggregationScales([[1], [0, 0]], 'sequence_mean')).toEqual([[1], [0, 0]]);
  });
});

describe('per-token objectives (hand-computed)', () => {
  const spec = { clipLow: 0.1, clipHigh: 0.1 };
  it('PPO clip: ρ = 1.2 with ε = 0.1', () => {
    const [lp, old] = [ln(0.6), ln(0.5)]; // ρ = 1.2
    // A = 1: min(1.2, 1.1) = 1.1 → clipped, no gradient
    const up = clippedSurrogate(spec, lp, old, 1);
    expect([up.loss, up.g, up.clipped]).toEqual([-1.1, 0, true]);
    // A = −1: min(−1.2, −1.1) = −1.2 → unclipped, dℓ/dlp = −ρA = 1.2
    const down = clippedSurrogate(spec, lp, old, -1);
    expect(down.loss).toBeCloseTo(1.2, 12);
    expect(down.g).toBeCloseTo(1.2, 12);
    expect(down.clipped).toBe(false);
    // inside the range: ρ = 1.05, A = 2 → ℓ = −2.1, g = −2.1
    const inside = clippedSurrogate(spec, ln(1.05), 0, 2);
    expect(inside.loss).toBeCloseTo(-2.1, 12);
    expect(inside.g).toBeCloseTo(-2.1, 12);
  });
  it('PPO dual clip bounds the objective at c·A for negative advantages', () => {
    // ρ = 5, A = −1, c = 3: min(−5, −1.1) = −5 < c·A = −3 → ℓ = 3, no gradient
    const far = clippedSurrogate({ ...spec, dualClip: 3 }, ln(5), 0, -1);
    expect(far.loss).toBeCloseTo(3, 12);
    expect([far.g, far.clipped]).toEqual([0, true]);
    // ρ = 2: −2 > −3 → unclipped, ℓ = 2, g = 2
    const near = clippedSurrogate({ ...spec, dualClip: 3 }, ln(2), 0, -1);
    expect(near.loss).toBeCloseTo(2, 12);
    expect(near.g).toBeCloseTo(2, 12);
  });
  it('GRPO adds β·k3 with k3 = e^{ref−lp} − (ref−lp) − 1', () => {
    // lp = old = ln 0.5 (ρ = 1), ref = ln 0.25, A = 1, β = 0.1:
    //   d = ln 0.5, k3 = 0.5 − ln 0.5 − 1 = 0.193147; ℓ = −1 + 0.0193147; g = −1 + 0.1·(1 − 0.5) = −0.95
    const t = grpoTerm({ ...spec, klBeta: 0.1 }, ln(0.5), ln(0.5), 1, ln(0.25));
    expect(t.k3).toBeCloseTo(0.193147, 6);
    expect(t.loss).toBeCloseTo(-0.9806853, 6);
    expect(t.g).toBeCloseTo(-0.95, 12);
  });
  it('importance sampling ℓ = −ρA and cross-entropy ℓ = −lp', () => {
    const is = POLICY_TERMS.importance_sampling(importanceSamplingLoss(), ln(0.6), ln(0.5), 0.5, 0);
    expect(is.loss).toBeCloseTo(-0.6, 12);
    expect(is.g).toBeCloseTo(-0.6, 12);
    expect(POLICY_TERMS.cross_entropy(crossEntropyLoss(), -2.5, 0, 0, 0)).toMatchObject({ loss: 2.5, g: -1 });
  });
});

const seq = (mask: number[], old: number[], adv: number[], ref?: number[]): Datum =>
  datumFromSequence(0, [0, ...mask.map((_, i) => i + 1)], [0, ...mask], [0, ...old], { advantagesT: adv, ...(ref ? { refLogprobsT: ref } : {}) });

describe('policyLossReference', () => {
  it('aggregates a two-sequence importance-sampling batch by token mean (hand-computed)', () => {
    // seq A: tokens with ρ = 1 (lp = old) and A = [1, 2]; seq B: one token ρ = 1, A = −4; masked token ignored.
    // ℓ = −ρA = [−1, −2] and [4]; token_mean over 3 tokens: (−1 − 2 + 4)/3 = 1/3; g = −ρA/3
    const a = seq([1, 1], [-1, -1], [1, 2]);
    const b = seq([1, 0], [-2, 0], [-4, 9]);
    const r = policyLossReference(importanceSamplingLoss(), [{ datum: a, logprobsT: [-1, -1] }, { datum: b, logprobsT: [-2, -7] }]);
    expect(r.loss).toBeCloseTo(1 / 3, 12);
    expect(r.dlogprobsST[0]).toEqual([-1 / 3, -2 / 3]);
    expect(r.dlogprobsST[1][0]).toBeCloseTo(4 / 3, 12);
    expect(r.dlogprobsST[1][1]).toBe(0);
    expect(r.stats).toEqual({ clipFraction: 0, approxKl: 0, refKl: 0, tokens: 3 });
    // sequence_mean: (mean(−1, −2) + 4)/2 = 1.25
    expect(policyLossReference(importanceSamplingLoss({ aggregation: 'sequence_mean' }), [{ datum: a, logprobsT: [-1, -1] }, { datum: b, logprobsT: [-2, -7] }]).loss).toBeCloseTo(1.25, 12);
  });
  it('adds the entropy bonus and reports clip fraction and KL', () => {
    // one token, ρ = 1.2 (clipped at 1.1 for A = 1): ℓ = −1.1 − 0.01·2 = −1.12; dℓ/dH = −0.01
    const d = seq([1, 1], [ln(0.5), ln(0.5)], [1, -1]);
    const r = policyLossReference(ppoLoss({ clipLow: 0.1, clipHigh: 0.1, entropyCoef: 0.01 }), [{ datum: d, logprobsT: [ln(0.6), ln(0.5)], entropyT: [2, 2] }]);
    // token 2: ρ = 1, A = −1 → ℓ = 1; mean of (−1.1 − 0.02) and (1 − 0.02) = −0.07
    expect(r.loss).toBeCloseTo(-0.07, 12);
    expect(r.dentropyST[0]).toEqual([-0.005, -0.005]);
    expect(r.stats.clipFraction).toBe(0.5);
    expect(r.stats.approxKl).toBeCloseTo((ln(0.5) - ln(0.6)) / 2, 12);
  });
  it('requires reference log-probs for GRPO and matching lengths', () => {
    expect(() => policyLossReference(grpoLoss(), [{ datum: seq([1], [0], [1]), logprobsT: [0] }])).toThrow(/refLogprobsT/);
    expect(() => policyLossReference(ppoLoss(), [{ datum: seq([1], [0], [1]), logprobsT: [0, 0] }])).toThrow(/1 targets but 2 logprobs/);
  });
  it('its gradient matches finite differences for every objective (fast-check)', () => {
    const specs = [crossEntropyLoss(), importanceSamplingLoss(), ppoLoss({ clipLow: 0.2, clipHigh: 0.3, dualClip: 3 }), grpoLoss({ klBeta: 0.1 }), ppoLoss({ aggregation: 'sequence_mean' })];
    const tokenArb = fc.record({ m: fc.constantFrom(0, 1, 1), old: fc.double({ min: -3, max: -0.1, noNaN: true }), d: fc.double({ min: -0.6, max: 0.6, noNaN: true }), a: fc.double({ min: -2, max: 2, noNaN: true }), ref: fc.double({ min: -3, max: -0.1, noNaN: true }) });
    fc.assert(
      fc.property(fc.constantFrom(...specs), fc.array(fc.array(tokenArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 }), (spec, seqs) => {
        const inputs = seqs.map((toks) => ({
          datum: seq(toks.map((x) => x.m), toks.map((x) => x.old), toks.map((x) => x.a), toks.map((x) => x.ref)),
          logprobsT: toks.map((x) => x.old + x.d),
        }));
        const r = policyLossReference(spec, inputs);
        const h = 1e-6;
        return inputs.every((inp, s) =>
          inp.logprobsT.every((_, t) => {
            const bump = (e: number) => policyLossReference(spec, inputs.map((x, k) => (k === s ? { ...x, logprobsT: x.logprobsT.map((v, j) => (j === t ? v + e : v)) } : x))).loss;
            const fd = (bump(h) - bump(-h)) / (2 * h);
            // clip boundaries are kinks: skip the rare token sitting within h of one
            return Math.abs(fd - r.dlogprobsST[s][t]) < 1e-5 || Math.abs(bump(h) - 2 * r.loss + bump(-h)) > 1e-9;
          }),
        );
      }),
      { numRuns: 200 },
    );
  });
});

describe('PPO critic', () => {
  it('clipped value loss (hand-computed)', () => {
    // V 1.5, V_old 1, R 2, ε 0.2: (V−R)² = 0.25; V_c = 1.2, (V_c−R)² = 0.64 → clipped branch, 0.32, no gradient
    expect(clippedValueLoss(1.5, 1, 2, 0.2)).toEqual({ loss: 0.32000000000000006, dv: 0, clipped: true });
    // V 0.5: (V−R)² = 2.25 vs V_c = 0.8 → 1.44 → unclipped 1.125, dℓ/dV = −1.5
    expect(clippedValueLoss(0.5, 1, 2, 0.2)).toEqual({ loss: 1.125, dv: -1.5, clipped: false });
    expect(clippedValueLoss(0.5, 1, 2, null)).toEqual({ loss: 1.125, dv: -1.5, clipped: false });
  });
  it('GAE datums from critic values: returns are value targets (γ = λ = 1, no whitening)', () => {
    // worked trajectory: policy targets 2, 3, 5 with rewards [0, 0.5, 1]; values 0.2 each
    // returns-to-go [1.5, 1.5, 1] → advantages R − V = [1.3, 1.3, 0.8]
    const values = [9, 9, 0.2, 0.2, 9, 0.2];
    const [d] = ppoDatums([worked], [values], { gamma: 1, lambda: 1, normalizeAdvantages: false });
    expect(d.returnsT).toEqual([0, 0, 1.5, 1.5, 0, 1]);
    d.advantagesT.forEach((a, t) => expect(a).toBeCloseTo([0, 0, 1.3, 1.3, 0, 0.8][t], 12));
    expect(d.oldValuesT).toEqual([0, 0, 0.2, 0.2, 0, 0.2]);
    // whitened: mean 0 and unit std over policy tokens
    const [w] = ppoDatums([worked], [values], { gamma: 1, lambda: 1 });
    const pol = w.advantagesT.filter((_, t) => w.lossMaskT[t]);
    expect(pol.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 9);
    expect(Math.sqrt(pol.reduce((a, b) => a + b * b, 0) / 3)).toBeCloseTo(1, 6);
    expect(() => ppoDatums([worked], [[1]])).toThrow(/6 targets but 1 values/);
  });
  it('value loss over sequences: coef · token mean, gradient on masked tokens only', () => {
    const traj = makeTraj({ tokensT: [1, 2, 3], policyMaskT: [0, 1, 1], turns: [{ actionStart: 1, actionEnd: 3, reward: 2 }] });
    const [d] = ppoDatums([traj], [[1, 1]], { gamma: 1, lambda: 1, normalizeAdvantages: false }); // returns [2, 2], old values [1, 1]
    // new values [0.5, 1.5], ε 0.2: token 0 → 1.125, dv −1.5; token 1 → 0.32 clipped; coef 0.5, mean over 2
    const r = valueLossReference(valueLossSpec({ clip: 0.2, coef: 0.5 }), [{ datum: d, valuesT: [0.5, 1.5] }]);
    expect(r.loss).toBeCloseTo(0.5 * (1.125 + 0.32) / 2, 12);
    expect(r.dvaluesST).toEqual([[0.5 * -1.5 / 2, 0]]);
    expect(r.clipFraction).toBe(0.5);
  });
});
