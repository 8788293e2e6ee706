/**
 * Several agents at once (src/runtime/agents_job.ts) on the engine, Deno suite only (minutes on
 * SwiftShader): tiny-gpt2, a two-seat "relay" game whose rewards differ per seat and per action
 * (so groups never tie and both agents train), seats with their own algorithm (GRPO, RLOO) and
 * learning rate (GRPO with a KL penalty to its start); a scripted seat (a fixed partner) beside a learner. Checks: each agent trains on its own trajectories alone (datums = its games'
 * attempts), both adapters move from their zero-B start, the partner-swap evaluation runs with a
 * scripted stand-in, the metrics' shapes; and the same settings twice give the same bytes. With an
 * opponent pool: copies taken at the right steps and no more than `size` of them held, the learners'
 * datums from the pool games too, the copies released, and again the same bytes twice. A speaker's
 * best response in the signalling game: its table against expectedRewards' credit (another path to
 * the listener's probabilities), its assignment against every assignment, its plays, and trainAgents
 * with it seeded and moving the speaker.
 */
import { assert } from 'chai';
import type { ScriptedPolicy } from '../../../src/env/multiagent.ts';
import type { TurnBasedEnvSpec, TurnBasedEnvironment } from '../../../src/env/types.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { agentsModelConfig, trainAgents } from '../../../src/runtime/agents_job.ts';
import type { AgentsSettings } from '../../../src/runtime/agents_settings.ts';
import { expectedRewards, replayHindsight } from '../../../src/runtime/agents_hindsight.ts';
import { actionLogprob, promptKey } from '../../../src/algorithms/information_bonus.ts';
import { bestResponse } from '../../../src/runtime/agents_best_response.ts';
import { signalEnv } from '../../../src/env/envs/signal.ts';
import { Agent } from '../../../src/env/agent.ts';
import { groupEpisodes } from '../../../src/env/batch.ts';
import { rolloutTurnBased } from '../../../src/env/multiagent.ts';
import { JOB_FORMAT } from '../../../src/runtime/job_envs.ts';
import type { Trajectory } from '../../../src/env/types.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import type { LrSchedule } from '../../../src/runtime/sft_job.ts';
import type { GpuCase } from '../register.ts';

const tok = new ByteTokenizer();

/**
 * Relay: seat 1 says something, seat 2 hears it and says something. Seat 1 earns the share of
 * characters with an even code in what it said, seat 2 the share under 'a' in its own reply — a
 * random model's attempts score apart, so groups do not tie.
 */
function relayEnv(): TurnBasedEnvSpec {
  const share = (s: string, ok: (c: number) => boolean) => (s.length === 0 ? 0 : [...s].filter((ch) => ok(ch.charCodeAt(0))).length / s.length);
  const create = (): TurnBasedEnvironment => {
    let first = '';
    let turn = 0;
    return {
      name: 'relay',
      numPlayers: 2,
      async reset(seed) {
        turn = 0;
        return { player: 0, observation: `Relay ${seed % 7}. Say something.` };
      },
      async step(action) {
        if (turn++ === 0) {
          first = action;
          return { player: 1, observation: `They said: ${action.slice(0, 12)}. Reply.`, rewardsP: [share(first, (c) => c % 2 === 0), 0], done: false };
        }
        return { player: 1, observation: 'Over.', rewardsP: [0, share(action, (c) => c < 97)], done: true };
      },
    };
  };
  return { name: 'relay', numPlayers: 2, create, demonstrations: (n, rng) => Array.from({ length: n }, (_, i) => ({ seed: rng.nextU32(), actions: ['hello', '42'], ...(i % 2 ? { player: 1 } : {}) })) };
}

/**
 * The relay game whose end says what the caller said (info.said), with `hindsight` — for the replay
 * of a game as it should have gone.
 */
function hindsightRelay(hindsight: TurnBasedEnvSpec['hindsight']): TurnBasedEnvSpec {
  const relay = relayEnv();
  return {
    ...relay,
    create: () => {
      const game = relay.create();
      let [turn, said] = [0, ''];
      return {
        name: game.name, numPlayers: game.numPlayers,
        reset: (seed, variant) => {
          turn = 0;
          return game.reset(seed, variant);
        },
        step: async (action) => {
          if (turn++ === 0) said = action;
          const r = await game.step(action);
          return r.done ? { ...r, info: { said } } : r;
        },
      };
    },
    hindsight,
  };
}

/**
 * The relay game with hindsight for the replier: the game as it was played — the caller's words and
 * the replier's own reply — when the reply's text re-encodes to the tokens sampled for it (a reply
 * cut before a stop token, with no byte the decoder replaced), else null. The expected reward of a
 * game is then the replier's probability of its own sampled reply: the sampler's log-probabilities
 * are the oracle.
 */
