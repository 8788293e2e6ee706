/**
 * What `trainAgents` (src/runtime/agents_job.ts) is given and gives back: each seat's learner
 * (`SeatSettings`), the run's settings (`AgentsSettings`), the per-step metrics, the evaluations and
 * the result — and `checkAgentsSettings`, which refuses a wrong setting by name before any GPU work.
 */
import { JOB_ALGORITHMS, type RlAlgo } from './job_algorithms.ts';
import { bonusProblem, type InformationBonus } from '../algorithms/information_bonus.ts';
import type { ScriptedPolicy } from '../env/multiagent.ts';
import type { TurnBasedEnvSpec } from '../env/types.ts';
import { ConfigError } from '../errors.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { HostParams, ServiceClient } from './clients.ts';
import { int, pos } from './train.ts';
import { LR_SCHEDULES, type LrSchedule } from './sft_job.ts';
import { oneOf } from './job_config.ts';
import { checkPoolSettings, type PoolSettings } from './agents_pool.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';

/** One seat's learner. */
export interface SeatSettings {
  /** Names the agent in trajectories, metrics and errors. */
  readonly name: string;
  /** Default 'grpo'. */
  readonly algo?: RlAlgo;
  /** Default TRAIN_DEFAULTS.lr (LoRA from scratch). */
  readonly lr?: number;
  /** LoRA rank (alpha 2·rank); default TRAIN_DEFAULTS.loraRank. */
  readonly loraRank?: number;
  /**
   * GRPO only: per-token KL penalty to the seat's starting policy (default 0: none). Keeps what the
   * warm start was sure of — the answer format — while the reward reshapes what it was not; with it,
   * games whose attempts all scored alike train too, for the penalty alone.
   */
  readonly klBeta?: number;
  /**
   * GRPO only: entropy bonus, ℓ −= entropyCoef·H per token (default 0: none). Against a policy that
   * settles early on one answer for every input, so that its groups tie and stop teaching it: with a
   * bonus, tied games train too (for the bonus alone).
   */
  readonly entropyCoef?: number;
  /**
   * Information bonus (default 0: none): each of this seat's trajectories is paid, on top of its
   * reward, coef · (log π(action | what it saw) − log of the action's share of the step's actions) —
   * a positive-signalling bias (src/algorithms/information_bonus.ts): saying different things in
   * different situations pays, whatever the mapping, and one message for everything earns nothing.
   * Messages are compared as the others received them where the environment says so
   * (`TurnBasedEnvSpec.message`; one that did not come through is not paid, and counts in the shares), else by their text.
   * `{ marginal, conditional, posterior }` weighs the parts apart: the message's rarity (−log share), the
   * seat's sureness of it (log π), and the share of the step's like messages that came from what the
   * seat saw this game (p̂(s | m), the only part that looks at it); a part left out weighs 0. Its `steps`
   * counts those shares over the seat's last `steps` steps' games, this one's included (default 1).
   * For a seat learning from its reward (not hindsight); the step's metrics report the game's reward alone.
   */
  readonly informationBonus?: InformationBonus;
  /**
   * Credit this seat with each game's expected reward under its partners' current policies instead
   * of the reward their sampled actions gave it (default false): for every other seat j, the
   * environment's `hindsight` says what j should have played in that game once it is over, and the
   * game's reward for this seat becomes the product over the partners of the probability their
   * policies (at temperature 1, before the step's update) give that play; a game for whose partner
   * hindsight has nothing (null) keeps its sampled reward. Exact for cooperative games won exactly
   * when every partner plays its hindsight play (the signalling game: the speaker is paid the
   * listener's probability of picking the target on the message it sent, not whether its one
   * sample did) — it takes the partner's sampling noise out of this seat's credit, which compares
   * attempts at one game by what they said alone. Needs an environment with `hindsight` and
   * learning partners (a script has no probabilities); not with `pool`, nor on a hindsight seat.
   * The step's metrics report the game's sampled reward.
   */
  readonly expectedReward?: boolean;
  /**
   * Learn also from this seat's best response to its partners (default false): after its step's
   * update, one more supervised step at its rate on the games as they would have gone with the action
   * its partners' current policies (read before the step's updates) make likeliest to win — scored
   * over the environment's `counterfactuals` (every action the seat had, its partners playing what
   * wins), averaged per situation (what the seat saw), and assigned to situations one-to-one by the
   * summed log-probability (src/runtime/agents_best_response.ts). Mutual exclusivity: while there are
   * actions enough, no two situations get one action — the signalling speaker does not send one letter
   * for two targets while another letter is free, a resting point of the reward's gradient. It reads
   * which actions the partners understand, not a code: the partners learn theirs from play. Needs an
   * environment with `counterfactuals` and learning partners (a script has no probabilities); not with `pool`.
   * `{ own: w }` adds w × the seat's own log-probability of each action to the score: where its partners
   * read two actions about alike, a situation keeps the one the seat already leans to rather than
   * swapping on their noise from step to step (`true`: w = 0). `{ keep: m }` adds m (nats) to the
   * score of the action a situation was given when the seat last met it: an assignment changes only
   * where another beats it by more than m — where the seat sends two situations one mixture its
   * partners read alike, the scores tie, and without it each step's assignment is a coin toss that
   * pulls the two towards each action in turn, so they never part. Both default to 0.
   */
  readonly bestResponse?: boolean | { readonly own?: number; readonly keep?: number };
  /**
   * The learning rate over the run's steps: 'constant' (`lr` throughout, the default) or 'cosine'
   * (a linear warm-up over the first 5% of the steps, then a cosine decay to a tenth of `lr`, as the
   * warm start runs) — against a policy that found part of an answer at full rate and lost it again.
   */
  readonly schedule?: LrSchedule;
  /**
   * Tokens per action for this seat (default the run's `maxNewTokens`). An action that is one
   * token — a signalling game's bare symbol (signalEnv's `message: 'bare'`) — carries no format
   * tokens whose log-probabilities the update also moves: the whole step goes to the choice.
   */
  readonly maxNewTokens?: number;
  /**
   * Learn from hindsight instead of the reward: after each step's games the environment's
   * `hindsight` says what this seat should have done in each (the signalling game's listener is told
   * the target once it has picked), and the seat trains on those games supervised — cross-entropy on
   * its own tokens, at its `lr` and `schedule` — so every game teaches it, won or lost. Needs an
   * environment with `hindsight`; not with `algo`, `klBeta` or `entropyCoef`. Default false.
   */
  readonly hindsight?: boolean;
  /**
   * A hindsight seat trains each step on the hindsight plays of its last `hindsightSteps` steps
   * (default 1: the step's alone) — an estimate of what its partners mean that moves less when they
   * move (the signalling game's listener reads the speaker's recent code, not one step's draw).
   * Hindsight seats alone; an integer ≥ 1.
   */
  readonly hindsightSteps?: number;
  /**
   * The only tokens this seat's actions may use, each string one token of the base's tokenizer (the
   * signalling game's letters: `['a', 'e', 'i', 'o']`): its sampler renormalises the policy over them
   * (Agent's `allowedTokens`), in training and evaluation alike, so an action outside them — a
   * message the others cannot read — cannot happen whatever the update does to the rest of the
   * vocabulary. Its stop tokens are not added: with more than one token per action, an action runs to
   * `maxNewTokens`. An RL seat's update recomputes its actions' log-probabilities over the whole
   * vocabulary (the policy it moves), so its importance ratios start at 1; for one-token actions
   * compared within a game (group-relative advantages summing to zero), the policy-gradient term is
   * then exactly the renormalised policy's, as the normaliser's gradient is the same for every
   * attempt at a game. The KL penalty stays over the whole vocabulary. Not on a seat whose partner has
   * `expectedReward` (that reads this seat's probabilities over the whole vocabulary).
   */
  readonly vocabulary?: readonly string[];
  /**
   * A hindsight seat's sampling temperature in the games it plays (default the run's; 0: greedy —
   * it answers with its best guess, as a decoder should). Hindsight seats alone: an RL seat's update
   * weighs its tokens by the log-probabilities it sampled them with, at the run's temperature.
   */
  readonly temperature?: number;
  /**
   * A seat that does not learn: a scripted policy plays it in training and evaluation (e.g. a fixed
   * partner that knows a code, or a fixed opponent), so the other seats learn against it.
   */
  readonly script?: ScriptedPolicy;
}

