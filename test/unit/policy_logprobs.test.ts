// withPolicyLogprobs (src/runtime/train_step.ts): a group's trajectories get the client's log-probs
// of their own tokens, token-aligned (the log-prob of token i is the forward's of target i − 1), 0
// off the policy tokens, whatever the packing's rows and order; the rest of each trajectory and the
// groups' shape are unchanged. The client here is a fake whose log-prob of a target is a function of
// the target id alone, so the alignment is checked exactly.
import { describe, expect, it } from 'vitest';
import type { PackedBatch } from '../../src/algorithms/pack.ts';
import type { Trajectory, TrajectoryGroup } from '../../src/env/types.ts';
import type { TrainingClient } from '../../src/runtime/clients.ts';
import { withPolicyLogprobs } from '../../src/runtime/train_step.ts';

const lpOf = (target: number) => -(target + 1) / 1000;

const fake = { computeLogprobs: (b: PackedBatch) => Promise.resolve({ logprobsBT: Float32Array.from(b.targetsBT, (t) => lpOf(t)) }) } as unknown as TrainingClient;

function traj(episodeId: number, tokensT: number[], policyMaskT: number[]): Trajectory {
  return {
    envName: 'x', agentId: 'a', seed: 1, groupId: 0, episodeId, player: 0, tokensT, promptLength: policyMaskT.indexOf(1),
    policyMaskT, logprobsT: policyMaskT.map((m) => (m ? -9 : 0)), turns: [], reward: episodeId, endReason: 'done',
  };
}

describe('withPolicyLogprobs', () => {
  it('replaces the sampled log-probs with the client\'s, token-aligned, 0 off the policy tokens', async () => {
    const groups: TrajectoryGroup[] = [
      { groupId: 0, trajectories: [traj(0, [5, 6, 7, 97], [0, 0, 0, 1]), traj(1, [5, 6, 7, 101, 3, 9], [0, 0, 0, 1, 0, 1])] },
      { groupId: 1, trajectories: [traj(2, [8, 111], [0, 1])] },
    ] as unknown as TrajectoryGroup[];
    const got = await withPolicyLogprobs(fake, groups, { rows: 2, maxSeqLen: 64, padId: 0 });
    expect(got.map((g) => g.trajectories.length)).toEqual([2, 1]);
    got.flatMap((g) => g.trajectories).forEach((t, n) => {
      const was = groups.flatMap((g) => g.trajectories)[n];
      expect(t.logprobsT).toHaveLength(was.tokensT.length);
      t.logprobsT.forEach((lp, i) => expect(lp).toBeCloseTo(was.policyMaskT[i] ? lpOf(was.tokensT[i]) : 0, 7));
      expect({ ...t, logprobsT: was.logprobsT }).toEqual(was);
    });
    expect(await withPolicyLogprobs(fake, [], { rows: 2, maxSeqLen: 64, padId: 0 })).toEqual([]);
  });
});