const replayableRelay = () => hindsightRelay((t) => (t.player === 1 && reencodes(t) ? { seed: t.seed, actions: [String(t.turns[0].info.said), t.turns[0].action], player: 1 } : null));

/** Whether a trajectory's first action text encodes to exactly the tokens sampled for it. */
const reencodes = (t: Trajectory) => {
  const turn = t.turns[0];
  const ids = tok.encode(turn.action);
  return ids.length > 0 && ids.length === turn.actionEnd - turn.actionStart && ids.every((x, i) => x === t.tokensT[turn.actionStart + i]);
};

/** The best total of `scores` over every one-to-one assignment of its rows to its columns (rows ≤ columns). */
function bestOneToOne(scores: readonly (readonly number[])[]): number {
  const go = (r: number, free: readonly number[]): number =>
    r === scores.length ? 0 : Math.max(...free.map((c) => scores[r][c] + go(r + 1, free.filter((x) => x !== c))));
  return go(0, scores[0].map((_, c) => c));
}

const quiet: ScriptedPolicy = { kind: 'scripted', id: 'quiet', act: () => 'zzz' };

const settings = (onStep?: AgentsSettings['onStep']): AgentsSettings => ({
  env: relayEnv(),
  seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, schedule: 'cosine', loraRank: 2, klBeta: 0.1 }, { name: 'replier', algo: 'rloo', lr: 1e-2, loraRank: 2 }],
  model: 'tiny-gpt2', warmStart: { steps: 2, demos: 8, batchSize: 4 }, steps: 2, groups: 2, groupSize: 3, seed: 5,
  maxNewTokens: 6, context: 96, maxTurns: 1, evalGames: 4, partners: [quiet, undefined], ...(onStep ? { onStep } : {}),
});

/** Live GPU bytes of the pool's copies (their adapters are named `agents/<seat>@<step>`). */
const copyBytes = (owners: Record<string, { currentBytes: number }>) =>
  Object.entries(owners).filter(([k, o]) => k.includes('@') && o.currentBytes > 0).map(([k]) => k);

