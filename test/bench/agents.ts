/**
 * The `agents` part (issue 25): several agents learning at once, through the public trainAgents,
 * on its three games — the signalling game (cooperative, a code from scratch), the sale game
 * (competitive, private values) and nim (self-play with an opponent pool) — each over the seeds
 * of the settings from one shared warm start per game, with each run's evaluations before and
 * after (the agents together, and each one against a fixed scripted partner or opponent) and its
 * per-step reward curves. agents_report.ts turns the runs into figures and verdicts.
 */
import { readFile } from 'node:fs/promises';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { acquireGpu, type GpuContext } from '../../src/gpu/device.ts';
import { bargainEnv, bargainRandomSeller, bargainTruthfulBuyer } from '../../src/env/envs/bargain.ts';
import { nimEnv, nimOptimalPolicy } from '../../src/env/envs/nim.ts';
import { signalEnv, signalRandomListener, signalRandomSpeaker } from '../../src/env/envs/signal.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { agentsModelConfig, trainAgents } from '../../src/runtime/agents_job.ts';
import type { AgentsEvaluation, AgentsSettings } from '../../src/runtime/agents_settings.ts';
import type { HostParams } from '../../src/runtime/clients.ts';
import { NIM_JOB } from '../../src/runtime/job_envs.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import { type AgentsBenchSettings, type GameName, GAMES, type GameRun } from './agents_settings.ts';

/** One seed's run of one game. */
export interface GameSeedRun {
  readonly seed: number;
  readonly before: AgentsEvaluation;
  readonly after: AgentsEvaluation;
  /** Per seat: mean reward per step (pool games included); the step's success with the live agents. */
  readonly rewardCurves: readonly (readonly number[])[];
  readonly successCurve: readonly number[];
  /** Per seat: steps in which it trained on something. */
  readonly trainedSteps: readonly number[];
  /** What each seat said in the last step's first game. */
  readonly lastTranscript: readonly (readonly string[])[];
  readonly seconds: number;
}

export interface GameReport {
  readonly game: GameName;
  readonly run: GameRun;
  readonly seats: readonly string[];
  /** Where the shared warm start came from, in words. */
  readonly warmStart: string;
  readonly runs: readonly GameSeedRun[];
}

export interface AgentsBenchReport {
  readonly settings: AgentsBenchSettings;
  readonly games: readonly GameReport[];
  readonly seconds: number;
}

/** Each game's environment, seat names and scripted stand-ins (the partner-swap test's fixed partners and opponents). */
export function gameSpec(game: GameName, run?: GameRun): Pick<AgentsSettings, 'env' | 'partners' | 'context'> & { seats: readonly [string, string] } {
  switch (game) {
    case 'signal': {
      const o = run?.signal ?? { symbols: 'abcd' };
      return { env: signalEnv(o), seats: ['speaker', 'listener'], partners: [signalRandomSpeaker(o), signalRandomListener(o)] };
    }
    case 'bargain':
      return { env: bargainEnv(), seats: ['seller', 'buyer'], partners: [bargainRandomSeller(), bargainTruthfulBuyer()] };
    case 'nim':
      return { env: nimEnv(NIM_JOB), seats: ['A', 'B'], partners: [nimOptimalPolicy(), nimOptimalPolicy()], context: 512 };
  }
}

/** The trainAgents settings of one game and seed (weights aside). */
export function gameSettings(s: AgentsBenchSettings, game: GameName, seed: number): AgentsSettings {
  const g = s.games[game];
  const spec = gameSpec(game, g);
  return {
    env: spec.env, partners: spec.partners, ...(spec.context ? { context: spec.context } : {}), model: s.model, seed,
    seats: spec.seats.map((name, k) => ({ name, lr: g.lr[k], ...(g.klBeta[k] > 0 ? { klBeta: g.klBeta[k] } : {}), ...(g.seats?.[k] ?? {}) })),
    steps: g.steps, groups: g.groups, groupSize: g.groupSize, evalGames: g.evalGames, ...(g.pool ? { pool: g.pool } : {}),
  };
}

/** The file scripts/demo_models.ts writes for a game's shared warm start. */
export const shippedFile = (game: GameName, model: string) => new URL(`../../demos/src/lib/models/${game}-${model}.safetensors`, import.meta.url);

