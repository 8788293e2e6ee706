import { describe, expect, it } from 'vitest';
import {
  EMPTY_BASELINE, gae, groupRelativeAdvantages, maskedGae, reinforceAdvantages, rlooAdvantages,
} from '../../src/algorithms/advantages.ts';
import { InvalidInputError } from '../../src/env/errors.ts';

const close = (got: readonly number[], want: readonly number[], digits = 10) => {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(g).toBeCloseTo(want[i], digits));
};

describe('GAE', () => {
  it('matches a hand-computed example (γ 0.9, λ 0.8)', () => {
    // rewards [0, 0, 1], values [0.5, 0.6, 0.7], episode ended (V_3 = 0):
    //   δ2 = 1 + 0.9·0 − 0.7 = 0.3                  Â2 = 0.3
    //   δ1 = 0 + 0.9·0.7 − 0.6 = 0.03               Â1 = 0.03 + 0.72·0.3 = 0.246
    //   δ0 = 0 + 0.9·0.6 − 0.5 = 0.04               Â0 = 0.04 + 0.72·0.246 = 0.21712
    //   returns Â + V = [0.71712, 0.846, 1.0]
    const { advantagesT, returnsT } = gae([0, 0, 1], [0.5, 0.6, 0.7], { gamma: 0.9, lambda: 0.8 });
    close(advantagesT, [0.21712, 0.246, 0.3]);
    close(returnsT, [0.71712, 0.846, 1.0]);
  });
  it('is Monte Carlo minus the value at λ = 1, γ = 1, and one-step TD at λ = 0', () => {
    // returns-to-go of [1, 2, 3] are [6, 5, 3]
    close(gae([1, 2, 3], [1, 1, 1], { gamma: 1, lambda: 1 }).advantagesT, [5, 4, 2]);
    close(gae([1, 2, 3], [1, 1, 1], { gamma: 1, lambda: 1 }).returnsT, [6, 5, 3]);
    // λ = 0: Â_t = r_t + γV_{t+1} − V_t = [1+0.5−1, 2+0.5−1, 3+0−1]
    close(gae([1, 2, 3], [1, 1, 1], { gamma: 0.5, lambda: 0 }).advantagesT, [0.5, 1.5, 2]);
  });
  it('bootstraps a truncated episode from the given value', () => {
    // δ = 1 + 0.5·2 − 0.5 = 1.5
    close(gae([1], [0.5], { gamma: 0.5, lambda: 0.9 }, 2).advantagesT, [1.5]);
  });
  it('runs over policy positions only when masked', () => {
    // policy steps at 1, 2, 4 with values 0.5 and rewards [0, 0, 1], γ = λ = 1 → Â = 0.5 each, R = 1
    const r = maskedGae([0, 0, 0, 0, 1], [9, 0.5, 0.5, 9, 0.5], [0, 1, 1, 0, 1], { gamma: 1, lambda: 1 });
    close(r.advantagesT, [0, 0.5, 0.5, 0, 0.5]);
    close(r.returnsT, [0, 1, 1, 0, 1]);
    expect(() => maskedGae([1, 0], [0, 0], [0, 1], { gamma: 1, lambda: 1 })).toThrow(/reward 1 at masked position 0/);
  });
  it('rejects mismatched lengths, bad γ/λ and non-finite inputs', () => {
    expect(() => gae([1], [1, 2], { gamma: 1, lambda: 1 })).toThrow(InvalidInputError);
    expect(() => gae([1], [1], { gamma: 1.5, lambda: 1 })).toThrow(/gamma and lambda/);
    expect(() => gae([Number.NaN], [1], { gamma: 1, lambda: 1 })).toThrow(/rewardsT\[0\] is NaN/);
  });
});

describe('group-relative advantages (GRPO)', () => {
  it('normalizes by the sample std', () => {
    // [1, 0, 0, 1]: mean 0.5, sample std √(4·0.25/3) = 0.57735 → ±0.5/0.57735 = ±0.866025
    close(groupRelativeAdvantages([1, 0, 0, 1]), [0.866025, -0.866025, -0.866025, 0.866025], 5);
    // [2, 4, 9]: mean 5, centered [−3, −1, 4], var (9+1+16)/2 = 13, std 3.605551
    close(groupRelativeAdvantages([2, 4, 9], { eps: 0 }), [-0.832050, -0.277350, 1.109400], 5);
  });
  it('only centers without std normalization (Dr. GRPO)', () => {
    close(groupRelativeAdvantages([1, 0, 0, 1], { normalizeStd: false }), [0.5, -0.5, -0.5, 0.5]);
  });
  it('gives 0 to uniform groups and single attempts, and nothing for an empty group', () => {
    close(groupRelativeAdvantages([1, 1, 1]), [0, 0, 0]);
    close(groupRelativeAdvantages([3]), [0]);
    expect(groupRelativeAdvantages([])).toEqual([]);
  });
});

describe('RLOO', () => {
  it('subtracts the mean of the other attempts', () => {
    // [1, 0, 0, 1]: Â0 = 1 − (0+0+1)/3 = 2/3, Â1 = 0 − (1+0+1)/3 = −2/3
    close(rlooAdvantages([1, 0, 0, 1]), [2 / 3, -2 / 3, -2 / 3, 2 / 3]);
    // [2, 4, 9]: 2 − 6.5, 4 − 5.5, 9 − 3
    close(rlooAdvantages([2, 4, 9]), [-4.5, -1.5, 6]);
    close(rlooAdvantages([5]), [0]);
  });
  it('equals G/(G−1) times the centered reward', () => {
    const r = [0.3, 0.9, 0.1, 0.5, 0.7];
    const m = r.reduce((a, b) => a + b) / r.length;
    close(rlooAdvantages(r), r.map((x) => (5 / 4) * (x - m)));
  });
});

describe('REINFORCE with a moving-average baseline', () => {
  it('uses the baseline from before the batch, then updates it', () => {
    // batch 1: no baseline yet → Â = r; b := mean = 2
    const s1 = reinforceAdvantages([1, 3], EMPTY_BASELINE, 0.9);
    close(s1.advantagesN, [1, 3]);
    expect(s1.baseline).toEqual({ value: 2, count: 1 });
    // batch 2: Â = r − 2; b = 0.9·2 + 0.1·2 = 2
    const s2 = reinforceAdvantages([0, 4], s1.baseline, 0.9);
    close(s2.advantagesN, [-2, 2]);
    expect(s2.baseline.value).toBeCloseTo(2, 12);
    // batch 3: Â = r − 2; b = 0.9·2 + 0.1·5 = 2.3
    const s3 = reinforceAdvantages([5, 5], s2.baseline, 0.9);
    close(s3.advantagesN, [3, 3]);
    expect(s3.baseline).toMatchObject({ count: 3 });
    expect(s3.baseline.value).toBeCloseTo(2.3, 12);
  });
  it('leaves the baseline alone for an empty batch and rejects bad momentum', () => {
    expect(reinforceAdvantages([], EMPTY_BASELINE).baseline).toBe(EMPTY_BASELINE);
    expect(() => reinforceAdvantages([1], EMPTY_BASELINE, 1)).toThrow(/momentum/);
  });
});
