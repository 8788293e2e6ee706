/**
 * Several agents that learn from each other: `trainAgents({ env, seats })` trains one LoRA agent
 * per seat of a turn-based game, all on one shared base, each with its own algorithm (any of the
 * job runner's, JOB_ALGORITHMS) and learning rate. The agents address each other through the game:
 * what one says reaches the others only as their observations (the multi-agent protocol,
 * src/env/multiagent.ts), so each agent's trajectories hold its own actions alone and its loss
 * gives it credit for its own tokens only.
 *
 * The run: a shared full-parameter SFT warm start on the game's demonstrations (each demonstration
 * names the seat it teaches; the job runner's warm start, as `npm run train` runs it) — or given
 * `weights` — then per step `groups` games played `groupSize` times by all the agents at once
 * (one sampling call per seat per round), and one optimizer step per agent on its own groups
 * (group-relative advantages compare attempts at the same game from the same seat). Held-out games
 * before and after: the agents together, and for each seat with a scripted stand-in in `partners`,
 * the others with that stand-in in its place — the partner-swap test: when an agent's contribution
 * is real, success falls without it.
 *
 * With `pool` (src/runtime/agents_pool.ts) a share of each step's groups become, for each learner,
 * games against frozen copies of the other agents taken every few steps — opponents that differ
 * from group to group — and train it alongside its games with the live agents.
 *
 * A seat with `bestResponse` takes one more optimizer step per step after its own: supervised, on the
 * games as they would have gone with its best one-to-one response to its partners' current policies
 * (src/runtime/agents_best_response.ts).
 *
 * Everything is seeded (the step's games, each seat's sampler streams, each adapter's init, the
 * pool's draws): the same settings on the same adapter give the same bytes.
 */
import { type AlgoStepContext, JOB_ALGORITHMS } from './job_algorithms.ts';
import { expectedRewards, type HindsightPlays, hindsightStep, replayHindsight } from './agents_hindsight.ts';
import { type BestResponse, bestResponse } from './agents_best_response.ts';
import { bonusSteps, informationBonus } from '../algorithms/information_bonus.ts';
import type { ReplayAgentOptions } from '../env/demos.ts';
import { Agent } from '../env/agent.ts';
import { groupEpisodes } from '../env/batch.ts';
import { rolloutTurnBased, type Seat, type TurnBasedBatch } from '../env/multiagent.ts';
import type { Trajectory, TrajectoryGroup, TurnBasedEnvSpec } from '../env/types.ts';
import { isSuccess } from './evaluate.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import { EMPTY_BASELINE } from '../algorithms/advantages.ts';
import { acquireGpu } from '../gpu/device.ts';
import { LocalService } from './local_service.ts';
import { Rng } from '../util/rng.ts';
import type { HostParams, SamplingClient, ServiceClient, TrainingClient } from './clients.ts';
import { JOB_FORMAT, type JobEnv } from './job_envs.ts';
import { runTraining, stepSeed } from './rl_job.ts';
import { jobOptions, TRAIN_DEFAULTS } from './train.ts';
import { trainStep, withPolicyLogprobs } from './train_step.ts';
import { scheduledLr } from './sft_job.ts';
import { OpponentPool, playPoolGames, poolGroups } from './agents_pool.ts';
import { type AgentsEvaluation, type AgentsResult, type AgentsSettings, type AgentsStepMetrics, checkAgentsSettings, seatVocabulary } from './agents_settings.ts';

const GAME_STREAM = 0x5ea7;

/** Mean reward of the groups' trajectories (0 when there are none). */
function meanReward(groups: readonly TrajectoryGroup[]): number {
  const rs = groups.flatMap((g) => g.trajectories.map((t) => t.reward));
  return rs.length === 0 ? 0 : rs.reduce((a, b) => a + b, 0) / rs.length;
}

/** `recent` with `item` added and only its last `n` entries kept (oldest dropped first); returns it. */
function keepLast<T>(recent: T[], item: T, n: number): T[] {
  recent.push(item);
  recent.splice(0, Math.max(0, recent.length - n));
  return recent;
}

