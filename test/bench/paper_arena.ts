/**
 * Two agents at once (issue 8, item 3): A and B learn `nim` by playing each other, both updating
 * every step, then each plays held-out games against the random player.
 *
 * The job runner trains against a scripted seat (jobEnv('nim'): the learner is player 1, the
 * random mover player 2), so this loop is built from the same public pieces instead: one shared
 * SFT warm start (the runner's, on the demonstrations' player-1 moves), then two LoRA training
 * clients on that base (A seeded with the arena seed, B with seed + 1; both start as the warm
 * policy, since LoRA's B matrices start at zero). Each step plays `groups` boards `groupSize`
 * times with A moving first and the same boards as often with B moving first (rolloutTurnBased:
 * both seats learning, one sampling call per seat per round), and each agent takes one GRPO step
 * (β = 0, as the runner's) on its own trajectories from both seatings — groups are a board's
 * attempts in one seating, so the advantage compares games of the same board and seat.
 *
 * A's win rate against B per step: the share of that step's games A won, a game nobody won
 * counted as half (winRateAvsB).
 */
import { grpoDatums } from '../../src/algorithms/grpo.ts';
import { grpoLoss } from '../../src/algorithms/loss_spec.ts';
import { Agent } from '../../src/env/agent.ts';
import { groupEpisodes } from '../../src/env/batch.ts';
import { rolloutTurnBased } from '../../src/env/multiagent.ts';
import type { TrajectoryGroup } from '../../src/env/types.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import type { SamplingClient, TrainingClient } from '../../src/runtime/clients.ts';
import { type AgentSettings, evaluate } from '../../src/runtime/evaluate.ts';
import { type JobEnv, jobEnv, NIM_JOB } from '../../src/runtime/job_envs.ts';
import type { NimOptions } from '../../src/env/envs/nim.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import { runTraining, stepSeed } from '../../src/runtime/rl_job.ts';
import { fitting, packForTraining, trainStep } from '../../src/runtime/train_step.ts';
import { int, jobOptions, pos } from '../../src/runtime/train.ts';
import { Rng } from '../../src/util/rng.ts';
import type { ArenaSettings } from './paper_settings.ts';
import { settles, type Settling, winRateAvsB } from './paper_stats.ts';

export interface ArenaStep {
  /** A's score against B over the step's games. */
  readonly winRateAvsB: number;
  /** A's score when moving first, and when moving second. */
  readonly winRateAFirst: number;
  readonly winRateASecond: number;
  readonly games: number;
  /** Mean episode reward of each agent's trajectories. */
  readonly rewardA: number;
  readonly rewardB: number;
  /** Trajectories each agent trained on: those of groups whose games did not all end alike (0: the agent did not train this step). */
  readonly datumsA: number;
  readonly datumsB: number;
  readonly seconds: number;
}

export interface ArenaReport {
  /** The settings, the context, the nim game played (NIM_JOB) and the sampling temperature of every game. */
  readonly settings: ArenaSettings & { readonly maxSeqLen: number; readonly game: NimOptions; readonly temperature: number };
  readonly warmStartSeconds: number;
  /** The warm policy's held-out win rate against the random player (both agents start as it). */
  readonly warmWinRateVsRandom: number;
  readonly steps: readonly ArenaStep[];
  /** [A, B]: final held-out win rates against the random player (each as player 1). */
  readonly winRateVsRandom: readonly [number, number];
  readonly settling: Settling | null;
  /** Issue 8's target: each ≥ 0.8 against random. */
  readonly beatsRandom: boolean;
}

const TARGET_VS_RANDOM = 0.8;

/** Refuses settings the run would only fail on later (the settling test needs windows of ≥ 2 steps): a ConfigError naming the field. */
export function checkArenaSettings(s: ArenaSettings): void {
  for (const [k, min] of [['steps', 0], ['groups', 1], ['groupSize', 1], ['evalEpisodes', 1], ['window', 2]] as const) int(`arena.${k}`, s[k], min);
  pos('arena.lr', s.lr);
}