export const agentsJobCases: GpuCase[] = [
  {
    name: 'trainAgents: two agents with their own algorithms learn on their own trajectories; partner swap; same seed → same bytes',
    async fn(ctx) {
      const run = async (onStep?: AgentsSettings['onStep']) => {
        const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
        try {
          return await trainAgents({ ...settings(onStep), service });
        } finally {
          await service.close();
        }
      };
      const seen: number[] = [];
      const a = await run((m) => seen.push(m.step));
      assert.deepEqual(seen, [0, 1]);
      assert.lengthOf(a.steps, 2);
      for (const m of a.steps) {
        assert.lengthOf(m.reward, 2);
        // Every game's attempts differ per seat: each agent trains on all of its own 2 × 3 trajectories, no more.
        assert.deepEqual(m.datums, [6, 6]);
        for (const l of m.loss) assert.isTrue(Number.isFinite(l));
        assert.isAtLeast(m.success, 0);
        assert.isAtMost(m.success, 1);
        // What each agent said in the step's first game: one action each (maxTurns 1).
        assert.deepEqual(m.transcript.map((t) => t.length), [1, 1]);
      }
      // The caller's cosine schedule over 2 steps: the full rate (one warm-up step), then a tenth; the replier's constant.
      assert.deepEqual(a.steps.map((m) => m.lr.map((x) => +x.toPrecision(12))), [[2e-2, 1e-2], [2e-3, 1e-2]]);
      assert.lengthOf(a.adapters, 2);
      for (const ad of a.adapters) {
        const moved = Object.entries(ad!).filter(([k]) => k.endsWith('lora_b')).some(([, v]) => v.some((x) => x !== 0));
        assert.isTrue(moved, 'an adapter did not move');
      }
      // The two agents are apart: different seeds, algorithms and rates.
      const key = Object.keys(a.adapters[0]!).find((k) => k.endsWith('lora_b'))!;
      assert.notDeepEqual(Array.from(a.adapters[0]![key]), Array.from(a.adapters[1]![key]));
      for (const e of [a.before, a.after]) {
        assert.lengthOf(e.swapped, 2);
        assert.isNumber(e.swapped[0]);
        assert.isNull(e.swapped[1]);
        assert.lengthOf(e.returns, 2);
        for (const r of e.returns) assert.isTrue(r >= 0 && r <= 1);
        // The stand-in in seat 0 says 'zzz' ('z' = 122, even): it earns its full share every game.
        assert.strictEqual(e.swappedReturns[0]![0], 1);
        assert.isNull(e.swappedReturns[1]);
      }
      // The config given weights must fit is the one the run built.
      assert.deepEqual(agentsModelConfig(settings()), a.cfg);
      const b = await run();
      assert.deepEqual(b.steps.map((m) => [m.reward, m.loss, m.datums, m.success]), a.steps.map((m) => [m.reward, m.loss, m.datums, m.success]));
      for (const [k, ad] of a.adapters.entries()) {
        for (const [name, v] of Object.entries(ad!)) assert.deepEqual(Array.from(b.adapters[k]![name]), Array.from(v), `${k}:${name}`);
      }
      // From the first run's base (no warm start) the run repeats it byte for byte; with the caller's
      // rate constant instead, its second step trains at the full rate and its adapter ends elsewhere.
      const fromBase = async (schedule: LrSchedule) => {
        const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
        try {
          const st = settings();
          return await trainAgents({ ...st, seats: [{ ...st.seats[0], schedule }, st.seats[1]], weights: a.base, warmStart: undefined, service });
        } finally {
          await service.close();
        }
      };
      const [c, d] = [await fromBase('cosine'), await fromBase('constant')];
      const callerB = (r: typeof a) => Array.from(r.adapters[0]![key]);
      assert.deepEqual(callerB(c), callerB(a));
      assert.notDeepEqual(callerB(d), callerB(a));
      assert.deepEqual(d.steps.map((m) => m.lr), [[2e-2, 1e-2], [2e-2, 1e-2]]);
      // Aborted after its first step, from the shared base of the first run (no warm start): the run stops there.
      const stop = new AbortController();
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      const stepsSeen: number[] = [];
      try {
        const aborted = trainAgents({ ...settings((m) => { stepsSeen.push(m.step); stop.abort(new Error('stopped by the test')); }), weights: a.base, warmStart: undefined, service, signal: stop.signal });
        let caught: unknown = null;
        await aborted.catch((e) => (caught = e));
        assert.match(String(caught), /stopped by the test/);
        assert.deepEqual(stepsSeen, [0]);
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'trainAgents with an opponent pool: copies every 2 steps (at most 1 per seat), each learner trains on its pool games too; same seed → same bytes',
    async fn(ctx) {
      const run = async (onStep?: AgentsSettings['onStep']) => {
        const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
        try {
          const r = await trainAgents({ ...settings(onStep), steps: 3, pool: { every: 2, size: 1, share: 0.5, rotate: true }, service });
          assert.deepEqual(copyBytes(ctx.pool.stats().owners), [], 'the copies were released');
          return r;
        } finally {
          await service.close();
        }
      };
      const held: string[][] = [];
      const a = await run(() => held.push(copyBytes(ctx.pool.stats().owners)));
      assert.deepEqual(a.steps.map((m) => m.pool?.copies), [[[0], [0]], [[0], [0]], [[2], [2]]]);
      for (const m of a.steps) {
        // One group of 3 with the live agents, and per learner one group of 3 against a copy: up to
        // 6 attempts train it (the caller's never tie; the replier's pool group can, and RLOO skips it).
        assert.deepEqual(m.pool?.games, [3, 3]);
        assert.strictEqual(m.datums[0], 6);
        assert.include([3, 6], m.datums[1]);
        for (const r of m.pool!.reward) assert.isTrue(r >= 0 && r <= 1);
      }
      assert.strictEqual(a.steps[0].datums[1], 6, 'the replier trained on its pool game too');
      // While it ran the pool held one copy per seat on the GPU (the oldest closed when step 2's came).
      for (const h of held) assert.lengthOf(h, 2, h.join(', '));
      assert.isTrue(held[2].every((k) => k.includes('@2')), held[2].join(', '));
      for (const ad of a.adapters) assert.isTrue(Object.entries(ad!).some(([k, v]) => k.endsWith('lora_b') && v.some((x) => x !== 0)), 'an adapter did not move');
      const b = await run();
      assert.deepEqual(b.steps.map((m) => [m.reward, m.loss, m.datums, m.success, m.pool]), a.steps.map((m) => [m.reward, m.loss, m.datums, m.success, m.pool]));
      for (const [k, ad] of a.adapters.entries()) {
        for (const [name, v] of Object.entries(ad!)) assert.deepEqual(Array.from(b.adapters[k]![name]), Array.from(v), `${k}:${name}`);
      }
    },
  },
  {
    name: 'trainAgents: with klBeta a seat trains on tied games too (the penalty alone, an entropy bonus, an information bonus); without, tied games are left out',
    async fn(ctx) {
      // Every attempt scores 0: every group ties.
      const flat: TurnBasedEnvSpec = {
        ...relayEnv(),
        name: 'flat',
        create: (): TurnBasedEnvironment => {
          let turn = 0;
          return {
            name: 'flat', numPlayers: 2,
            async reset() { turn = 0; return { player: 0, observation: 'Say something.' }; },
            async step() { return turn++ === 0 ? { player: 1, observation: 'Reply.', rewardsP: [0, 0], done: false } : { player: 1, observation: 'Over.', rewardsP: [0, 0], done: true }; },
          };
        },
      };
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      try {
        const r = await trainAgents({
          ...settings(), env: flat, partners: undefined, evalGames: 0, service,
          seats: [{ name: 'kept', algo: 'grpo', lr: 2e-2, loraRank: 2, klBeta: 0.1 }, { name: 'skipped', algo: 'grpo', lr: 2e-2, loraRank: 2 }],
        });
        for (const m of r.steps) {
          assert.deepEqual(m.datums, [6, 0]);
          assert.isTrue(Number.isFinite(m.loss[0]));
        }
        // At step 0 policy = reference and every advantage is 0: the loss is the KL term, 0.
        assert.approximately(r.steps[0].loss[0], 0, 1e-6);
        // An entropy bonus trains tied games too, with klBeta and without (no reference then): step 0's
        // loss is −coef·H < 0, and the adapter moves elsewhere.
        const e = await trainAgents({
          ...settings(), env: flat, partners: undefined, evalGames: 0, service,
          seats: [{ name: 'kept', algo: 'grpo', lr: 2e-2, loraRank: 2, klBeta: 0.1, entropyCoef: 0.05 }, { name: 'bonus', algo: 'grpo', lr: 2e-2, loraRank: 2, entropyCoef: 0.05 }],
        });
        for (const m of e.steps) assert.deepEqual(m.datums, [6, 6]);
        for (const k of [0, 1]) {
          // The entropy per token is at most ln(vocabulary): the bonus lies between 0 and −0.05·ln V.
          assert.isBelow(e.steps[0].loss[k], -1e-4, `seat ${k}`);
          assert.isAbove(e.steps[0].loss[k], -0.05 * Math.log(e.cfg.vocabSize) - 1e-6, `seat ${k}`);
          const moved = Object.entries(e.adapters[k]!).some(([name, v]) => v.some((x, i) => x !== r.adapters[k]![name][i]));
          assert.isTrue(moved, `the entropy bonus changed nothing for seat ${k}`);
        }
        // An information bonus pays attempts by how specific their action is: tied games train too,
        // while the metrics keep the game's reward (0 here).
        const ib = await trainAgents({
          ...settings(), env: flat, partners: undefined, evalGames: 0, service,
          seats: [{ name: 'informed', algo: 'grpo', lr: 2e-2, loraRank: 2, informationBonus: 0.5 }, { name: 'skipped', algo: 'grpo', lr: 2e-2, loraRank: 2 }],
        });
        for (const m of ib.steps) {
          assert.deepEqual(m.datums, [6, 0]);
          assert.deepEqual(m.reward, [0, 0]);
        }
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'trainAgents with a scripted seat: the other seat learns against the fixed partner; the script trains nothing and has no adapter',
    async fn(ctx) {
      // The replier's script answers in capitals (codes < 97): it earns its full share every game.
      const caps: ScriptedPolicy = { kind: 'scripted', id: 'caps', act: () => 'ABC' };
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      try {
        const r = await trainAgents({ ...settings(), seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2 }, { name: 'replier', script: caps }], service });
        for (const m of r.steps) {
          assert.deepEqual(m.datums, [6, 0]);
          assert.strictEqual(m.reward[1], 1);
          assert.strictEqual(m.loss[1], 0);
          assert.deepEqual(m.transcript.map((t) => t.length), [1, 0]);
        }
        assert.isNull(r.adapters[1]);
        assert.isNull(r.loras[1]);
        assert.isTrue(Object.entries(r.adapters[0]!).filter(([k]) => k.endsWith('lora_b')).some(([, v]) => v.some((x) => x !== 0)), 'the learner did not move');
        for (const e of [r.before, r.after]) {
          assert.strictEqual(e.returns[1], 1);
          // The learner swapped for its stand-in leaves scripts alone: no success to judge, their returns exact.
          assert.isNull(e.swapped[0]);
          assert.deepEqual(e.swappedReturns[0], [1, 1]);
        }
        // A seat's own tokens per action (the run's are 6): the caller says one byte at most each game.
        const one = await trainAgents({ ...settings(), seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, maxNewTokens: 1 }, { name: 'replier', script: caps }], service });
        assert.isTrue(r.steps.some((m) => m.transcript[0][0].length > 1), 'the run-wide limit lets longer actions through');
        for (const m of one.steps) assert.isAtMost(m.transcript[0][0].length, 1);
        // A seat's own vocabulary: the caller says 'a' (odd: 0) or 'b' (even: 1) alone, two of them
        // each game (no stop token is allowed), in training and evaluation alike. Its update recomputes
        // the old log-probs over the whole vocabulary, so every ratio is 1 and GRPO's surrogate is
        // −mean(A) = 0 (advantages sum to zero per game); with the sampled log-probs (renormalised over
        // two ids) the ratios would be ≈ 2/259 and the loss far from 0.
        const said: string[] = [];
        const ab = await trainAgents({
          ...settings(), evalGames: 6, seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, maxNewTokens: 2, vocabulary: ['a', 'b'] }, { name: 'replier', script: caps }], service,
          onStep: (m) => said.push(...m.transcript[0]),
        });
        assert.lengthOf(said, 2);
        for (const a of said) assert.match(a, /^[ab]{2}$/);
        for (const m of ab.steps) {
          // Each game pays 0, ½ or 1 (two letters): the step's mean over its 6 games is a multiple of 1/12.
          assert.closeTo(m.reward[0] * 12, Math.round(m.reward[0] * 12), 1e-9);
          assert.isAbove(m.datums[0], 0);
          assert.isAtMost(Math.abs(m.loss[0]), 1e-5, `step ${m.step}: loss ${m.loss[0]} (ratios not 1?)`);
        }
        for (const e of [ab.before, ab.after]) assert.closeTo(e.returns[0] * 12, Math.round(e.returns[0] * 12), 1e-9);
        // The information bonus's shares over 2 steps: the first step has no earlier one (after it the
        // adapter is the same bytes as over 1), the second counts the first's messages too (another
        // adapter). One letter of two per game, so messages repeat and their shares move. (The loss
        // cannot tell: with ratios 1 GRPO's surrogate is 0 whatever the rewards.)
        const bonus = async (steps: number, informationBonus: { posterior: number; steps?: number }) => (await trainAgents({
          ...settings(), steps, evalGames: 0, seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, maxNewTokens: 1, vocabulary: ['a', 'b'], informationBonus }, { name: 'replier', script: caps }], service,
        })).adapters[0]!;
        const same = (x: Record<string, Float32Array>, y: Record<string, Float32Array>) => Object.keys(x).every((k) => x[k].every((v, i) => Object.is(v, y[k][i])));
        assert.isTrue(same(await bonus(1, { posterior: 1 }), await bonus(1, { posterior: 1, steps: 2 })), 'one step: no earlier step to count');
        assert.isFalse(same(await bonus(2, { posterior: 1 }), await bonus(2, { posterior: 1, steps: 2 })), 'the second step counts the first\'s messages');
        assert.isTrue(Object.entries(ab.adapters[0]!).filter(([k]) => k.endsWith('lora_b')).some(([, v]) => v.some((x) => x !== 0)), 'the restricted learner did not move');
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'trainAgents with a hindsight seat: it trains supervised on every game as the environment says it should have gone (of its last steps, with hindsightSteps); the loss falls; same seed → same bytes',
    async fn(ctx) {
      // The replier should always have answered in capitals (its full share); the caller gets no
      // hindsight. The game's end says what the caller said, for the replay of the game as it should have gone.
      const env = hindsightRelay((t) => (t.player === 1 ? { seed: t.seed, actions: [String(t.turns.at(-1)!.info.said), 'ABC'], player: 1 } : null));
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      try {
        const go = () => trainAgents({ ...settings(), env, steps: 4, seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, klBeta: 0.1 }, { name: 'replier', hindsight: true, lr: 3e-2, loraRank: 2 }], service });
        const r = await go();
        for (const m of r.steps) {
          assert.strictEqual(m.datums[1], 6, 'every game of the step (2 groups × 3) teaches the hindsight seat');
          assert.isAbove(m.loss[1], 0);
          assert.isAbove(m.datums[0], 0, 'the caller learns from its reward beside it');
        }
        const ce = r.steps.map((m) => m.loss[1]);
        assert.isBelow(ce.at(-1)!, ce[0], `the supervised loss falls over the steps: ${ce.map((x) => x.toFixed(3))}`);
        const again = await go();
        for (const k of [0, 1]) {
          for (const [name, v] of Object.entries(r.adapters[k]!)) assert.deepEqual(Array.from(again.adapters[k]![name]), Array.from(v), `${name} of seat ${k}`);
        }
        // Its last two steps' plays (hindsightSteps): the first step trains on its own games as before,
        // every later one on its games and the step before's.
        const two = await trainAgents({ ...settings(), env, steps: 4, seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, klBeta: 0.1 }, { name: 'replier', hindsight: true, hindsightSteps: 2, lr: 3e-2, loraRank: 2 }], service });
        assert.deepEqual(two.steps.map((m) => m.datums[1]), [6, 12, 12, 12]);
        assert.strictEqual(two.steps[0].loss[1], r.steps[0].loss[1]);
        assert.notStrictEqual(two.steps[1].loss[1], r.steps[1].loss[1]);
        // Its own temperature: greedy (0), the replier answers a step's games — all the same prompt
        // after a scripted caller — with one reply, so its mean reward is that reply's share; at the
        // run's temperature its replies differ.
        const hello: ScriptedPolicy = { kind: 'scripted', id: 'hello', act: () => 'hello' };
        const upper = (a: string) => (a.length === 0 ? 0 : [...a].filter((ch) => ch.charCodeAt(0) < 97).length / a.length);
        const byTemperature = async (temperature?: number) => {
          const x = await trainAgents({ ...settings(), env, steps: 3, seats: [{ name: 'caller', script: hello }, { name: 'replier', hindsight: true, lr: 3e-2, loraRank: 2, ...(temperature === undefined ? {} : { temperature }) }], service });
          return x.steps.map((m) => [m.reward[1], upper(m.transcript[1][0])]);
        };
        for (const [mean, first] of await byTemperature(0)) assert.closeTo(mean, first, 1e-9);
        assert.isTrue((await byTemperature()).some(([mean, first]) => Math.abs(mean - first) > 1e-9), 'sampled replies differ within a step');
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'expectedRewards: a game is credited its partner\'s probability of the hindsight play (oracle: the sampler\'s log-probabilities of the same play); a null hindsight keeps the sampled reward; trainAgents with it is seeded',
    async fn(ctx) {
      const env = replayableRelay();
      const cfg = agentsModelConfig({ ...settings(), env });
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      try {
        const modelId = await service.createModel(cfg, { seed: 3, id: 'expected-base' });
        const policies = [];
        for (const k of [0, 1]) policies.push(await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 2, alpha: 4, targets: ['q', 'v', 'up'] }, seed: 11 + k, id: `expected/${k}` }));
        const replay = { tokenizer: tok, maxNewTokens: cfg.maxSeqLen, maxSequenceTokens: cfg.maxSeqLen, format: JOB_FORMAT };
        const samplers = await Promise.all(policies.map((p) => p.samplingClient()));
        const seats = samplers.map((sm, k) => new Agent({ sample: sm.sample, id: `seat${k}`, tokenizer: tok, maxTurns: 1, maxNewTokens: k === 1 ? 1 : 4, maxSequenceTokens: cfg.maxSeqLen, temperature: 1, format: JOB_FORMAT }));
        const batch = await rolloutTurnBased(env, seats, groupEpisodes(6, 3, 77), { seed: 9, maxSteps: 2 });
        const pack = { rows: 4, maxSeqLen: cfg.maxSeqLen, padId: tok.padId };
        const credited = await expectedRewards(batch.seats[0]!.groups, [{ client: policies[1], plays: await replayHindsight(env, 1, batch.seats[1]!.groups, replay) }], pack);
        const callers = batch.seats[0]!.groups.flatMap((g) => g.trajectories);
        const repliers = new Map(batch.seats[1]!.groups.flatMap((g) => g.trajectories).map((t) => [t.episodeId, t]));
        const out = credited.flatMap((g) => g.trajectories);
        assert.strictEqual(out.length, callers.length);
        let [exact, kept] = [0, 0];
        for (const [i, t] of out.entries()) {
          const partner = repliers.get(t.episodeId)!;
          assert.strictEqual(t.episodeId, callers[i].episodeId);
          if (reencodes(partner)) {
            exact++;
            const p = Math.exp(actionLogprob(partner));
            assert.closeTo(t.reward, p, 2e-3 * Math.max(p, 1e-3), `game ${t.episodeId}: credited ${t.reward}, the replier sampled its reply with probability ${p}`);
            assert.isAtMost(t.reward, 1);
          } else {
            kept++;
            assert.strictEqual(t.reward, callers[i].reward, 'no hindsight play: the sampled reward stays');
          }
        }
        assert.isAtLeast(exact, 3, 'games are credited their expected reward');
        assert.isAbove(kept, 0, 'and some keep their reward');
        // The replier's own groups are untouched (it is seat 1's credit that was asked for seat 0).
        assert.deepEqual(credited.map((g) => g.groupId), batch.seats[0]!.groups.map((g) => g.groupId));
        for (const sm of samplers) await sm.close();
        for (const p of policies) await p.close();
        await service.releaseModel(modelId);
        console.log(`expectedRewards: ${exact} games credited, ${kept} kept their reward`);

        // Through trainAgents: the caller's metric is the mean credited reward, a probability; the same seed → the same bytes.
        const go = () => trainAgents({ ...settings(), env, steps: 2, seats: [{ name: 'caller', algo: 'grpo', lr: 2e-2, loraRank: 2, expectedReward: true }, { name: 'replier', algo: 'rloo', lr: 1e-2, loraRank: 2, maxNewTokens: 2 }], service });
        const r = await go();
        for (const m of r.steps) {
          assert.isNull(m.expected[1]);
          assert.isTrue(m.expected[0] !== null && m.expected[0] >= 0 && m.expected[0] <= 1, `expected ${m.expected[0]}`);
          assert.isAbove(m.datums[0], 0);
        }
        const again = await go();
        for (const [name, v] of Object.entries(r.adapters[0]!)) assert.deepEqual(Array.from(again.adapters[0]![name]), Array.from(v), name);
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'bestResponse: the signalling speaker\'s table is the listener\'s probability of the target on each letter (oracle: expectedRewards on the played games); the assignment is the best one-to-one (and with the own and keep bonuses); plays carry it; trainAgents with it is seeded and it moves the speaker',
    async fn(ctx) {
      const letters = 'aeio';
      const env = signalEnv({ objects: ['ring', 'box', 'star', 'cross'], symbols: letters, prompt: 'short', message: 'bare', pick: 'initial' });
      const base = { ...settings(), env, maxNewTokens: 1, partners: undefined };
      const cfg = agentsModelConfig(base);
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      try {
        const modelId = await service.createModel(cfg, { seed: 4, id: 'best-response-base' });
        const policies = [];
        for (const k of [0, 1]) policies.push(await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 2, alpha: 4, targets: ['q', 'v', 'up'] }, seed: 21 + k, id: `best-response/${k}` }));
        const replay = { tokenizer: tok, maxNewTokens: cfg.maxSeqLen, maxSequenceTokens: cfg.maxSeqLen, format: JOB_FORMAT };
        const samplers = await Promise.all(policies.map((p) => p.samplingClient()));
        // The speaker says one of the letters (so every message comes through), the listener one byte.
        const seats = samplers.map((sm, k) => new Agent({
          sample: sm.sample, id: `seat${k}`, tokenizer: tok, maxTurns: 1, maxNewTokens: 1, maxSequenceTokens: cfg.maxSeqLen, temperature: 1, format: JOB_FORMAT,
          ...(k === 0 ? { allowedTokens: [...letters].map((x) => tok.encode(x)[0]) } : {}),
        }));
        const batch = await rolloutTurnBased(env, seats, groupEpisodes(12, 3, 31), { seed: 5, maxSteps: 2 });
        const pack = { rows: 4, maxSeqLen: cfg.maxSeqLen, padId: tok.padId };
        const speaker = batch.seats[0]!.groups;
        const br = await bestResponse(env, 0, speaker, [{ seat: 1, client: policies[1] }], pack, replay);
        assert.deepEqual(br.actions, [...letters]);
        const situations = new Set(speaker.map((g) => promptKey(g.trajectories[0])));
        assert.strictEqual(br.table.length, situations.size, 'one row per target met');
        assert.isAtLeast(br.table.length, 2);
        // Oracle: the speaker's played games credited with the listener's probability of picking the target on the message sent.
        const credited = await expectedRewards(speaker, [{ client: policies[1], plays: await replayHindsight(env, 1, batch.seats[1]!.groups, replay) }], pack);
        const row = new Map(br.table.map((r) => [r.situation, r.expected]));
        let checked = 0;
        for (const t of credited.flatMap((g) => g.trajectories)) {
          const p = row.get(promptKey(t))![letters.indexOf(t.turns[0].action)];
          assert.closeTo(p, t.reward, 1e-4 * Math.max(p, 1e-3), `game ${t.episodeId} (${t.turns[0].action}): table ${p}, credited ${t.reward}`);
          checked++;
        }
        assert.strictEqual(checked, 36);
        // The assignment: one letter per target, the best total of log-probabilities over every assignment.
        const logs = br.table.map((r) => r.expected.map((x) => Math.log(Math.max(x, 1e-12))));
        const chosen = br.situations.map((x) => letters.indexOf(x.action));
        assert.strictEqual(new Set(chosen).size, chosen.length, `distinct letters, got ${br.situations.map((x) => x.action)}`);
        assert.closeTo(chosen.reduce((sum, c, r) => sum + logs[r][c], 0), bestOneToOne(logs), 1e-9);
        br.situations.forEach((x, s) => assert.strictEqual(x.expected, br.table[s].expected[chosen[s]]));
        // With the speaker's own log-probabilities weighed in: its own table against its sampler (which renormalised
        // over the letters: the oracle is the table's row renormalised), and the assignment best under the sum.
        const withOwn = await bestResponse(env, 0, speaker, [{ seat: 1, client: policies[1] }], pack, replay, { client: policies[0], weight: 3 });
        assert.deepEqual(withOwn.table.map((r) => r.expected), br.table.map((r) => r.expected));
        const ownRow = new Map(withOwn.table.map((r) => [r.situation, r.own!]));
        for (const t of speaker.flatMap((g) => g.trajectories)) {
          const row = ownRow.get(promptKey(t))!;
          const p = row[letters.indexOf(t.turns[0].action)] / row.reduce((a, b) => a + b, 0);
          assert.closeTo(p, Math.exp(actionLogprob(t)), 1e-4, `game ${t.episodeId}: own ${p}, sampled with ${Math.exp(actionLogprob(t))}`);
        }
        const combined = withOwn.table.map((r) => r.expected.map((x, a) => Math.log(Math.max(x, 1e-12)) + 3 * Math.log(Math.max(r.own![a], 1e-12))));
        const ownChosen = withOwn.situations.map((x) => letters.indexOf(x.action));
        assert.closeTo(ownChosen.reduce((sum, c, r) => sum + combined[r][c], 0), bestOneToOne(combined), 1e-9);
        // With keep: each target's letter last time (here the chosen one's neighbour, still one-to-one) gets the bonus;
        // the assignment is the best under the sum, and a bonus beyond any difference keeps every letter.
        const previous = new Map(br.table.map((r, s) => [r.situation, letters[(chosen[s] + 1) % letters.length]]));
        for (const nats of [0.5, 1e3]) {
          const kept = await bestResponse(env, 0, speaker, [{ seat: 1, client: policies[1] }], pack, replay, undefined, { previous, nats });
          const scores = kept.table.map((r) => r.expected.map((x, a) => Math.log(Math.max(x, 1e-12)) + (previous.get(r.situation) === letters[a] ? nats : 0)));
          const keptChosen = kept.situations.map((x) => letters.indexOf(x.action));
          assert.closeTo(keptChosen.reduce((sum, c, r) => sum + scores[r][c], 0), bestOneToOne(scores), 1e-9);
          if (nats === 1e3) assert.deepEqual(kept.situations.map((x) => x.action), kept.table.map((r) => previous.get(r.situation)));
        }
        // Plays: one per game, the speaker's, with its target's letter.
        assert.lengthOf(br.plays, 12);
        const letterOf = new Map(br.table.map((r, s) => [r.situation, br.situations[s].action]));
        for (const t of br.plays) {
          assert.strictEqual(t.player, 0);
          assert.strictEqual(t.turns[0].action, letterOf.get(promptKey(t)));
        }
        for (const sm of samplers) await sm.close();
        for (const p of policies) await p.close();
        await service.releaseModel(modelId);
        console.log(`bestResponse: ${checked} games against the oracle; letters ${br.situations.map((x) => `${x.action} ${x.expected.toFixed(3)}`).join(', ')}`);

        // Through trainAgents: the speaker's metrics name a letter per target met, distinct; the listener's are null;
        // the same seed → the same bytes; and the best-response step moves the speaker beyond its RL step alone.
        const go = (bestResponse: boolean | { own?: number; keep?: number }) => trainAgents({
          ...base, steps: 2, groups: 4, groupSize: 2, service,
          seats: [{ name: 'speaker', algo: 'grpo', lr: 2e-2, loraRank: 2, maxNewTokens: 1, vocabulary: [...letters], ...(bestResponse ? { bestResponse } : {}) }, { name: 'listener', lr: 2e-2, loraRank: 2, hindsight: true }],
        });
        const r = await go(true);
        for (const m of r.steps) {
          assert.isNull(m.bestResponse[1]);
          const xs = m.bestResponse[0]!;
          assert.isAtLeast(xs.length, 1);
          assert.strictEqual(new Set(xs.map((x) => x.action)).size, xs.length);
          for (const x of xs) assert.isTrue(letters.includes(x.action) && x.expected >= 0 && x.expected <= 1, JSON.stringify(x));
          // Each situation as the speaker read it: its prompt, naming one target; no target twice.
          const targets = xs.map((x) => ['ring', 'box', 'star', 'cross'].filter((o) => x.situation.includes(`pick the ${o}`)));
          assert.isTrue(targets.every((t) => t.length === 1) && new Set(targets.flat()).size === xs.length, JSON.stringify(xs));
        }
        const again = await go(true);
        for (const [name, v] of Object.entries(r.adapters[0]!)) assert.deepEqual(Array.from(again.adapters[0]![name]), Array.from(v), name);
        const sticky = await go({ own: 1, keep: 1 });
        assert.isTrue(sticky.steps.every((m) => m.bestResponse[0] !== null && m.bestResponse[1] === null));
        const without = await go(false);
        for (const m of without.steps) assert.deepEqual(m.bestResponse, [null, null]);
        assert.isTrue(Object.entries(r.adapters[0]!).some(([name, v]) => v.some((x, i) => x !== without.adapters[0]![name][i])), 'the best-response step changes the speaker');
      } finally {
        await service.close();
      }
    },
  },
];
