/**
 * A diagnostic of nim self-play (issue 25 item 4): whether two LoRA agents playing each other (and an
 * opponent pool of their earlier versions) end stronger against Bouton's player than the warm start
 * they began from. The jobs' nim (NIM_JOB: 2 piles of 1..5); the warm start is either the shipped one
 * (`--weights demos/src/lib/models/nim-gpt2-100k.safetensors`, 1400 SFT steps) or one run here
 * (`--warm-steps N`, with the demo models' 2048 demonstrations, batch 32, rate `--warm-lr`), shared by
 * every seed of `--seeds`. `--pool every,size,share` is trainAgents' opponent pool (rotating the learner
 * through the seats; `0` for none); `--algo`, `--lr`, `--kl`, `--schedule` the seats' settings.
 *
 * Prints per step each seat's mean return (a win +1, a loss −1), and per seed A's score as first
 * mover and B's as second mover against Bouton's player (`nimOptimalPolicy`, stalling when losing;
 * a win 1, a loss 0, as the bench counts) before and after, over the same held-out boards, with
 * perfect play's scores on those boards beside them.
 *
 *   npx deno run -A --config deno.json scripts/nim_probe.ts --warm-steps 200 --steps 48 --seeds 0
 *
 * What it measured is in README.md ("Several agents"); not a test and not part of the bench.
 */
import { parseArgs } from 'node:util';
import { type HostParams, nimEnv, nimOptimalPolicy, openSafetensors, type SeatSettings, trainAgents } from '../src/mod.ts';
import { NIM_JOB } from '../src/runtime/job_envs.ts';
import { nimPiles } from '../src/env/envs/nim.ts';
import { groupEpisodes } from '../src/env/batch.ts';
import { agentsEvalSeed } from '../src/runtime/agents_job.ts';
import { numberFlag } from './probe_games.ts';

const { values: v } = parseArgs({
  options: {
    weights: { type: 'string' }, 'warm-steps': { type: 'string', default: '200' }, 'warm-lr': { type: 'string', default: '0.01' },
    algo: { type: 'string', default: 'grpo' }, lr: { type: 'string', default: '0.005' }, kl: { type: 'string', default: '0' }, schedule: { type: 'string', default: 'constant' },
    steps: { type: 'string', default: '24' }, groups: { type: 'string', default: '8' }, 'group-size': { type: 'string', default: '4' },
    pool: { type: 'string', default: '4,4,0.5' }, seeds: { type: 'string', default: '0' }, eval: { type: 'string', default: '100' }, model: { type: 'string', default: 'gpt2-100k' },
  },
});
const num = numberFlag(v);
const pool = v.pool === '0' ? undefined : (() => {
  const [every, size, share] = v.pool!.split(',').map(Number);
  return { every, size, share, rotate: true };
})();
const seat = (name: string): SeatSettings => ({
  name, algo: v.algo as SeatSettings['algo'], lr: num('lr'), schedule: v.schedule as SeatSettings['schedule'], ...(v.algo === 'grpo' && num('kl') > 0 ? { klBeta: num('kl') } : {}),
});
const base = {
  env: nimEnv(NIM_JOB), seats: [seat('A'), seat('B')], partners: [nimOptimalPolicy(), nimOptimalPolicy()], model: v.model!, context: 512,
  groups: num('groups'), groupSize: num('group-size'), evalGames: num('eval'), ...(pool ? { pool } : {}),
};

let weights: HostParams;
if (v.weights) {
  weights = await (await openSafetensors(await Deno.readFile(v.weights))).allF32();
} else {
  const w = await trainAgents({ ...base, seed: 0, steps: 0, evalGames: 0, warmStart: { steps: num('warm-steps'), demos: 2048, batchSize: 32, lr: num('warm-lr') } });
  console.log(`warm start: ${num('warm-steps')} steps in ${w.wallSeconds.toFixed(0)} s`);
  weights = w.base;
}

// Perfect play on a seed's held-out boards (the evaluation's games, as trainAgents draws them): the
// first mover wins exactly where the piles differ (nim-sum ≠ 0).
const firstWins = (seed: number) => {
  const boards = groupEpisodes(num('eval'), 1, agentsEvalSeed(seed)).map((e) => nimPiles(e.seed, NIM_JOB.piles!, NIM_JOB.maxPile!));
  return boards.filter((p) => (p[0] ^ p[1]) !== 0).length / boards.length;
};

const steps = num('steps');
for (const seed of v.seeds!.split(',').map(Number)) {
  const r = await trainAgents({
    ...base, weights, seed, steps,
    onStep: (m) => console.log(`seed ${seed} step ${m.step} return ${m.reward.map((x) => x.toFixed(3)).join(',')} loss ${m.loss.map((x) => x.toFixed(4)).join(',')} ${m.seconds.toFixed(1)} s`),
  });
  // Scores as the bench counts them: a win 1, a loss 0 (returns are ±1).
  const vsOptimal = (e: typeof r.before) => [e.swappedReturns[1]?.[0], e.swappedReturns[0]?.[1]].map((x) => (x === undefined ? '?' : ((x + 1) / 2).toFixed(3)));
  const [a0, b0] = vsOptimal(r.before), [a1, b1] = vsOptimal(r.after);
  const perfect = firstWins(seed);
  console.log(`seed ${seed} scores vs Bouton: A first ${a0} → ${a1} (perfect ${perfect.toFixed(3)}), B second ${b0} → ${b1} (perfect ${(1 - perfect).toFixed(3)}); together returns ${r.before.returns.map((x) => x.toFixed(3))} → ${r.after.returns.map((x) => x.toFixed(3))}; ${r.wallSeconds.toFixed(0)} s`);
}
