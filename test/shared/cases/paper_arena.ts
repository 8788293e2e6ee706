/**
 * The paper bench's two-agent arena (test/bench/paper_arena.ts) end to end on the engine, at a size
 * the Deno suite affords: tiny-gpt2, a 3-step SFT warm start on the job's nim, two LoRA agents
 * learning by playing each other for 4 steps, each then playing held-out games against the random
 * player. Checks the report's shape (games per step, win rates on the grid their game counts
 * allow, the settling test's presence), that the same settings twice give the same report
 * (seconds aside), and that the arena leaves no pool bytes behind.
 */
import { assert } from 'chai';
import { ConfigError } from '../../../src/errors.ts';
import { type ArenaReport, runArena } from '../../bench/paper_arena.ts';
import type { ArenaSettings } from '../../bench/paper_settings.ts';
import type { GpuCase } from '../register.ts';

const SETTINGS: ArenaSettings = {
  model: 'tiny-gpt2', seed: 3, warmStart: { steps: 3, demos: 16, batchSize: 4, lr: 1e-2 },
  steps: 4, groups: 1, groupSize: 2, lr: 1e-2, evalEpisodes: 4, window: 2,
};

/** The report without its timings. */
function timeless(r: ArenaReport): unknown {
  return { ...r, warmStartSeconds: 0, steps: r.steps.map((s) => ({ ...s, seconds: 0 })) };
}

/** x is a share of n games, a game nobody won counted as half. */
function onGrid(x: number, n: number, what: string): void {
  assert.isAtLeast(x, 0, what);
  assert.isAtMost(x, 1, what);
  assert.strictEqual(Math.round(2 * n * x), 2 * n * x, `${what} = ${x} is not a multiple of 1/${2 * n}`);
}

export const paperArenaCases: GpuCase[] = [
  {
    name: 'paper arena: two LoRA agents learn nim from one warm start; report shape, same settings → same report, no bytes left',
    async fn(ctx) {
      // Settings the run could only fail on at its end are refused before any work.
      for (const bad of [{ window: 1 }, { window: 2.5 }, { groups: 0 }, { lr: 0 }]) {
        let err: unknown = null;
        try {
          await runArena(ctx, { ...SETTINGS, ...bad }, () => {});
        } catch (e) {
          err = e;
        }
        assert.instanceOf(err, ConfigError, JSON.stringify(bad));
        assert.strictEqual((err as ConfigError).field, `arena.${Object.keys(bad)[0]}`);
      }
      const live = ctx.pool.stats().liveBytes;
      const a = await runArena(ctx, SETTINGS, () => {});
      assert.strictEqual(ctx.pool.stats().liveBytes, live, 'the arena released its models and clients');
      assert.lengthOf(a.steps, SETTINGS.steps);
      for (const [i, s] of a.steps.entries()) {
        // groups × groupSize games with A first and as many with B first.
        assert.strictEqual(s.games, 2 * SETTINGS.groups * SETTINGS.groupSize, `step ${i} games`);
        onGrid(s.winRateAvsB, s.games, `step ${i} A vs B`);
        onGrid(s.winRateAFirst, s.games / 2, `step ${i} A first`);
        onGrid(s.winRateASecond, s.games / 2, `step ${i} A second`);
        for (const r of [s.rewardA, s.rewardB]) assert.isTrue(r >= -1 && r <= 1, `step ${i} mean reward ${r}`);
        // Each agent's trajectories: its half of the self-play games, those of uniform groups left out.
        for (const d of [s.datumsA, s.datumsB]) assert.isTrue(Number.isInteger(d) && d >= 0 && d <= s.games, `step ${i} datums ${d}`);
      }
      assert.lengthOf(a.winRateVsRandom, 2);
      for (const x of [a.warmWinRateVsRandom, ...a.winRateVsRandom]) onGrid(x, SETTINGS.evalEpisodes, 'win rate vs random');
      assert.strictEqual(a.beatsRandom, a.winRateVsRandom.every((x) => x >= 0.8));
      assert.isNotNull(a.settling, 'two windows of two steps each');
      assert.strictEqual(a.settings.maxSeqLen, 512, "the job's nim context");
      const b = await runArena(ctx, SETTINGS, () => {});
      assert.deepEqual(timeless(b), timeless(a), 'the same settings give the same report');
    },
  },
];