export interface AgentsSettings {
  readonly env: TurnBasedEnvSpec;
  /** One per player, in seat order. */
  readonly seats: readonly SeatSettings[];
  /** A from-scratch preset (default 'gpt2-100k'). */
  readonly model?: string;
  /** The shared base's weights instead of a warm start (e.g. an earlier run's `base`). */
  readonly weights?: HostParams;
  /** The shared SFT warm start (the job runner's defaults but steps); null: none. Default 200 steps. */
  readonly warmStart?: { readonly steps?: number; readonly demos?: number; readonly batchSize?: number; readonly lr?: number } | null;
  readonly steps?: number;
  readonly groups?: number;
  readonly groupSize?: number;
  readonly seed?: number;
  /** Tokens per action (default 24) and the context (default 256). */
  readonly maxNewTokens?: number;
  readonly context?: number;
  /** Actions per seat per game (default 16). */
  readonly maxTurns?: number;
  /** Held-out games per evaluation (0: none); default 128. */
  readonly evalGames?: number;
  /** Scripted stand-ins by seat for the partner-swap test (e.g. a speaker without a code). */
  readonly partners?: readonly (ScriptedPolicy | undefined)[];
  /**
   * Self-play against earlier versions too: every `every` steps (from step 0) each seat's adapter
   * is copied into its pool of the `size` latest; each step each learner plays `share` (default
   * 0.5) of the `groups` against copies of the others drawn from their pools (`rotate`: in every
   * seat in turn) instead of with the live agents. Default none.
   */
  readonly pool?: PoolSettings;
  readonly onStep?: (m: AgentsStepMetrics) => void;
  /** Where the job runs (a LocalService, a WorkerService); default a LocalService on a device acquired for the run. */
  readonly service?: ServiceClient;
  /** Stops the run between steps (the promise rejects with the signal's reason); what it opened is closed. */
  readonly signal?: AbortSignal;
}

