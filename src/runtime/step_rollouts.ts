/**
 * Where an RL step's rollout is sampled: by default all on this host, with the current policy;
 * a job given `rollouts` (the fleet's distributed rollouts, src/fleet/rollouts.ts) hands each
 * step's episodes to it, which may have other hosts sample slices of them and returns the parts
 * (evaluate.ts's RolloutPart) that runTraining assembles in episode order (rolloutOf).
 *
 * Policy versions: version k is the policy RL step k trains (version 0 the policy RL starts from).
 * A part sampled by an older version is off-policy; the algorithms' importance ratios then use the
 * sampling log-probs each trajectory carries (its logprobsT), not the current policy's.
 */
import type { EpisodeSpec } from '../env/batch.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { HostParams } from './clients.ts';
import type { RolloutPart } from './evaluate.ts';

/** The weights a policy version samples with: a LoRA adapter on a base, or every parameter (lora null). */
export interface PolicyWeights {
  readonly cfg: ModelConfig;
  readonly lora: LoraConfig | null;
  /** The adapter's tensors (lora), or every parameter. */
  readonly tensors: HostParams;
  /** The base a LoRA adapter is on (a from-scratch or warm-started model). */
  readonly base?: HostParams;
}

export interface StepRolloutRequest {
  /** The RL step, which is also the current policy version. */
  readonly step: number;
  /** The step's env and sampler seed (stepSeed). */
  readonly seed: number;
  readonly episodes: readonly EpisodeSpec[];
  /** Samples the episodes at `indices` on this host, with the current policy. */
  readonly local: (indices: readonly number[]) => Promise<RolloutPart>;
  /** The current policy's weights (host copies; read on demand). */
  readonly weights: () => Promise<PolicyWeights>;
  /** A later step's seed and episodes (for sampling ahead), or null past the job's last step. */
  readonly plan: (step: number) => { readonly seed: number; readonly episodes: readonly EpisodeSpec[] } | null;
}

/**
 * A job's rollout source (see the header). Parts must hold each episode of the step once. The
 * caller owns it (runTraining never closes it: a job recovered after a GPU loss goes on with it).
 */
export interface StepRollouts {
  rollout(r: StepRolloutRequest): Promise<readonly RolloutPart[]>;
}
