/**
 * Contracts of the agent & environment layer: environments (single-agent and turn-based
 * multi-agent), tools, demonstrations, the sampling function an agent wraps, and the frozen
 * trajectory records rollouts produce.
 *
 * Departures from Gym: everything is async and text in / text out (`step(action: string)`), the
 * reset seed is mandatory (seeds fix everything), and there is no `truncated` flag — truncation
 * is decided by the protocol (turn limit, context limit) and recorded as the episode's end reason.
 * Tools are declared by the environment but executed by the protocol, so every environment gets
 * tool calls for free; a tool is a closure over its environment instance, so the environment can
 * still count or price its calls.
 */
import type { Rng } from '../util/rng.ts';

/** A JSON value: what `info` may hold so it survives freezing and structured clone. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [k: string]: JsonValue };

/** What `Environment.step` returns. `reward` must be a finite number or the episode is dropped. */
export interface StepResult {
  readonly observation: string;
  readonly reward: number;
  readonly done: boolean;
  readonly info?: { readonly [k: string]: JsonValue };
}

/** A tool the agent may call with the tool-call syntax (see actions.ts). */
export interface Tool {
  /** Identifier used in `<tool>name: args</tool>`; letters, digits, '_' and '-'. */
  readonly name: string;
  /** One line shown to the agent in the prompt. */
  readonly description: string;
  /**
   * JSON schema of the arguments (an object schema), shown to instruct models whose chat
   * template lists tools (see tool_calls.ts). Default: one string property `input`. A native
   * call's arguments reach `call` as the value of the schema's only property when it declares
   * exactly one string property, else as the arguments object's JSON text.
   */
  readonly parameters?: { readonly [k: string]: JsonValue };
  /** Runs the tool; the returned text goes back to the agent. A throw becomes `error: <message>`. */
  call(args: string): Promise<string> | string;
}

/** A single-agent environment. One instance runs one episode at a time. */
export interface Environment {
  /** Short name recorded in trajectories. */
  readonly name: string;
  /** Tools the agent may call; tool calls are turns that do not reach `step`. */
  readonly tools?: readonly Tool[];
  /** Starts an episode; the same seed gives the same task. Returns the first observation. `variant`: a demonstration's (see Demonstration.variant); absent in rollouts. */
  reset(seed: number, variant?: string): Promise<string>;
  /** Applies one agent action (its raw text, tool calls excepted). */
  step(action: string): Promise<StepResult>;
  /** Releases resources after the episode (errors here are ignored). */
  close?(): Promise<void> | void;
}

/** A whole demonstrated episode: the env seed and the actions a good-enough policy took. */
export interface Demonstration {
  readonly seed: number;
  /** Action texts in order (for turn-based games, every player's actions interleaved). */
  readonly actions: readonly string[];
  /** Turn-based games: the seat (0-based) whose moves the game demonstrates — a warm start learns that seat's. Absent: 0. */
  readonly player?: number;
  /**
   * A variant of the game played for this demonstration alone, handed to `reset` (e.g. a drill
   * that a warm start needs and real play must never allow). Rollouts never set one.
   */
  readonly variant?: string;
}

/** Everything needed to run an environment: a factory (one instance per concurrent episode). */
export interface EnvSpec {
  readonly name: string;
  /** A fresh, independent environment instance. */
  create(): Environment;
  /** `n` demonstrations for SFT warm starts, fixed by `rng`. */
  demonstrations?(n: number, rng: Rng): Demonstration[];
  /**
   * Whether an episode counts as a success in held-out evaluations and step metrics. Default:
   * reward > 0 (partial credit counts); an environment that pays partial credit says what a
   * success is, e.g. `(t) => t.reward >= 1` or from its turns' `info`.
   */
  readonly success?: (t: Trajectory) => boolean;
}

/** The first observation of a turn-based game: who acts first and what they see. */
export interface TurnObservation {
  readonly player: number;
  readonly observation: string;
}

/** What a turn-based game's `step` returns: rewards for every player and who acts next. */
export interface TurnStepResult {
  /** The player to act next (ignored when done). */
  readonly player: number;
  /** What that player sees. */
  readonly observation: string;
  /** Reward earned by each player on this step, length numPlayers; all finite. */
  readonly rewardsP: readonly number[];
  readonly done: boolean;
  readonly info?: { readonly [k: string]: JsonValue };
}