export interface AgentsStepMetrics {
  readonly step: number;
  /** Share of the step's games that were a success for the first seat (env.success, default reward > 0). */
  readonly success: number;
  /** Per seat: mean reward, datums trained on (0: every group tied, for a seat without klBeta or entropyCoef), the trained loss. */
  readonly reward: readonly number[];
  readonly datums: readonly number[];
  readonly loss: readonly number[];
  /** Per seat: the learning rate of its step (its schedule's at this step; 0 for a scripted seat). */
  readonly lr: readonly number[];
  /** Per seat: what its agent said in the step's first game (its actions in order; empty for a seat it did not reach). */
  readonly transcript: readonly (readonly string[])[];
  /**
   * Per seat with `expectedReward`: the mean reward it was credited with — the games' expected
   * reward under its partners' policies (the signalling game's speaker: the listener's mean
   * probability of picking the target), a smoother measure than `success`; null for other seats.
   */
  readonly expected: readonly (number | null)[];
  /**
   * Per seat with `bestResponse`: per situation met in the step (in order of first meeting), the
   * action assigned to it and the expected reward its partners give that action there (the mean over
   * the situation's games), with the situation itself (the seat's prompt as it read it); null for other seats.
   */
  readonly bestResponse: readonly (readonly { readonly situation: string; readonly action: string; readonly expected: number }[] | null)[];
  /**
   * With a pool: per seat, the steps its copies in the pool were taken at (after this step's
   * copy, before its games), and per learner its games against copies and its mean reward in them.
   * (`reward` and `datums` above count a learner's pool games too; `success` and `transcript` the
   * games with the live agents alone.)
   */
  readonly pool?: { readonly copies: readonly (readonly number[])[]; readonly games: readonly number[]; readonly reward: readonly number[] };
  readonly seconds: number;
}

export interface AgentsEvaluation {
  /** Success with every agent in its seat. */
  readonly together: number;
  /** Per seat: its mean return with every agent in its seat. */
  readonly returns: readonly number[];
  /** Per seat: success with that seat's partner stand-in in place of its agent (null: no stand-in given, or every other seat scripted too). */
  readonly swapped: readonly (number | null)[];
  /**
   * Per seat k: every seat's mean return with seat k's stand-in in place of its agent (null: no
   * stand-in given) — an agent measured against a fixed opponent is `swappedReturns[opponent][agent]`.
   */
  readonly swappedReturns: readonly (readonly number[] | null)[];
}