/** Where a game's shared warm start comes from: its own run here, else the settings' ('shipped', or a run here). */
export const gameWarmStart = (s: AgentsBenchSettings, game: GameName) => s.games[game].warmStart ?? s.warmStart;

/** A game's shared warm start: the shipped one (its config checked against what trainAgents builds) or one run here. */
async function warmWeights(ctx: GpuContext, s: AgentsBenchSettings, game: GameName, log: (l: string) => void): Promise<{ weights: HostParams; source: string }> {
  const settings = gameSettings(s, game, s.seeds[0]);
  const w = gameWarmStart(s, game);
  if (w === 'shipped') {
    const file = shippedFile(game, s.model);
    const f = await openSafetensors(new Uint8Array(await readFile(file)));
    const want = JSON.stringify(agentsModelConfig(settings));
    if (f.metadata['webtinker.model'] !== want) {
      throw new Error(`${file.pathname}: its config is not the one trainAgents builds for ${game} (${want}); rewrite it with scripts/demo_models.ts ${game}/${s.model}`);
    }
    const weights = await f.allF32();
    const made = JSON.parse(f.metadata['webtinker.made'] ?? '{}') as { warmStart?: { steps?: number }; seconds?: number };
    return { weights, source: `the shipped warm start (demos/src/lib/models/${game}-${s.model}.safetensors, ${made.warmStart?.steps ?? 200} SFT steps, written by scripts/demo_models.ts)` };
  }
  const r = await run(ctx, { ...settings, steps: 0, evalGames: 0, warmStart: w });
  log(`agents ${game}: warm start of ${w.steps} steps in ${r.wallSeconds.toFixed(0)} s`);
  return { weights: r.base, source: `a ${w.steps}-step warm start run here (seed ${s.seeds[0]}'s settings, shared by every seed)` };
}

async function run(ctx: GpuContext, settings: AgentsSettings) {
  const tok = new ByteTokenizer();
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
  try {
    return await trainAgents({ ...settings, service });
  } finally {
    await service.close();
  }
}

/** Runs every game over every seed; on `given` (kept open) or a device acquired for the part. */
export async function runAgentsBench(s: AgentsBenchSettings, log: (line: string) => void, given?: GpuContext): Promise<AgentsBenchReport> {
  const t0 = performance.now();
  const ctx = given ?? await acquireGpu({ label: 'bench-agents' });
  const games: GameReport[] = [];
  try {
    for (const game of GAMES) {
      const { weights, source } = await warmWeights(ctx, s, game, log);
      const runs: GameSeedRun[] = [];
      for (const seed of s.seeds) {
        const settings = gameSettings(s, game, seed);
        const names = settings.seats.map((x) => x.name);
        const r = await run(ctx, {
          ...settings, weights,
          onStep: (m) => log(`agents ${game} seed ${seed} step ${m.step + 1}/${settings.steps}: success ${m.success.toFixed(3)}, reward ${m.reward.map((x, k) => `${names[k]} ${x.toFixed(3)}`).join(', ')}, trained on ${m.datums.join('/')} (${m.seconds.toFixed(1)} s)`),
        });
        runs.push({
          seed, before: r.before, after: r.after,
          rewardCurves: names.map((_, k) => r.steps.map((m) => m.reward[k])),
          successCurve: r.steps.map((m) => m.success),
          trainedSteps: names.map((_, k) => r.steps.filter((m) => m.datums[k] > 0).length),
          lastTranscript: r.steps.at(-1)?.transcript ?? [],
          seconds: r.wallSeconds,
        });
        log(`agents ${game} seed ${seed}: together ${r.before.together.toFixed(3)} → ${r.after.together.toFixed(3)}, returns ${r.before.returns.map((x) => x.toFixed(3))} → ${r.after.returns.map((x) => x.toFixed(3))} (${r.wallSeconds.toFixed(0)} s)`);
      }
      games.push({ game, run: s.games[game], seats: gameSpec(game, s.games[game]).seats, warmStart: source, runs });
    }
  } finally {
    if (!given) ctx.destroy();
  }
  return { settings: s, games, seconds: (performance.now() - t0) / 1000 };
}
