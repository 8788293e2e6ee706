/**
 * The fleet's rollout protocol, shared by the trainer (rollouts.ts) and rollout workers
 * (rollout_worker.ts; a Deno host or a browser tab). Browser-safe.
 *
 * Subjects (core NATS, no stream: a task lives only as long as its trainer waits for it):
 * - `wt.rollouts.hello`, queue group `rollout-workers`: a trainer's probe — any rollout worker
 *   answers; "no responders" means none listens, and the step is sampled locally at once.
 * - `wt.rollouts.tasks`, queue group `rollout-workers`: one task per slice of a step's groups, each
 *   delivered to one worker, with a reply subject of its own (`<trainer inbox>.<step>.<slice>`).
 * Every message is a frame (rollout_wire.ts). A worker answers a task on its reply subject with
 * `taken` at once, `alive` every second while the task waits or runs (or the bare `+WPI` a
 * keep-alive thread sends, lease.ts), then `result` (the part) —
 * or `stored` (the part's frame under a key of the shared store, when it is larger than the
 * server's max_payload) — or `error`. The trainer samples a slice itself when its worker errs or
 * falls silent, so a dead worker costs time, never the job.
 *
 * The policy version a task names is in the shared store (KvStore, NatsKv on the fleet) under
 * `policy`: one frame of its tensors (the LoRA adapter's, or every parameter); a LoRA job's base is
 * under `base`. Both are written by the trainer before the task goes out.
 */
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { RolloutPart } from '../runtime/evaluate.ts';

export const ROLLOUT_HELLO_SUBJECT = 'wt.rollouts.hello';
export const ROLLOUT_TASK_SUBJECT = 'wt.rollouts.tasks';
export const ROLLOUT_QUEUE = 'rollout-workers';
export const TASK_FORMAT = 'webtinker-rollout-task/1';

/** How the job's agent meets its environment (agentSettingsOf of a from-scratch job). */
export interface AgentRecipe {
  readonly env: string;
  readonly maxTurns: number;
  readonly maxNewTokens: number;
  readonly maxSequenceTokens: number;
  readonly temperature: number;
  readonly stepTimeoutMs?: number;
}

export interface RolloutTask {
  readonly format: typeof TASK_FORMAT;
  readonly job: string;
  /** The trainer's delivery epoch of the job (a redelivered job's trainer starts afresh). */
  readonly epoch: number;
  readonly step: number;
  readonly slice: number;
  /** The policy version sampling (the RL step whose start weights these are). */
  readonly version: number;
  /** The step's sampler seed. */
  readonly seed: number;
  readonly cfg: ModelConfig;
  readonly lora: LoraConfig | null;
  /** Store keys of the version's tensors and (LoRA) of the base. */
  readonly policy: string;
  readonly base: string | null;
  readonly agent: AgentRecipe;
  /** Every episode of the step ([env seed, group id] by episode id) and the ids of this slice. */
  readonly episodes: readonly (readonly [number, number])[];
  readonly indices: readonly number[];
}

export type TaskReply =
  | { readonly type: 'taken' | 'alive'; readonly worker: string }
  | { readonly type: 'result'; readonly worker: string; readonly version: number; readonly part: RolloutPart }
  | { readonly type: 'stored'; readonly worker: string; readonly version: number; readonly key: string }
  | { readonly type: 'error'; readonly worker: string; readonly message: string };
