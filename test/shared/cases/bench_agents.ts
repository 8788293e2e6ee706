/**
 * The bench's agents part (test/bench/agents.ts) end to end on the engine at its `--quick` size:
 * tiny-gpt2, a few-step warm start per game, the three games through trainAgents for one seed.
 * Checks the report's shape (per game and seed: the evaluations before and after with each
 * stand-in, a reward curve per seat as long as the run), that its section renders every game, and
 * that the part leaves no pool bytes behind.
 */
import { assert } from 'chai';
import { runAgentsBench } from '../../bench/agents.ts';
import { agentsMarkdown } from '../../bench/agents_report.ts';
import { AGENTS_QUICK, GAMES } from '../../bench/agents_settings.ts';
import type { GpuCase } from '../register.ts';

export const benchAgentsCases: GpuCase[] = [
  {
    name: 'bench agents part (--quick): the three games through trainAgents; report shape; no bytes left',
    async fn(ctx) {
      const live = ctx.pool.stats().liveBytes;
      const rep = await runAgentsBench(AGENTS_QUICK, () => {}, ctx);
      assert.strictEqual(ctx.pool.stats().liveBytes, live, 'the part released its models and clients');
      assert.deepEqual(rep.games.map((g) => g.game), [...GAMES]);
      for (const g of rep.games) {
        assert.lengthOf(g.runs, AGENTS_QUICK.seeds.length);
        for (const r of g.runs) {
          for (const curve of r.rewardCurves) {
            assert.lengthOf(curve, AGENTS_QUICK.games[g.game].steps);
            for (const x of curve) assert.isTrue(Number.isFinite(x), `${g.game}: reward ${x}`);
          }
          for (const e of [r.before, r.after]) {
            // Every seat has a stand-in: both swaps ran, and each gave every seat a return.
            assert.lengthOf(e.swappedReturns, 2);
            for (const ret of e.swappedReturns) assert.lengthOf(ret!, 2);
          }
        }
      }
      const md = agentsMarkdown(rep, '_m_', true, (x) => x);
      for (const h of ['### Signalling game', '### Sale game', '### Nim self-play', 'Quick run']) assert.include(md, h);
    },
  },
];
