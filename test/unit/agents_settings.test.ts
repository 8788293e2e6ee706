// trainAgents' settings (src/runtime/agents_job.ts) are checked before any GPU work: each mistake a
// ConfigError naming the field.
import { describe, expect, it } from 'vitest';
import { bargainEnv } from '../../src/env/envs/bargain.ts';
import { signalCodeListener, signalEnv, signalRandomSpeaker } from '../../src/env/envs/signal.ts';
import { trainAgents } from '../../src/runtime/agents_job.ts';
import { type AgentsSettings, checkAgentsSettings, seatVocabulary } from '../../src/runtime/agents_settings.ts';
import { poolGroups } from '../../src/runtime/agents_pool.ts';
import { configError } from './config_error.ts';

const ok: AgentsSettings = { env: signalEnv(), seats: [{ name: 'speaker' }, { name: 'listener', algo: 'rloo', lr: 0.01 }] };
const fieldOf = (patch: object) => configError(() => checkAgentsSettings({ ...ok, ...patch } as AgentsSettings)).field;

describe('trainAgents settings', () => {
  it('takes a share of each step’s groups for the opponent pool: share · groups rounded, at least one, at most all', () => {
    expect(poolGroups({ every: 1, size: 1 }, 8)).toBe(4);
    expect(poolGroups({ every: 1, size: 1, share: 0.1 }, 4)).toBe(1);
    expect(poolGroups({ every: 1, size: 1, share: 1 }, 3)).toBe(3);
  });

  it('accepts a seat per player, each with its own algorithm and rate', () => {
    expect(() => checkAgentsSettings(ok)).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, partners: [signalRandomSpeaker()], groupSize: 2, steps: 0 })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, pool: { every: 4, size: 3 } })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, pool: { every: 1, size: 1, share: 1, rotate: true } })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', klBeta: 0.05, entropyCoef: 0.01 }, { name: 'listener', algo: 'rloo', klBeta: 0, entropyCoef: 0 }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', schedule: 'cosine' }, { name: 'listener', schedule: 'constant' }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', maxNewTokens: 1 }, { name: 'listener' }], maxNewTokens: 24 })).not.toThrow();
    // A hindsight seat learns supervised: no RL algorithm, so no group size binds it either.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', script: signalRandomSpeaker() }, { name: 'listener', hindsight: true, hindsightSteps: 4, lr: 0.01, schedule: 'cosine', temperature: 0 }], groupSize: 1 })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', algo: 'rloo' }, { name: 'listener', hindsight: false, klBeta: 0.1 }] })).not.toThrow();
    // A scripted seat (a fixed partner) does not learn, so GRPO's group size does not bind it.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'speaker', algo: 'rloo' }, { name: 'listener', script: signalCodeListener() }], groupSize: 2 })).not.toThrow();
  });

  it('refuses each mistake by name', () => {
    expect(fieldOf({ env: { name: 'x' } })).toBe('env');
    expect(fieldOf({ seats: [{ name: 'alone' }] })).toBe('seats');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'a' }] })).toBe('seats[1].name');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', algo: 'sft' }] })).toBe('seats[1].algo');
    expect(fieldOf({ seats: [{ name: 'a', lr: 0 }, { name: 'b' }] })).toBe('seats[0].lr');
    expect(fieldOf({ seats: [{ name: 'a', loraRank: 1.5 }, { name: 'b' }] })).toBe('seats[0].loraRank');
    expect(fieldOf({ seats: [{ name: 'a', schedule: 'linear' }, { name: 'b' }] })).toBe('seats[0].schedule');
    expect(fieldOf({ seats: [{ name: 'a', temperature: 2 }, { name: 'b' }] })).toBe('seats[0].temperature');
    expect(fieldOf({ seats: [{ name: 'a', maxNewTokens: 0 }, { name: 'b' }] })).toBe('seats[0].maxNewTokens');
    expect(fieldOf({ seats: [{ name: 'a', maxNewTokens: 1.5 }, { name: 'b' }] })).toBe('seats[0].maxNewTokens');
    expect(fieldOf({ seats: [{ name: 'a', klBeta: -0.1 }, { name: 'b' }] })).toBe('seats[0].klBeta');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', algo: 'rloo', klBeta: 0.1 }] })).toBe('seats[1].klBeta'); // GRPO's alone
    expect(fieldOf({ seats: [{ name: 'a', entropyCoef: Number.NaN }, { name: 'b' }] })).toBe('seats[0].entropyCoef');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', algo: 'ppo', entropyCoef: 0.01 }] })).toBe('seats[1].entropyCoef'); // GRPO's alone here
    expect(fieldOf({ groupSize: 1 })).toBe('groupSize'); // GRPO compares at least two attempts per game
    expect(fieldOf({ steps: -1 })).toBe('steps');
    expect(fieldOf({ partners: [undefined, undefined, undefined] })).toBe('partners');
    expect(fieldOf({ lr: 0.1 })).toBe('lr'); // rates are per seat
    expect(fieldOf({ pool: 3 })).toBe('pool');
    expect(fieldOf({ pool: { every: 0, size: 2 } })).toBe('pool.every');
    expect(fieldOf({ pool: { every: 2, size: 1.5 } })).toBe('pool.size');
    expect(fieldOf({ pool: { every: 2 } })).toBe('pool.size');
    expect(fieldOf({ pool: { every: 2, size: 2, share: 0 } })).toBe('pool.share');
    expect(fieldOf({ pool: { every: 2, size: 2, share: 1.5 } })).toBe('pool.share');
    expect(fieldOf({ pool: { every: 2, size: 2, rotate: 'yes' } })).toBe('pool.rotate');
    expect(fieldOf({ pool: { every: 2, size: 2, games: 4 } })).toBe('pool.games');
    const script = signalCodeListener();
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script: { act: () => 'x' } }] })).toBe('seats[1].script');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, lr: 0.01 }] })).toBe('seats[1].lr'); // a scripted seat does not learn
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, entropyCoef: 0.01 }] })).toBe('seats[1].entropyCoef');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, schedule: 'cosine' }] })).toBe('seats[1].schedule');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, maxNewTokens: 1 }] })).toBe('seats[1].maxNewTokens'); // a script does not sample
    expect(fieldOf({ seats: [{ name: 'a', script }, { name: 'b', script }] })).toBe('seats');
    // Hindsight: a boolean, an environment that gives it, no RL algorithm beside it, not on a script.
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: 'yes' }] })).toBe('seats[1].hindsight');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, klBeta: 0.1 }] })).toBe('seats[1].klBeta');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, algo: 'grpo' }] })).toBe('seats[1].algo');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, hindsight: true }] })).toBe('seats[1].hindsight');
    // An information bonus: a finite number ≥ 0, for a seat that learns from its reward.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', informationBonus: 0.3 }, { name: 'b', algo: 'rloo', informationBonus: 0 }] })).not.toThrow();
    expect(fieldOf({ seats: [{ name: 'a', informationBonus: -0.1 }, { name: 'b' }] })).toBe('seats[0].informationBonus');
    expect(fieldOf({ seats: [{ name: 'a', informationBonus: Number.POSITIVE_INFINITY }, { name: 'b' }] })).toBe('seats[0].informationBonus');
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', informationBonus: { marginal: 0.2, conditional: 0 } }, { name: 'b' }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', informationBonus: { posterior: 0.5 } }, { name: 'b' }] })).not.toThrow();
    expect(fieldOf({ seats: [{ name: 'a', informationBonus: {} }, { name: 'b' }] })).toBe('seats[0].informationBonus');
    expect(fieldOf({ seats: [{ name: 'a', informationBonus: { posterior: -1 } }, { name: 'b' }] })).toBe('seats[0].informationBonus');
    expect(fieldOf({ seats: [{ name: 'a', informationBonus: '0.2' }, { name: 'b' }] })).toBe('seats[0].informationBonus');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, informationBonus: 0.3 }] })).toBe('seats[1].informationBonus');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, informationBonus: 0.3 }] })).toBe('seats[1].informationBonus');
    // Earlier steps' hindsight plays: a hindsight seat's alone, a whole number of steps ≥ 1.
    for (const bad of [0, 1.5, -2, Number.NaN, '4']) expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, hindsightSteps: bad }] })).toBe('seats[1].hindsightSteps');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsightSteps: 4 }] })).toBe('seats[1].hindsightSteps');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: false, hindsightSteps: 4 }] })).toBe('seats[1].hindsightSteps');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, hindsightSteps: 2 }] })).toBe('seats[1].hindsightSteps');
    // A restricted vocabulary: a non-empty list of one-token strings, on a seat no partner reads with expectedReward.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', vocabulary: ['a', 'e', 'i', 'o'], maxNewTokens: 1 }, { name: 'b', hindsight: true, vocabulary: ['r', 'b'] }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', vocabulary: ['a', 'e'], expectedReward: true }, { name: 'b', hindsight: true }] })).not.toThrow();
    expect(seatVocabulary({ ...ok, seats: [{ name: 'a', vocabulary: ['a', 'e', 'a'] }, { name: 'b' }] }, 0)).toEqual([97, 101]);
    expect(seatVocabulary({ ...ok, seats: [{ name: 'a' }, { name: 'b' }] }, 0)).toBeUndefined();
    for (const bad of [[], 'aeio', null]) expect(fieldOf({ seats: [{ name: 'a', vocabulary: bad }, { name: 'b' }] })).toBe('seats[0].vocabulary');
    expect(fieldOf({ seats: [{ name: 'a', vocabulary: ['a', 'ae'] }, { name: 'b' }] })).toBe('seats[0].vocabulary[1]');
    expect(fieldOf({ seats: [{ name: 'a', vocabulary: ['', 'e'] }, { name: 'b' }] })).toBe('seats[0].vocabulary[0]');
    expect(fieldOf({ seats: [{ name: 'a', vocabulary: [7] }, { name: 'b' }] })).toBe('seats[0].vocabulary[0]');
    // 'é' is two bytes: two tokens of the byte tokenizer.
    expect(fieldOf({ seats: [{ name: 'a', vocabulary: ['é'] }, { name: 'b' }] })).toBe('seats[0].vocabulary[0]');
    expect(fieldOf({ seats: [{ name: 'a', expectedReward: true }, { name: 'b', hindsight: true, vocabulary: ['r'] }] })).toBe('seats[1].vocabulary');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, vocabulary: ['r'] }] })).toBe('seats[1].vocabulary');
    // A seat's own temperature: a hindsight seat's alone (an RL seat's update uses the run's), ≥ 0.
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, temperature: -1 }] })).toBe('seats[1].temperature');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, temperature: '0' }] })).toBe('seats[1].temperature');
    expect(fieldOf({ seats: [{ name: 'a', temperature: 0.5 }, { name: 'b' }] })).toBe('seats[0].temperature');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, temperature: 0 }] })).toBe('seats[1].temperature');
    // Expected rewards: a boolean, an environment with hindsight, learning partners, no pool, a seat that learns from its reward.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', expectedReward: true, informationBonus: 0.3 }, { name: 'b', hindsight: true }] })).not.toThrow();
    expect(fieldOf({ seats: [{ name: 'a', expectedReward: 1 }, { name: 'b' }] })).toBe('seats[0].expectedReward');
    expect(fieldOf({ seats: [{ name: 'a', expectedReward: true }, { name: 'b', script }] })).toBe('seats[0].expectedReward');
    expect(fieldOf({ seats: [{ name: 'a', expectedReward: true }, { name: 'b' }], pool: { every: 2, size: 2 } })).toBe('seats[0].expectedReward');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', hindsight: true, expectedReward: true }] })).toBe('seats[1].expectedReward');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, expectedReward: true }] })).toBe('seats[1].expectedReward');
    const noHindsight = configError(() => checkAgentsSettings({ env: bargainEnv(), seats: [{ name: 'seller', expectedReward: true }, { name: 'buyer' }] }));
    expect([noHindsight.field, noHindsight.message]).toEqual(['seats[0].expectedReward', expect.stringMatching(/bargain says nothing in hindsight/)]);
    const e = configError(() => checkAgentsSettings({ env: bargainEnv(), seats: [{ name: 'seller' }, { name: 'buyer', hindsight: true }] }));
    expect([e.field, e.message]).toEqual(['seats[1].hindsight', expect.stringMatching(/bargain says nothing in hindsight/)]);
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script }], pool: { every: 2, size: 2 } })).toBe('pool');
    // Best response: a boolean, an environment with counterfactuals, learning partners, no pool; a partner's vocabulary is read whole.
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', bestResponse: true, expectedReward: true, vocabulary: ['a'] }, { name: 'b', hindsight: true }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', bestResponse: false }, { name: 'b', script }] })).not.toThrow();
    expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', bestResponse: { own: 0.5 } }, { name: 'b', hindsight: true }] })).not.toThrow();
    for (const ok2 of [{ keep: 0.5 }, { own: 1, keep: 2 }, {}]) expect(() => checkAgentsSettings({ ...ok, seats: [{ name: 'a', bestResponse: ok2 }, { name: 'b', hindsight: true }] })).not.toThrow();
    for (const bad of ['yes', null, { own: -1 }, { own: '1' }, { own: 1, more: 2 }, { keep: -1 }, { keep: Infinity }, { own: 1, keep: '1' }, { own: NaN }]) expect(fieldOf({ seats: [{ name: 'a', bestResponse: bad }, { name: 'b' }] })).toBe('seats[0].bestResponse');
    expect(fieldOf({ seats: [{ name: 'a', bestResponse: { own: 1 } }, { name: 'b', hindsight: true, vocabulary: ['r'] }] })).toBe('seats[1].vocabulary');
    expect(fieldOf({ seats: [{ name: 'a', bestResponse: true }, { name: 'b', script }] })).toBe('seats[0].bestResponse');
    expect(fieldOf({ seats: [{ name: 'a', bestResponse: true }, { name: 'b' }], pool: { every: 2, size: 2 } })).toBe('seats[0].bestResponse');
    expect(fieldOf({ seats: [{ name: 'a', bestResponse: true }, { name: 'b', hindsight: true, vocabulary: ['r'] }] })).toBe('seats[1].vocabulary');
    expect(fieldOf({ seats: [{ name: 'a' }, { name: 'b', script, bestResponse: true }] })).toBe('seats[1].bestResponse');
    const noCounterfactuals = configError(() => checkAgentsSettings({ env: bargainEnv(), seats: [{ name: 'seller', bestResponse: true }, { name: 'buyer' }] }));
    expect([noCounterfactuals.field, noCounterfactuals.message]).toEqual(['seats[0].bestResponse', expect.stringMatching(/bargain names no counterfactuals/)]);
  });

  it('trainAgents refuses bad settings before asking for a GPU', async () => {
    await expect(trainAgents({ ...ok, seats: [] })).rejects.toThrow(/give one seat each/);
  });
});