export interface AgentsResult {
  readonly before: AgentsEvaluation;
  readonly after: AgentsEvaluation;
  readonly steps: readonly AgentsStepMetrics[];
  readonly cfg: ModelConfig;
  /** The shared base (the warm-started weights), and each seat's LoRA config and adapter. */
  readonly loras: readonly (LoraConfig | null)[];
  readonly base: HostParams;
  readonly adapters: readonly (HostParams | null)[];
  readonly wallSeconds: number;
}

const KEYS = ['env', 'seats', 'model', 'weights', 'warmStart', 'steps', 'groups', 'groupSize', 'seed', 'maxNewTokens', 'context', 'maxTurns', 'evalGames', 'partners', 'pool', 'onStep', 'service', 'signal'];
const SEAT_KEYS = ['name', 'algo', 'lr', 'schedule', 'loraRank', 'klBeta', 'entropyCoef', 'maxNewTokens', 'hindsight', 'hindsightSteps', 'temperature', 'informationBonus', 'expectedReward', 'bestResponse', 'vocabulary', 'script'] as const satisfies readonly (keyof SeatSettings)[];
/** A seat's settings that only a learner has (all but its name and script). */
const LEARNING_KEYS = SEAT_KEYS.filter((k): k is Exclude<typeof k, 'name' | 'script'> => k !== 'name' && k !== 'script');

/**
 * Seat k's `vocabulary` as token ids of the agents' byte tokenizer (undefined: none); ConfigError
 * naming `seats[k].vocabulary` for a list that is empty, holds a string that is not one token, or sits
 * on a seat whose partner credits itself with this seat's probabilities (`expectedReward`).
 */
export function seatVocabulary(s: AgentsSettings, k: number): number[] | undefined {
  const v = s.seats[k].vocabulary;
  if (v === undefined) return undefined;
  const field = `seats[${k}].vocabulary`;
  if (!Array.isArray(v) || v.length === 0) throw new ConfigError(field, 'expected a non-empty array of strings, each one token');
  const tok = new ByteTokenizer();
  const ids = v.map((x, i) => {
    const t = typeof x === 'string' ? tok.encode(x) : [];
    if (t.length !== 1) throw new ConfigError(`${field}[${i}]`, `${JSON.stringify(x)} is not one token of the base's tokenizer (it encodes to ${t.length})`);
    return t[0];
  });
  const j = s.seats.findIndex((x, i) => i !== k && (x?.expectedReward === true || (x?.bestResponse ?? false) !== false));
  if (j >= 0) throw new ConfigError(field, `seat ${j} (${s.seats[j].name}) has ${s.seats[j].expectedReward === true ? 'expectedReward' : 'bestResponse'}, which reads seat ${k}'s probabilities over the whole vocabulary, not over these tokens`);
  return [...new Set(ids)];
}

