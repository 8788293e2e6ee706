// Hand-built trajectories for algorithm tests (frozen plain data, like rollouts produce).
import type { Trajectory, Turn } from '../../src/env/types.ts';
import { deepFreeze } from '../../src/util/freeze.ts';

export function makeTraj(o: {
  tokensT: number[];
  policyMaskT: number[];
  logprobsT?: number[];
  turns?: { actionStart: number; actionEnd: number; reward: number }[];
  reward?: number;
  groupId?: number;
  episodeId?: number;
  player?: number;
}): Trajectory {
  const turns: Turn[] = (o.turns ?? []).map((t) => ({ kind: 'env', action: '', observation: '', info: {}, ...t }));
  return deepFreeze({
    envName: 'fixture',
    agentId: 'agent',
    seed: 1,
    groupId: o.groupId ?? 0,
    episodeId: o.episodeId ?? 0,
    player: o.player ?? 0,
    tokensT: o.tokensT,
    promptLength: o.policyMaskT.indexOf(1),
    policyMaskT: o.policyMaskT,
    logprobsT: o.logprobsT ?? o.policyMaskT.map((m) => (m ? -0.5 : 0)),
    turns,
    reward: o.reward ?? turns.reduce((s, t) => s + t.reward, 0),
    endReason: 'done',
  });
}

/**
 * The worked example used across tests:
 *   index    0    1    2    3    4    5    6
 *   token   bos  p1   p2   a1   a2   o1   a3
 *   mask     0    0    0    1    1    0    1
 *   logprob  0    0    0  −0.1 −0.2   0  −0.3
 *   turn 0 = tokens [3,5) reward 0.5; turn 1 = tokens [6,7) reward 1
 */
export const worked = makeTraj({
  tokensT: [257, 10, 11, 20, 21, 30, 22],
  policyMaskT: [0, 0, 0, 1, 1, 0, 1],
  logprobsT: [0, 0, 0, -0.1, -0.2, 0, -0.3],
  turns: [{ actionStart: 3, actionEnd: 5, reward: 0.5 }, { actionStart: 6, actionEnd: 7, reward: 1 }],
});

/** A one-turn trajectory with `n` policy tokens after a 2-token prompt and the given reward. */
export function simpleTraj(reward: number, episodeId: number, n = 2, groupId = 0): Trajectory {
  const tokensT = [257, 1, ...Array.from({ length: n }, (_, i) => 40 + i)];
  const policyMaskT = [0, 0, ...new Array(n).fill(1)];
  return makeTraj({ tokensT, policyMaskT, turns: [{ actionStart: 2, actionEnd: 2 + n, reward }], episodeId, groupId });
}
