/**
 * The `agents` part's settings (issue 25): the paper's third result — several agents learning at
 * once — on the three games trainAgents ships, each over three seeds from one shared warm start.
 */
import type { PoolSettings } from '../../src/runtime/agents_pool.ts';
import type { SeatSettings } from '../../src/runtime/agents_settings.ts';
import type { SignalOptions } from '../../src/env/envs/signal.ts';

/** A warm start run here: SFT steps, and the job runner's defaults for what is not given. */
export interface WarmStartRun {
  readonly steps: number;
  readonly demos?: number;
  readonly batchSize?: number;
  readonly lr?: number;
}

/** A seat's settings beyond its rate and KL penalty (trainAgents' SeatSettings, name aside). */
export type SeatExtras = Omit<SeatSettings, 'name' | 'lr' | 'klBeta' | 'script'>;

export type GameName = 'signal' | 'bargain' | 'nim';
export const GAMES: readonly GameName[] = ['signal', 'bargain', 'nim'];

/** One game's RL phase (per seed). */
export interface GameRun {
  readonly steps: number;
  readonly groups: number;
  readonly groupSize: number;
  /** Per seat: learning rate and GRPO's KL penalty to the start (0: none). */
  readonly lr: readonly [number, number];
  readonly klBeta: readonly [number, number];
  /** Per seat: its further settings (e.g. the signalling game's speaker credited expected rewards, its listener learning from hindsight). */
  readonly seats?: readonly [SeatExtras, SeatExtras];
  /** The signalling game's options (signalEnv); default letters a–d and the default shapes. */
  readonly signal?: SignalOptions;
  /** This game's warm start when it is not the settings' (e.g. run here, for options no shipped warm start was made for). */
  readonly warmStart?: WarmStartRun;
  /** Held-out games per evaluation (before and after; each partner swap the same games). */
  readonly evalGames: number;
  readonly pool?: PoolSettings;
}

export interface AgentsBenchSettings {
  readonly model: string;
  readonly seeds: readonly number[];
  /**
   * The shared warm start: 'shipped' reads the one `scripts/demo_models.ts` wrote for the game
   * (demos/src/lib/models/<game>-<model>.safetensors; its config must be the one trainAgents builds),
   * or a short one run here (quick runs, on a model nothing ships for).
   */
  readonly warmStart: 'shipped' | WarmStartRun;
  /** Steps per window of the settling test (two windows at the end of each run). */
  readonly window: number;
  readonly games: Readonly<Record<GameName, GameRun>>;
}

/**
 * The signalling game as issue 25's probes left it (README "Several agents"): objects whose initials
 * differ, letters the prompts use (a, e, i, o), short prompts, drills on both sides, one-token
 * messages and picks — from a formats-only warm start run here (nothing ships for these options).
 */
const SIGNAL_OPTIONS = { objects: ['ring', 'box', 'star', 'cross'], symbols: 'aeio', prompt: 'short', drills: 0.5, speakerDrills: 0.5, message: 'bare', pick: 'initial' } as const;

/**
 * The signalling game's seats: the speaker (RLOO: advantages not divided by the group's spread, which
 * under GRPO blew up the near-equal expected rewards of a settled code into full-size noise) saying
 * only the game's letters, credited the listener's probability of the target on its letter
 * (`expectedReward`) and paid half p̂(target | letter) on top, counted over its last 4 steps (the
 * information bonus's posterior part), and learning also its best one-to-one response to the
 * listener, its own log-probabilities weighed 1 and each target's last letter kept unless another
 * beats it by 1 nat (`bestResponse: { own: 1, keep: 1 }`: what splits pooled targets — without `keep`,
 * two targets sent one mixture the listener reads alike tie, and a coin toss each step pulled them
 * towards either letter in turn: seed 0 of the probe stayed at 0.72); the listener learning greedy from hindsight, on its last 4 steps' games; both at a cosine
 * rate (at a constant 0.01 a settled code was broken by one update; the probe's settings, README
 * "Several agents").
 */
const SIGNAL_SEATS: readonly [SeatExtras, SeatExtras] = [
  { algo: 'rloo', maxNewTokens: 1, vocabulary: [...SIGNAL_OPTIONS.symbols], expectedReward: true, informationBonus: { posterior: 0.5, steps: 4 }, bestResponse: { own: 1, keep: 1 }, schedule: 'cosine' },
  { maxNewTokens: 1, hindsight: true, hindsightSteps: 4, temperature: 0, schedule: 'cosine' },
];

/**
 * The measured run. Signal: SIGNAL_OPTIONS and SIGNAL_SEATS, 100 steps of 32 games × 4 at lr 0.01 (the probe's
 * runs of these settings had a whole code by steps 50–60 and 0.93–0.98 held out, seeds 0–2). Bargain: the arena page's rates, twice its steps, to see whether the returns
 * settle. Nim: the jobs' nim from a 1400-step warm start, with the opponent pool.
 */
export const AGENTS_RUN: AgentsBenchSettings = Object.freeze<AgentsBenchSettings>({
  model: 'gpt2-100k',
  seeds: [0, 1, 2],
  warmStart: 'shipped',
  window: 8,
  games: {
    signal: { steps: 100, groups: 32, groupSize: 4, lr: [0.01, 0.01], klBeta: [0, 0], evalGames: 128, signal: SIGNAL_OPTIONS, seats: SIGNAL_SEATS, warmStart: { steps: 200 } },
    bargain: { steps: 24, groups: 8, groupSize: 4, lr: [0.006, 0.006], klBeta: [0.3, 0.3], evalGames: 128 },
    nim: { steps: 24, groups: 8, groupSize: 4, lr: [0.005, 0.005], klBeta: [0, 0], evalGames: 100, pool: { every: 4, size: 4, share: 0.5, rotate: true } },
  },
});

/** `--quick`: the same code on tiny-gpt2 with a few-step warm start run here, one seed — a smoke test, not a measurement. */
export const AGENTS_QUICK: AgentsBenchSettings = Object.freeze<AgentsBenchSettings>({
  model: 'tiny-gpt2',
  seeds: [0],
  warmStart: { steps: 3, demos: 16, batchSize: 4, lr: 1e-2 },
  window: 2,
  games: {
    signal: { steps: 4, groups: 2, groupSize: 2, lr: [0.01, 0.01], klBeta: [0, 0], evalGames: 4, signal: SIGNAL_OPTIONS, seats: SIGNAL_SEATS },
    bargain: { steps: 4, groups: 2, groupSize: 2, lr: [0.01, 0.01], klBeta: [0.3, 0.3], evalGames: 4 },
    nim: { steps: 4, groups: 2, groupSize: 2, lr: [0.01, 0.01], klBeta: [0, 0], evalGames: 4, pool: { every: 2, size: 2, share: 0.5, rotate: true } },
  },
});