/** Settings checked before any GPU work: ConfigError naming the field (unknown keys too). */
export function checkAgentsSettings(s: AgentsSettings): void {
  if (typeof s !== 'object' || s === null) throw new ConfigError('settings', 'expected an object');
  for (const k of Object.keys(s)) if (!KEYS.includes(k)) throw new ConfigError(k, `unknown setting (known: ${KEYS.join(', ')})`);
  if (typeof s.env !== 'object' || s.env === null || typeof s.env.create !== 'function' || !Number.isInteger(s.env.numPlayers)) {
    throw new ConfigError('env', 'expected a turn-based environment spec ({ name, numPlayers, create() })');
  }
  if (!Array.isArray(s.seats) || s.seats.length !== s.env.numPlayers) {
    throw new ConfigError('seats', `${s.env.name} has ${s.env.numPlayers} players: give one seat each, got ${Array.isArray(s.seats) ? s.seats.length : typeof s.seats}`);
  }
  const names = new Set<string>();
  (s.seats as readonly SeatSettings[]).forEach((seat, k) => {
    if (typeof seat !== 'object' || seat === null) throw new ConfigError(`seats[${k}]`, 'expected { name, algo?, lr?, loraRank? }');
    for (const key of Object.keys(seat)) if (!(SEAT_KEYS as readonly string[]).includes(key)) throw new ConfigError(`seats[${k}].${key}`, `unknown setting (known: ${SEAT_KEYS.join(', ')})`);
    if (typeof seat.name !== 'string' || seat.name === '' || names.has(seat.name)) throw new ConfigError(`seats[${k}].name`, 'expected a non-empty name of its own');
    names.add(seat.name);
    if (seat.algo !== undefined && !Object.hasOwn(JOB_ALGORITHMS, seat.algo)) {
      throw new ConfigError(`seats[${k}].algo`, `unknown algorithm "${seat.algo}" (known: ${Object.keys(JOB_ALGORITHMS).join(', ')})`);
    }
    if (seat.script !== undefined) {
      if (typeof seat.script !== 'object' || seat.script === null || seat.script.kind !== 'scripted' || typeof seat.script.act !== 'function') {
        throw new ConfigError(`seats[${k}].script`, "expected a scripted policy ({ kind: 'scripted', id, act(observation, rng) })");
      }
      const learning = LEARNING_KEYS.find((x) => seat[x] !== undefined);
      if (learning) throw new ConfigError(`seats[${k}].${learning}`, `seat ${k} (${seat.name}) is scripted: it does not learn or sample`);
    }
    if (seat.hindsight !== undefined) {
      if (typeof seat.hindsight !== 'boolean') throw new ConfigError(`seats[${k}].hindsight`, `expected true or false, got ${String(seat.hindsight)}`);
      if (seat.hindsight && typeof s.env.hindsight !== 'function') throw new ConfigError(`seats[${k}].hindsight`, `${s.env.name} says nothing in hindsight (its spec has no hindsight())`);
      const rl = (['algo', 'klBeta', 'entropyCoef', 'informationBonus', 'expectedReward'] as const).find((x) => seat[x] !== undefined);
      if (seat.hindsight && rl) throw new ConfigError(`seats[${k}].${rl}`, `seat ${k} (${seat.name}) learns from hindsight, supervised: it has no RL algorithm`);
    }
    if (seat.hindsightSteps !== undefined) {
      if (!Number.isInteger(seat.hindsightSteps) || seat.hindsightSteps < 1) throw new ConfigError(`seats[${k}].hindsightSteps`, `expected an integer ≥ 1, got ${String(seat.hindsightSteps)}`);
      if (seat.hindsight !== true) throw new ConfigError(`seats[${k}].hindsightSteps`, `seat ${k} (${seat.name}) learns from its reward: only a hindsight seat (hindsight: true) trains on earlier steps' hindsight plays`);
    }
    if (seat.temperature !== undefined) {
      if (typeof seat.temperature !== 'number' || !Number.isFinite(seat.temperature) || seat.temperature < 0) throw new ConfigError(`seats[${k}].temperature`, `expected a finite number ≥ 0 (0: greedy), got ${String(seat.temperature)}`);
      if (!seat.hindsight && !seat.script) throw new ConfigError(`seats[${k}].temperature`, `seat ${k} (${seat.name}) learns from its reward, which weighs its tokens by the log-probabilities sampled at the run's temperature: only a hindsight seat samples at its own`);
    }
    if (seat.expectedReward !== undefined) {
      if (typeof seat.expectedReward !== 'boolean') throw new ConfigError(`seats[${k}].expectedReward`, `expected true or false, got ${String(seat.expectedReward)}`);
    }
    if (seat.expectedReward === true) {
      const field = `seats[${k}].expectedReward`;
      if (typeof s.env.hindsight !== 'function') throw new ConfigError(field, `${s.env.name} says nothing in hindsight (its spec has no hindsight()): the partners' winning plays are unknown`);
      const j = (s.seats as readonly SeatSettings[]).findIndex((x, i) => i !== k && x?.script !== undefined);
      if (j >= 0) throw new ConfigError(field, `seat ${j} (${s.seats[j].name}) is scripted: a script gives no probabilities to expect a reward under`);
      if (s.pool !== undefined) throw new ConfigError(field, 'not with pool: pool games are played against frozen copies, not the partners whose probabilities it reads');
    }
    if (seat.bestResponse !== undefined) {
      const field = `seats[${k}].bestResponse`;
      const br = seat.bestResponse;
      const weight = (x: unknown) => x === undefined || (typeof x === 'number' && Number.isFinite(x) && x >= 0);
      if (typeof br !== 'boolean' && (typeof br !== 'object' || br === null || Object.keys(br).some((x) => x !== 'own' && x !== 'keep') || !weight(br.own) || !weight(br.keep))) {
        throw new ConfigError(field, `expected true, false or { own?, keep? } (each a finite number ≥ 0), got ${JSON.stringify(br) ?? String(br)}`);
      }
      if (br !== false) {
        if (typeof s.env.counterfactuals !== 'function') throw new ConfigError(field, `${s.env.name} names no counterfactuals (its spec has no counterfactuals()): the seat's other actions are unknown`);
        const j = (s.seats as readonly SeatSettings[]).findIndex((x, i) => i !== k && x?.script !== undefined);
        if (j >= 0) throw new ConfigError(field, `seat ${j} (${s.seats[j].name}) is scripted: a script gives no probabilities to respond to`);
        if (s.pool !== undefined) throw new ConfigError(field, 'not with pool: pool games are played against frozen copies, not the partners whose probabilities it reads');
      }
    }
    if (seat.vocabulary !== undefined) seatVocabulary(s, k);
    if (seat.lr !== undefined) pos(`seats[${k}].lr`, seat.lr);
    if (seat.schedule !== undefined) oneOf(`seats[${k}].schedule`, seat.schedule, LR_SCHEDULES);
    if (seat.loraRank !== undefined) int(`seats[${k}].loraRank`, seat.loraRank, 1);
    if (seat.maxNewTokens !== undefined) int(`seats[${k}].maxNewTokens`, seat.maxNewTokens, 1);
    const bonus = seat.informationBonus === undefined ? null : bonusProblem(seat.informationBonus);
    if (bonus) throw new ConfigError(`seats[${k}].informationBonus`, bonus);
    // Non-negative coefficients; a KL penalty and an entropy bonus are GRPO's.
    for (const [key, what] of [['klBeta', 'a KL penalty'], ['entropyCoef', 'an entropy bonus']] as const) {
      const x = seat[key];
      if (x === undefined) continue;
      if (typeof x !== 'number' || !Number.isFinite(x) || x < 0) throw new ConfigError(`seats[${k}].${key}`, `expected a finite number ≥ 0, got ${x}`);
      if (x > 0 && (seat.algo ?? 'grpo') !== 'grpo') throw new ConfigError(`seats[${k}].${key}`, `${what} is GRPO's here; seat ${k} (${seat.name}) learns with ${seat.algo}`);
    }
  });
  for (const [k, min] of [['steps', 0], ['groups', 1], ['groupSize', 1], ['seed', 0], ['evalGames', 0], ['maxNewTokens', 1], ['context', 8], ['maxTurns', 1]] as const) {
    if (s[k] !== undefined) int(k, s[k], min);
  }
  const gs = s.groupSize ?? 8;
  (s.seats as readonly SeatSettings[]).forEach((seat, k) => {
    if (seat.script || seat.hindsight) return;
    const need = JOB_ALGORITHMS[seat.algo ?? 'grpo'].minGroupSize;
    if (gs < need) throw new ConfigError('groupSize', `seat ${k} (${seat.name}) learns with ${seat.algo ?? 'grpo'}, which compares at least ${need} attempts per game`);
  });
  if (s.partners !== undefined && (!Array.isArray(s.partners) || s.partners.length > s.env.numPlayers)) {
    throw new ConfigError('partners', `expected at most one stand-in per seat (${s.env.numPlayers})`);
  }
  if (s.pool !== undefined) {
    checkPoolSettings(s.pool);
    const k = s.seats.findIndex((x) => x.script !== undefined);
    if (k >= 0) throw new ConfigError('pool', `seat ${k} (${s.seats[k].name}) is scripted: a pool keeps earlier versions of learners, so every seat must learn`);
  }
  if (s.seats.every((x) => x.script !== undefined)) throw new ConfigError('seats', 'every seat is scripted: at least one must learn');
}