/** A turn-based multi-agent environment (one action per step, by the player whose turn it is). */
export interface TurnBasedEnvironment {
  readonly name: string;
  readonly numPlayers: number;
  /**
   * Tools every learning seat may call on its turn, as in a single-agent episode: a call runs the
   * tool, its result goes back to the caller alone, and the caller acts again (a call counts
   * against the seat's maxTurns; the other seats see nothing of it). Scripted seats call none.
   */
  readonly tools?: readonly Tool[];
  /** Starts a game; `variant`: a demonstration's (see Demonstration.variant); absent in rollouts. */
  reset(seed: number, variant?: string): Promise<TurnObservation>;
  step(action: string): Promise<TurnStepResult>;
  close?(): Promise<void> | void;
}

export interface TurnBasedEnvSpec {
  readonly name: string;
  readonly numPlayers: number;
  create(): TurnBasedEnvironment;
  demonstrations?(n: number, rng: Rng): Demonstration[];
  /**
   * Whether an episode counts as a success in held-out evaluations and step metrics. Default:
   * reward > 0 (partial credit counts); an environment that pays partial credit says what a
   * success is, e.g. `(t) => t.reward >= 1` or from its turns' `info`.
   */
  readonly success?: (t: Trajectory) => boolean;
  /**
   * What a seat should have done in a game it played, once the game is over and has revealed what
   * was hidden from it (e.g. the signalling game's target, told to the listener after its pick): a
   * demonstration of the whole game (every seat's actions; `player` the seat taught), or null where
   * the game reveals nothing to learn from. A seat with trainAgents' `hindsight` learns from these,
   * supervised, instead of from its reward.
   */
  readonly hindsight?: (t: Trajectory) => Demonstration | null;
  /**
   * What a trajectory's actions told the other seats, as they received it (e.g. the signalling
   * game's parsed symbol), or null when nothing came through: trainAgents' `informationBonus`
   * compares messages by it rather than by their text.
   */
  readonly message?: (t: Trajectory) => string | null;
  /**
   * The games a seat's trajectory could have been had it acted otherwise, once the game is over:
   * one per action it had to choose from (`action` names it, the same names for every game of that
   * seat), each a demonstration of the whole game with that action and every other seat playing what
   * would have won (e.g. the signalling speaker's game with each letter, the listener picking the
   * target); null where the seat has none (the listener). trainAgents' `bestResponse` scores them
   * under the partners' policies.
   */
  readonly counterfactuals?: (t: Trajectory) => readonly Counterfactual[] | null;
}

/** One action a seat could have taken, and its game as it would have gone (TurnBasedEnvSpec.counterfactuals). */
export interface Counterfactual {
  readonly action: string;
  readonly game: Demonstration;
}

/** One sampling request: the whole context so far and how to sample the continuation. */
export interface SampleRequest {
  readonly promptTokens: readonly number[];
  readonly maxTokens: number;
  /** Stop after generating any of these strings (the stop string is kept in the output). */
  readonly stopStrings: readonly string[];
  /** Stop after generating any of these ids (kept in the output, e.g. eos). */
  readonly stopTokens: readonly number[];
  readonly temperature: number;
  /** u32 seed for this request's sampler stream. */
  readonly seed: number;
  /** Which LoRA adapter (policy) to sample from; undefined = the base model. */
  readonly adapterId?: string;
  /**
   * The only ids this request may sample (every other id masked, the sampler renormalising over
   * these): a restricted action vocabulary, e.g. the letters of a signalling game. Its log-probs
   * are then those of the renormalised distribution. Undefined: every id.
   */
  readonly allowedTokens?: readonly number[];
}

/** One sampled continuation: ids and the sampling policy's log-prob of each. */
export interface SampleResult {
  readonly tokens: readonly number[];
  /**
   * ln π(token) of the policy — log-softmax of the logits at temperature 1, before any top-k /
   * top-p filter (what the training loss recomputes) — same length as tokens. engineSampleFn can
   * return the sampling distribution's log-probs instead (`logprobs: 'sampling'`).
   */
  readonly logprobs: readonly number[];
  /** The published adapter version that produced it, when the sampler resolves adapters by name (runtime inference clients). */
  readonly adapter?: { readonly name: string; readonly version: number };
}