export async function runArena(ctx: GpuContext, s: ArenaSettings, log: (line: string) => void): Promise<ArenaReport> {
  checkArenaSettings(s);
  const tok = new ByteTokenizer();
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
  const opened: { close(): Promise<void> }[] = [];
  let modelId: string | null = null;
  try {
    // The warm start: the runner's (a job with no RL steps); its trained base is the warm weights.
    const job = jobOptions({ env: 'nim', model: s.model, seed: s.seed, steps: 0, warmStart: s.warmStart, evalEpisodes: 0, lr: s.lr, id: 'arena-warm',
      onStep: (m) => (m.step + 1) % 50 === 0 && log(`arena warm start ${m.step + 1}/${s.warmStart.steps}: loss ${m.loss.toFixed(4)}`) });
    const t0 = performance.now();
    const warm = await runTraining(service, job);
    const warmStartSeconds = (performance.now() - t0) / 1000;
    if (!warm.trained.base || !job.lora) throw new Error('arena: the warm start kept no base for LoRA');
    const env = job.env as Extract<JobEnv, { kind: 'game' }>;
    const agentSettings: AgentSettings = { tokenizer: tok, maxNewTokens: job.maxNewTokens, maxSequenceTokens: job.model.maxSeqLen, temperature: job.temperature };
    const pack = { rows: job.rows, maxSeqLen: job.model.maxSeqLen, padId: tok.padId };
    modelId = await service.createModel(job.model, { params: warm.trained.base, id: 'arena-base' });
    const clients: TrainingClient[] = [];
    for (const [i, name] of ['A', 'B'].entries()) {
      const c = await service.createTrainingClient({ modelId, trainable: 'lora', lora: job.lora, seed: s.seed + i, id: `arena-${name}` });
      opened.push(c);
      clients.push(c);
    }
    const samplers: SamplingClient[] = [await clients[0].samplingClient(), await clients[1].samplingClient()];
    const agent = (k: number) => new Agent({
      sample: samplers[k].sample, id: 'AB'[k], tokenizer: tok, maxTurns: env.maxTurns, maxNewTokens: job.maxNewTokens,
      maxSequenceTokens: job.model.maxSeqLen, temperature: job.temperature, ...(env.format ? { format: env.format } : {}),
    });
    const warmVsRandom = (await evaluate(jobEnv('nim'), samplers[0].sample, s.evalEpisodes, s.seed, agentSettings)).success;
    log(`arena: warm start ${warmStartSeconds.toFixed(0)} s; the warm policy wins ${warmVsRandom.toFixed(3)} of held-out games against random`);

    const loss = grpoLoss({ klBeta: 0 });
    const steps: ArenaStep[] = [];
    for (let step = 0; step < s.steps; step++) {
      const t1 = performance.now();
      const seed = stepSeed(s.seed, step);
      const boards = groupEpisodes(s.groups, s.groupSize, seed);
      const [A, B] = [agent(0), agent(1)];
      const opts = (k: number) => ({ seed: new Rng(seed, 0xa7e4a + k).nextU32(), maxSteps: 2 * env.maxTurns });
      // The same boards with A first, then with B first.
      const aFirst = await rolloutTurnBased(env.spec, [A, B], boards, opts(0));
      const bFirst = await rolloutTurnBased(env.spec, [B, A], boards, opts(1));
      const groupsOf = (aSeat: 0 | 1): TrajectoryGroup[] => [...(aFirst.seats[aSeat]?.groups ?? []), ...(bFirst.seats[1 - aSeat]?.groups ?? [])];
      const mine = [groupsOf(0), groupsOf(1)];
      const trained = [0, 0];
      for (const k of [0, 1]) {
        const datums = fitting(grpoDatums(mine[k], { refLogprobs: (t) => t.logprobsT.slice(1), skipUniformGroups: true }), pack.maxSeqLen);
        trained[k] = datums.length;
        if (datums.length === 0) continue;
        await trainStep(clients[k], packForTraining(datums, pack, seed + k, loss.aggregation).batches, loss, { lr: s.lr, maxGradNorm: job.maxGradNorm });
        await samplers[k].close();
        samplers[k] = await clients[k].samplingClient();
      }
      const games = [...aFirst.games, ...bFirst.games];
      const meanReward = (gs: TrajectoryGroup[]) => {
        const rs = gs.flatMap((g) => g.trajectories.map((t) => t.reward));
        return rs.length === 0 ? 0 : rs.reduce((a, b) => a + b, 0) / rs.length;
      };
      const r: ArenaStep = {
        winRateAvsB: winRateAvsB(games, (i) => (i < aFirst.games.length ? 0 : 1)),
        winRateAFirst: winRateAvsB(aFirst.games, () => 0),
        winRateASecond: winRateAvsB(bFirst.games, () => 1),
        games: games.length, rewardA: meanReward(mine[0]), rewardB: meanReward(mine[1]), datumsA: trained[0], datumsB: trained[1], seconds: (performance.now() - t1) / 1000,
      };
      steps.push(r);
      log(`arena ${step + 1}/${s.steps}: A vs B ${r.winRateAvsB.toFixed(3)} (A first ${r.winRateAFirst.toFixed(2)}, B first ${(1 - r.winRateASecond).toFixed(2)} for B) over ${r.games} games; reward A ${r.rewardA.toFixed(2)} B ${r.rewardB.toFixed(2)}; trained on ${r.datumsA} and ${r.datumsB} trajectories (${r.seconds.toFixed(1)} s)`);
    }
    const vs: number[] = [];
    for (const k of [0, 1]) vs.push((await evaluate(jobEnv('nim'), samplers[k].sample, s.evalEpisodes, s.seed, agentSettings)).success);
    for (const sm of samplers) await sm.close();
    const winRateVsRandom: [number, number] = [vs[0], vs[1]];
    log(`arena: held-out win rate against random: A ${vs[0].toFixed(3)}, B ${vs[1].toFixed(3)}`);
    const curve = steps.map((x) => x.winRateAvsB);
    return {
      settings: { ...s, maxSeqLen: job.model.maxSeqLen, game: NIM_JOB, temperature: job.temperature }, warmStartSeconds, warmWinRateVsRandom: warmVsRandom, steps, winRateVsRandom,
      settling: curve.length >= 2 * s.window ? settles(curve, s.window, 2 * s.groups * s.groupSize) : null,
      beatsRandom: vs.every((v) => v >= TARGET_VS_RANDOM),
    };
  } finally {
    for (const c of opened) await c.close();
    if (modelId) await service.releaseModel(modelId);
    await service.close();
  }
}
