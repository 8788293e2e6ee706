import { describe, expect, it } from 'vitest';
import { EMPTY_BASELINE } from '../../src/algorithms/advantages.ts';
import { broadcastAdvantage, datumFromSequence, tokenRewardsT, trajectoryToDatum } from '../../src/algorithms/datum.ts';
import { grpoDatums } from '../../src/algorithms/grpo.ts';
import { reinforceDatums } from '../../src/algorithms/reinforce.ts';
import { rlooDatums } from '../../src/algorithms/rloo.ts';
import { sftDatums, sftDatumsFromPairs } from '../../src/algorithms/sft.ts';
import { InvalidInputError } from '../../src/env/errors.ts';
import { replayDemonstrations } from '../../src/env/demos.ts';
import { guessNumberDemonstrations, guessNumberEnv } from '../../src/env/envs/guess_number.ts';
import type { TrajectoryGroup } from '../../src/env/types.ts';
import { isPlainData } from '../../src/util/freeze.ts';
import { Rng } from '../../src/util/rng.ts';
import { makeTraj, simpleTraj, worked } from './algo_fixtures.ts';
import { tok } from './env_fakes.ts';

describe('trajectory → datum', () => {
  it('shifts tokens into inputs/targets and the policy mask onto targets', () => {
    // worked: tokens [bos p1 p2 a1 a2 o1 a3], mask [0 0 0 1 1 0 1]
    const d = trajectoryToDatum(worked, 7);
    expect(d.sequenceId).toBe(7);
    expect(d.inputsT).toEqual([257, 10, 11, 20, 21, 30]);
    expect(d.targetsT).toEqual([10, 11, 20, 21, 30, 22]);
    expect(d.lossMaskT).toEqual([0, 0, 1, 1, 0, 1]);
    expect(d.oldLogprobsT).toEqual([0, 0, -0.1, -0.2, 0, -0.3]);
    expect(d.advantagesT).toEqual([0, 0, 0, 0, 0, 0]);
    expect('returnsT' in d || 'refLogprobsT' in d || 'pair' in d).toBe(false);
    expect(Object.isFrozen(d) && Object.isFrozen(d.targetsT)).toBe(true);
    expect(isPlainData(d) && structuredClone(d)).toEqual(d);
  });
  it('places each turn reward on the target of its last action token', () => {
    // turn 0 ends at token 4 → target 3; turn 1 ends at token 6 → target 5
    expect(tokenRewardsT(worked)).toEqual([0, 0, 0, 0.5, 0, 1]);
    // reward earned before acting (multi-agent) goes on the first policy target; sum = reward
    const early = makeTraj({ tokensT: [1, 2, 3, 4], policyMaskT: [0, 0, 1, 1], turns: [{ actionStart: 2, actionEnd: 4, reward: 1 }], reward: 0.75 });
    expect(tokenRewardsT(early)).toEqual([0, -0.25, 1]);
    // an empty action's reward goes to the closest earlier policy target
    const empty = makeTraj({ tokensT: [1, 2, 3, 4], policyMaskT: [0, 1, 0, 0], turns: [{ actionStart: 1, actionEnd: 2, reward: 0 }, { actionStart: 4, actionEnd: 4, reward: 2 }] });
    expect(tokenRewardsT(empty)).toEqual([2, 0, 0]);
  });
  it('broadcasts a scalar advantage over policy targets', () => {
    expect(broadcastAdvantage(worked, 2)).toEqual([0, 0, 2, 2, 0, 2]);
  });
  it('validates lengths', () => {
    expect(() => datumFromSequence(0, [1], [0], [0])).toThrow(/at least 2 tokens/);
    expect(() => datumFromSequence(0, [1, 2], [0], [0, 0])).toThrow(InvalidInputError);
    expect(() => trajectoryToDatum(worked, 0, { advantagesT: [1, 2] })).toThrow(/advantagesT has 2 entries, expected 6/);
  });
});