/** The policy as seen by this layer: a batch of requests in, one result per request out. */
export type SampleFn = (requests: readonly SampleRequest[]) => Promise<readonly SampleResult[]>;

/** A chat message for chat-template prompt formats. */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** The tool that answered (tool messages). */
  readonly name?: string;
}

/** How an episode ended. The first three keep the episode; the others drop it. */
export type EndReason = 'done' | 'turn_limit' | 'context_limit' | 'timeout' | 'env_error' | 'invalid_reward';
export type KeptEndReason = 'done' | 'turn_limit' | 'context_limit';
export type DropReason = 'timeout' | 'env_error' | 'invalid_reward';
export const END_REASONS: readonly EndReason[] = ['done', 'turn_limit', 'context_limit', 'timeout', 'env_error', 'invalid_reward'];

/** One agent action and what came back. Token indices refer to `Trajectory.tokensT`. */
export interface Turn {
  /** 'env': the action went to step(); 'tool': a tool ran; the protocol answered itself otherwise. */
  readonly kind: 'env' | 'tool' | 'unknown_tool';
  /** [actionStart, actionEnd): the policy tokens of this action. */
  readonly actionStart: number;
  readonly actionEnd: number;
  readonly action: string;
  /** What came back: the observation or tool result (recorded even when the episode ended here,
   * though then it is not appended to the token sequence). */
  readonly observation: string;
  readonly reward: number;
  readonly info: { readonly [k: string]: JsonValue };
}

/**
 * One agent's view of one episode, at token level. Legend: T = tokensT.length.
 * The sequence is prompt · action₁ · obs₁ · action₂ · obs₂ · … · action_k; observations after the
 * final action are not appended.
 */
export interface Trajectory {
  readonly envName: string;
  readonly agentId: string;
  readonly adapterId?: string;
  /** Environment seed (equal across a group). */
  readonly seed: number;
  /** Group index in its batch (group-relative advantages compare within a group). */
  readonly groupId: number;
  /** Episode (game) index in its batch; with `player` it identifies the trajectory. */
  readonly episodeId: number;
  /** Seat index in a turn-based game; 0 for single-agent episodes. */
  readonly player: number;
  /** [T] every token of the sequence. */
  readonly tokensT: readonly number[];
  /** Tokens [0, promptLength) are the initial prompt. */
  readonly promptLength: number;
  /** [T] 1 where the policy generated the token, 0 for prompt, observation and template tokens. */
  readonly policyMaskT: readonly number[];
  /** [T] sampling log-prob where policyMaskT is 1, else 0. */
  readonly logprobsT: readonly number[];
  readonly turns: readonly Turn[];
  /** Undiscounted return: the sum of this agent's turn rewards. */
  readonly reward: number;
  readonly endReason: KeptEndReason;
}

/** An episode that was dropped: why, and what the environment said. */
export interface DroppedEpisode {
  readonly envName: string;
  readonly agentId: string;
  readonly seed: number;
  readonly groupId: number;
  readonly episodeId: number;
  readonly reason: DropReason;
  readonly message: string;
  readonly turns: number;
}

/** Trajectories of G attempts at the same task (same env seed); dropped ones are absent. */
export interface TrajectoryGroup {
  readonly groupId: number;
  readonly seed: number;
  readonly trajectories: readonly Trajectory[];
}

/** Counts a rollout reports next to its trajectories. */
export interface RolloutMetrics {
  readonly episodes: number;
  readonly kept: number;
  readonly dropped: number;
  readonly endReasons: { readonly [R in EndReason]: number };
  /** Mean return over kept trajectories (0 when none). */
  readonly meanReward: number;
  readonly meanTurns: number;
  readonly toolCalls: number;
  /** Tokens the policy generated (kept and dropped episodes). */
  readonly sampledTokens: number;
  /** Calls made to the sampling function(s). */
  readonly sampleCalls: number;
}

/** A rollout's output: frozen plain data. */
export interface RolloutBatch {
  readonly groups: readonly TrajectoryGroup[];
  readonly dropped: readonly DroppedEpisode[];
  readonly metrics: RolloutMetrics;
}