/** Each seat's mean return over `batch`'s games. */
function meanReturns(batch: TurnBasedBatch, players: number): number[] {
  const n = batch.games.length;
  return Array.from({ length: players }, (_, p) => (n === 0 ? 0 : batch.games.reduce((sum, g) => sum + g.rewardsP[p], 0) / n));
}

/** Share of `batch`'s games that were a success for its first learning seat (null: no agent played, only scripts). */
function successShare(spec: TurnBasedEnvSpec, batch: TurnBasedBatch): number | null {
  const seat = batch.seats.find((b) => b !== null);
  if (!seat) return null;
  const trajs = seat.groups.flatMap((g) => g.trajectories);
  return batch.games.length === 0 ? 0 : trajs.filter(spec.success ?? isSuccess).length / batch.games.length;
}

/** The seed of trainAgents' held-out games for a run seed (groupEpisodes(evalGames, 1, this): the same games before, after and for each stand-in). */
export const agentsEvalSeed = (seed: number): number => new Rng(seed, 0xe7a1).nextU32();

/**
 * Trains one agent per seat of `s.env` on a shared base; see the header. Settings are checked
 * before any GPU work. A given `service` stays open; without one the run acquires the device.
 */
export async function trainAgents(s: AgentsSettings): Promise<AgentsResult> {
  checkAgentsSettings(s);
  if (s.service) return await runAgents(s.service, s);
  const ctx = await acquireGpu({ label: 'trainAgents' });
  const tok = new ByteTokenizer();
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
  try {
    return await runAgents(service, s);
  } finally {
    await service.close();
    ctx.destroy();
  }
}

/** The warm-start job trainAgents runs first (or, given `weights`, the job whose config they must fit). */
function agentsJob(s: AgentsSettings) {
  const env: JobEnv = { name: s.env.name, kind: 'game', spec: s.env, maxTurns: s.maxTurns ?? 16, maxNewTokens: s.maxNewTokens ?? 24, format: JOB_FORMAT, context: s.context ?? 256 };
  const rank = Math.max(...s.seats.map((x) => x.loraRank ?? TRAIN_DEFAULTS.loraRank));
  // The shared warm start is the job runner's (a job with no RL steps): its base is the warm weights.
  const w = s.warmStart === undefined ? { steps: 200 } : s.warmStart;
  const job = jobOptions({
    env, model: s.model ?? 'gpt2-100k', seed: s.seed ?? 0, steps: 0, evalEpisodes: 0, lora: { rank }, progress: false,
    warmStart: w === null || s.weights ? null : w, ...(s.weights ? { weights: s.weights } : {}), id: `agents-${s.env.name}`,
  });
  return { env, job };
}

/**
 * The shared base's config trainAgents builds for `s` (the preset, its context raised to the
 * game's): what given `weights` must have been made for, e.g. a page's shipped warm start.
 */
export function agentsModelConfig(s: AgentsSettings): ModelConfig {
  checkAgentsSettings(s);
  return agentsJob({ ...s, warmStart: null }).job.model;
}