const group = (groupId: number, rewards: number[]): TrajectoryGroup => ({ groupId, seed: groupId, trajectories: rewards.map((r, i) => simpleTraj(r, groupId * 10 + i, 2, groupId)) });

describe('outcome-reward datum builders', () => {
  it('GRPO puts each attempt’s group-relative advantage on its policy tokens', () => {
    // group 0 rewards [1, 0, 0, 1] → ±0.866025 (sample std); group 1 [1] → 0
    const ds = grpoDatums([group(0, [1, 0, 0, 1]), group(1, [1])]);
    expect(ds.map((d) => d.sequenceId)).toEqual([0, 1, 2, 3, 4]);
    // simpleTraj: 2 prompt tokens, 2 policy tokens → targets mask [0, 1, 1]
    expect(ds[0].lossMaskT).toEqual([0, 1, 1]);
    expect(ds[0].advantagesT[0]).toBe(0);
    expect(ds[0].advantagesT[1]).toBeCloseTo(0.866025, 5);
    expect(ds[1].advantagesT[2]).toBeCloseTo(-0.866025, 5);
    expect(ds[4].advantagesT).toEqual([0, 0, 0]);
    expect(grpoDatums([group(0, [1, 0, 0, 1])], { normalizeStd: false })[1].advantagesT).toEqual([0, -0.5, -0.5]);
  });
  it('GRPO can skip uniform groups and attach reference log-probs', () => {
    const ds = grpoDatums([group(0, [1, 1]), group(1, [0, 1])], { skipUniformGroups: true, refLogprobs: () => [-1, -2, -3], firstSequenceId: 5 });
    expect(ds.map((d) => d.sequenceId)).toEqual([5, 6]);
    expect(ds[0].refLogprobsT).toEqual([-1, -2, -3]);
  });
  it('RLOO and REINFORCE use their own baselines', () => {
    const r = rlooDatums([group(0, [2, 4, 9])]);
    expect(r.map((d) => d.advantagesT[1])).toEqual([-4.5, -1.5, 6]);
    // REINFORCE across groups: first batch baseline 0 → Â = r; new baseline = mean(1, 3) = 2
    const first = reinforceDatums([group(0, [1]), group(1, [3])], EMPTY_BASELINE);
    expect(first.datums.map((d) => d.advantagesT[2])).toEqual([1, 3]);
    expect(first.baseline).toEqual({ value: 2, count: 1 });
    const second = reinforceDatums([group(0, [0, 4])], first.baseline, { momentum: 0.5 });
    expect(second.datums.map((d) => d.advantagesT[2])).toEqual([-2, 2]);
  });
});

describe('SFT datums', () => {
  it('from text pairs: loss on the completion and its eos', () => {
    // tokens [bos, 'a', 'b', 'c', eos] → targets ['a','b','c',eos], mask [0, 0, 1, 1]
    const [d] = sftDatumsFromPairs([{ prompt: 'ab', completion: 'c' }], tok);
    expect(d.inputsT).toEqual([257, 97, 98, 99]);
    expect(d.targetsT).toEqual([97, 98, 99, 258]);
    expect(d.lossMaskT).toEqual([0, 0, 1, 1]);
    const [noEos] = sftDatumsFromPairs([{ prompt: 'ab', completion: 'c' }], tok, { appendEos: false, addBos: false });
    expect([noEos.inputsT, noEos.targetsT, noEos.lossMaskT]).toEqual([[97, 98], [98, 99], [0, 1]]);
  });
  it('from replayed demonstrations: loss exactly on the demonstrated actions', async () => {
    const demos = guessNumberDemonstrations(5, new Rng(3));
    const { trajectories } = await replayDemonstrations(guessNumberEnv(), demos, { tokenizer: tok });
    const ds = sftDatums(trajectories);
    ds.forEach((d, i) => {
      const learned = tok.decode(d.targetsT.filter((_, t) => d.lossMaskT[t]));
      expect(learned).toBe(demos[i].actions.join(''));
    });
  });
});