async function runAgents(service: ServiceClient, s: AgentsSettings): Promise<AgentsResult> {
  const t0 = performance.now();
  const seed = s.seed ?? 0;
  const { env, job } = agentsJob(s);
  const base = s.weights ?? (await runTraining(service, job)).trained.base;
  if (!base) throw new Error('trainAgents: the warm start kept no base');
  const cfg = job.model;
  const tok = new ByteTokenizer();
  const pack = { rows: job.rows, maxSeqLen: cfg.maxSeqLen, padId: tok.padId };
  const modelId = await service.createModel(cfg, { params: base, id: `agents-${s.env.name}-base` });
  const clients: TrainingClient[] = [];
  // Per seat: its learner (null for a scripted seat).
  const ctxs: (AlgoStepContext | null)[] = [];
  const samplers: (SamplingClient | null)[] = [];
  const pool = s.pool ? new OpponentPool(service, modelId, s.seats.length, s.pool.size) : null;
  try {
    const loras: (LoraConfig | null)[] = s.seats.map((x) => (x.script ? null : { ...job.lora!, rank: x.loraRank ?? TRAIN_DEFAULTS.loraRank, alpha: 2 * (x.loraRank ?? TRAIN_DEFAULTS.loraRank) }));
    for (const [k, seat] of s.seats.entries()) {
      const lora = loras[k];
      if (!lora) {
        ctxs.push(null);
        samplers.push(null);
        continue;
      }
      const algo = JOB_ALGORITHMS[seat.algo ?? 'grpo'];
      const make = (id: string) => service.createTrainingClient({ modelId, trainable: 'lora', lora, seed: seed + k, valueHead: algo.valueHead && id === seat.name, id: `agents/${id}` });
      const policy = await make(seat.name);
      clients.push(policy);
      const klBeta = seat.klBeta ?? 0;
      const reference = algo.reference || klBeta > 0 ? await make(`${seat.name}-reference`) : null;
      if (reference) clients.push(reference);
      ctxs.push({ policy, reference, pack, baseline: EMPTY_BASELINE, klBeta, entropyCoef: seat.entropyCoef ?? 0 });
      samplers.push(await policy.samplingClient());
    }
    const vocab = s.seats.map((_, k) => seatVocabulary(s, k));
    // Seat k's agent on `sampler` (its own adapter, or a pool copy of it): the seat's tokens per action.
    const agentOn = (k: number, sampler: SamplingClient, id: string) => new Agent({
      sample: sampler.sample, id, tokenizer: tok, maxTurns: env.maxTurns, maxNewTokens: s.seats[k].maxNewTokens ?? env.maxNewTokens,
      maxSequenceTokens: cfg.maxSeqLen, temperature: s.seats[k].temperature ?? job.temperature, format: JOB_FORMAT,
      ...(vocab[k] ? { allowedTokens: vocab[k] } : {}),
    });
    const agent = (k: number): Seat => s.seats[k].script ?? agentOn(k, samplers[k]!, s.seats[k].name);
    // Games as hindsight says they should have gone, replayed bound by the context alone (replayHindsight).
    const hindsightReplay: ReplayAgentOptions = { tokenizer: tok, maxNewTokens: cfg.maxSeqLen, maxSequenceTokens: cfg.maxSeqLen, format: JOB_FORMAT };
    const play = (seats: Seat[], games: number, gameSeed: number) =>
      rolloutTurnBased(s.env, seats, groupEpisodes(games, 1, gameSeed), { seed: new Rng(gameSeed, GAME_STREAM).nextU32(), maxSteps: env.maxTurns * s.env.numPlayers });
    const evaluateAll = async (): Promise<AgentsEvaluation> => {
      const n = s.evalGames ?? 128;
      const P = s.seats.length;
      if (n === 0) return { together: 0, returns: s.seats.map(() => 0), swapped: s.seats.map(() => null), swappedReturns: s.seats.map(() => null) };
      const evalSeed = agentsEvalSeed(seed);
      const all = await play(s.seats.map((_, k) => agent(k)), n, evalSeed);
      const swapped: (number | null)[] = [];
      const swappedReturns: (number[] | null)[] = [];
      for (let k = 0; k < P; k++) {
        const p = s.partners?.[k];
        const b = p ? await play(s.seats.map((_, j) => (j === k ? p : agent(j))), n, evalSeed) : null;
        swapped.push(b ? successShare(s.env, b) : null);
        swappedReturns.push(b ? meanReturns(b, P) : null);
      }
      return { together: successShare(s.env, all) ?? 0, returns: meanReturns(all, P), swapped, swappedReturns };
    };

    // Per seat: its hindsight plays of its last steps, oldest first (SeatSettings.hindsightSteps).
    const recentPlays: (readonly Trajectory[])[][] = s.seats.map(() => []);
    // Per seat with bestResponse: the action each situation was given when last met (its `keep` bonus goes to it).
    const assignedBefore = s.seats.map(() => new Map<string, string>());
    // Per seat with an information bonus over several steps: its trajectories of its previous steps, oldest first.
    const recentActs: (readonly Trajectory[])[][] = s.seats.map(() => []);
    const before = await evaluateAll();
    const steps: AgentsStepMetrics[] = [];
    const totalSteps = s.steps ?? 20;
    for (let step = 0; step < totalSteps; step++) {
      s.signal?.throwIfAborted();
      const ts = performance.now();
      const gameSeed = stepSeed(seed, step);
      const [G, gs] = [s.groups ?? 8, s.groupSize ?? 8];
      const nPool = s.pool ? poolGroups(s.pool, G) : 0;
      if (pool && step % s.pool!.every === 0) {
        for (const [k, seat] of s.seats.entries()) await pool.add(k, step, loras[k]!, await ctxs[k]!.policy.weights(), seat.name);
      }
      const batch = await rolloutTurnBased(s.env, s.seats.map((_, k) => agent(k)), groupEpisodes(G - nPool, gs, gameSeed), {
        seed: new Rng(gameSeed, GAME_STREAM).nextU32(), maxSteps: env.maxTurns * s.env.numPlayers,
      });
      const poolPlay = pool ? await playPoolGames({
        spec: s.env, pool, rotate: s.pool!.rotate ?? false, learner: (k) => agentOn(k, samplers[k]!, s.seats[k].name), copy: (k, c) => agentOn(k, c, `${s.seats[k].name}-copy`), step,
        groups: nPool, groupSize: gs, firstGroupId: G - nPool, firstEpisode: (G - nPool) * gs, seed: gameSeed, maxSteps: env.maxTurns * s.env.numPlayers,
      }) : null;
      // Each seat's step groups (its pool games too); its hindsight plays replayed once a step, for
      // its own hindsight step and its partners' expected rewards alike.
      const groupsOf = (k: number): TrajectoryGroup[] => [...(batch.seats[k]?.groups ?? []), ...(poolPlay?.groupsP[k] ?? [])];
      const replayed = new Map<number, Promise<HindsightPlays>>();
      const playsOf = (k: number) => replayed.get(k) ?? replayed.set(k, replayHindsight(s.env, k, groupsOf(k), hindsightReplay)).get(k)!;
      // Expected rewards read every partner's policy before any seat's update (SeatSettings.expectedReward).
      const expected: (TrajectoryGroup[] | null)[] = [];
      for (const [k, seat] of s.seats.entries()) {
        if (!seat.expectedReward) {
          expected.push(null);
          continue;
        }
        const partners = await Promise.all(ctxs.flatMap((c, j) => (j === k || !c ? [] : [playsOf(j).then((plays) => ({ client: c.policy, plays }))])));
        expected.push(await expectedRewards(groupsOf(k), partners, pack));
      }
      // Best responses likewise read every partner's policy before any update (SeatSettings.bestResponse).
      const responses: (BestResponse | null)[] = [];
      for (const [k, seat] of s.seats.entries()) {
        const partners = ctxs.flatMap((c, j) => (j === k || !c ? [] : [{ seat: j, client: c.policy }]));
        const br = typeof seat.bestResponse === 'object' ? seat.bestResponse : {};
        const own = br.own ? { client: ctxs[k]!.policy, weight: br.own } : undefined;
        const r = seat.bestResponse ? await bestResponse(s.env, k, groupsOf(k), partners, pack, hindsightReplay, own, { previous: assignedBefore[k], nats: br.keep ?? 0 }) : null;
        r?.table.forEach((row, i) => assignedBefore[k].set(row.situation, r.situations[i].action));
        responses.push(r);
      }
      // Seat k's hindsight plays of this step added to its last steps'; all it keeps, oldest first.
      const rememberPlays = async (k: number): Promise<Trajectory[]> => {
        return keepLast(recentPlays[k], (await playsOf(k)).trajectories, s.seats[k].hindsightSteps ?? 1).flat();
      };
      const reward: number[] = [], datums: number[] = [], loss: number[] = [];
      const lr = s.seats.map((x) => (x.script ? 0 : scheduledLr(x.lr ?? TRAIN_DEFAULTS.lr, step, totalSteps, x.schedule)));
      for (const [k, seat] of s.seats.entries()) {
        const c = ctxs[k];
        if (!c) {
          // A scripted seat: its mean return in the step's games; it does not learn.
          const rs = meanReturns(batch, s.seats.length);
          reward.push(rs[k]);
          datums.push(0);
          loss.push(0);
          continue;
        }
        const groups = groupsOf(k);
        reward.push(meanReward(groups));
        // Each agent on its own trajectories: its own tokens, its own algorithm and rate.
        const credited = expected[k] ?? groups;
        const paid = seat.informationBonus ? informationBonus(credited, seat.informationBonus, s.env.message, recentActs[k].flat()) : credited;
        if (seat.informationBonus) keepLast(recentActs[k], groups.flatMap((g) => g.trajectories), bonusSteps(seat.informationBonus) - 1);
        // A seat sampling over its vocabulary alone: the old-policy terms over the whole one (SeatSettings.vocabulary).
        const st = seat.hindsight ? hindsightStep(await rememberPlays(k), pack, gameSeed + k)
          : await JOB_ALGORITHMS[seat.algo ?? 'grpo'].step(c, vocab[k] ? await withPolicyLogprobs(c.policy, paid, pack) : paid, gameSeed + k);
        datums.push(st.datums);
        const out = st.batches.length === 0 ? null : await trainStep(c.policy, st.batches, st.loss, { lr: lr[k], maxGradNorm: job.maxGradNorm });
        loss.push(out === null ? 0 : st.reportedLoss ?? out.loss);
        // Then its best response, supervised, at the same rate.
        const br = responses[k];
        const brStep = br && br.plays.length > 0 ? hindsightStep(br.plays, pack, gameSeed + k + 0xb5) : null;
        if (brStep && brStep.batches.length > 0) await trainStep(c.policy, brStep.batches, brStep.loss, { lr: lr[k], maxGradNorm: job.maxGradNorm });
        else if (out === null) continue;
        await samplers[k]!.close();
        samplers[k] = await c.policy.samplingClient();
      }
      const first = batch.games[0]?.episodeId;
      const transcript = batch.seats.map((b) => b?.groups.flatMap((g) => g.trajectories).find((t) => t.episodeId === first)?.turns.map((t) => t.action) ?? []);
      const m: AgentsStepMetrics = {
        step, success: successShare(s.env, batch) ?? 0, reward, datums, loss, lr, transcript,
        expected: expected.map((gs) => (gs === null ? null : meanReward(gs))),
        bestResponse: responses.map((r) => r?.situations.map((x, i) => ({ situation: tok.decode(r.table[i].situation.split(',').map(Number)), ...x })) ?? null),
        ...(pool && poolPlay ? { pool: { copies: pool.steps(), games: poolPlay.games, reward: poolPlay.reward } } : {}), seconds: (performance.now() - ts) / 1000,
      };
      steps.push(m);
      s.onStep?.(m);
    }
    s.signal?.throwIfAborted();
    const after = await evaluateAll();
    const adapters: (HostParams | null)[] = [];
    for (const c of ctxs) adapters.push(c ? await c.policy.weights() : null);
    return { before, after, steps, cfg, loras, base, adapters, wallSeconds: (performance.now() - t0) / 1000 };
  } finally {
    await pool?.close();
    for (const sm of samplers) await sm?.close().catch(() => {});
    for (const c of clients) await c.close().catch(() => {});
    await service.releaseModel(modelId).catch(() => {});
  }
}
