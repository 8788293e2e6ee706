/**
 * The job runner's RL algorithms, each one entry: what it needs of the job (a value head, a frozen
 * reference, groups of two or more) and how one step's rollout becomes packed batches and a loss.
 * runTraining asks the entry and never the algorithm's name, so a new algorithm is a new entry
 * here (its datum builder and loss spec live in src/algorithms/).
 *
 * DPO reduces per pair, not per token: its step computes the policy's log-probs on the host and
 * trains the per-token DPO gradient with `forwardBackwardCustom`'s recipe (custom_loss.ts) — a loss
 * over per-token log-probs, as Tinker's forward_backward_custom, also open to users.
 */
import { type MovingBaseline } from '../algorithms/advantages.ts';
import type { Datum } from '../algorithms/datum.ts';
import { dpoDatums, dpoPairsFromGroups, dpoReference } from '../algorithms/dpo.ts';
import { grpoDatums } from '../algorithms/grpo.ts';
import { dpoLoss, grpoLoss, importanceSamplingLoss, type LossSpec, ppoLoss, valueLossSpec } from '../algorithms/loss_spec.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import { ppoDatums } from '../algorithms/ppo.ts';
import { reinforceDatums } from '../algorithms/reinforce.ts';
import { rlooDatums } from '../algorithms/rloo.ts';
import type { TrajectoryGroup } from '../env/types.ts';
import type { TrainingClient } from './clients.ts';
import { customLossBatches } from './custom_loss.ts';
import { fitting, forwardTrajectories, packForTraining, type PackSettings } from './train_step.ts';

/** GAE's λ of the job runner's PPO (see rl_job.ts's header). */
export const PPO_LAMBDA = 1;

/** What a step's batches are built from. */
export interface AlgoStepContext {
  readonly policy: TrainingClient;
  /** The frozen start, for algorithms that ask for one (`reference: true`). */
  readonly reference: TrainingClient | null;
  readonly pack: PackSettings;
  /** REINFORCE's moving baseline, carried across steps (and in checkpoints). */
  baseline: MovingBaseline;
  /**
   * GRPO's per-token KL penalty to `reference` (k3, as DeepSeekMath): it holds tokens the start was
   * sure of (an answer format) while the ones the reward moves (a message, a pick) may go; with it,
   * tied groups train too (for the KL term alone). 0 or absent: none, no reference is needed, and
   * tied groups are left out.
   */
  readonly klBeta?: number;
  /** GRPO's entropy bonus (ℓ −= entropyCoef·H per token; with it tied groups train too); 0 or absent: none. */
  readonly entropyCoef?: number;
}

export interface AlgoStep {
  readonly batches: PackedBatch[];
  readonly loss: LossSpec;
  /** Datums (or DPO sequences) trained on; 0 when every group tied. */
  readonly datums: number;
  /** The step's loss as the algorithm defines it, when the trained surrogate's is not it (DPO's pair loss). */
  readonly reportedLoss?: number;
}

export interface JobAlgorithm {
  /** The policy carries a value head (PPO's critic). */
  readonly valueHead: boolean;
  /** A frozen copy of the starting policy is kept (DPO's reference). */
  readonly reference: boolean;
  /** Attempts per task at least (group-relative algorithms compare within groups). */
  readonly minGroupSize: number;
  step(c: AlgoStepContext, groups: readonly TrajectoryGroup[], seed: number): Promise<AlgoStep>;
}

/** Datums and loss → packed batches of the job's micro-batch shape (datums too long for it left out). */
export function packedStep(pack: PackSettings, datums: Datum[], loss: LossSpec, seed: number): AlgoStep {
  const fit = fitting(datums, pack.maxSeqLen);
  const aggregation = loss.kind === 'dpo' ? 'token_mean' : loss.aggregation;
  return { batches: fit.length === 0 ? [] : [...packForTraining(fit, pack, seed, aggregation).batches], loss, datums: fit.length };
}

export const JOB_ALGORITHMS = {
  grpo: {
    valueHead: false, reference: false, minGroupSize: 2,
    step: async (c, groups, seed) => {
      const [klBeta, entropyCoef] = [c.klBeta ?? 0, c.entropyCoef ?? 0];
      // Tied groups carry no advantage: left out, unless an entropy bonus trains on them.
      if (klBeta === 0) return packedStep(c.pack, grpoDatums(groups, { skipUniformGroups: entropyCoef === 0 }), grpoLoss({ klBeta: 0, entropyCoef }), seed);
      if (c.reference === null) throw new Error('grpo: klBeta > 0 needs the frozen reference client');
      // Every group trains, tied ones too: their advantages are 0, but the KL term still pulls a
      // policy that drifted (a broken format, where every attempt fails alike) back to its start.
      const trajs = groups.flatMap((g) => g.trajectories);
      const ref = trajs.length === 0 ? null : await forwardTrajectories(c.reference, trajs, c.pack);
      const refOf = new Map(trajs.map((t, i) => [t, ref!.logprobsNT[i]] as const));
      return packedStep(c.pack, grpoDatums(groups, { refLogprobs: (t) => refOf.get(t)! }), grpoLoss({ klBeta, entropyCoef }), seed);
    },
  },
  rloo: {
    valueHead: false, reference: false, minGroupSize: 2,
    step: async (c, groups, seed) => packedStep(c.pack, rlooDatums(groups, { skipUniformGroups: true }), importanceSamplingLoss(), seed),
  },
  reinforce: {
    valueHead: false, reference: false, minGroupSize: 1,
    step: async (c, groups, seed) => {
      const r = reinforceDatums(groups, c.baseline);
      c.baseline = r.baseline;
      return packedStep(c.pack, r.datums, importanceSamplingLoss(), seed);
    },
  },
  ppo: {
    valueHead: true, reference: false, minGroupSize: 1,
    step: async (c, groups, seed) => {
      const trajs = groups.flatMap((g) => g.trajectories);
      const { valuesNT } = await forwardTrajectories(c.policy, trajs, c.pack);
      if (valuesNT === null) throw new Error('ppo: the policy client has no value head');
      return packedStep(c.pack, ppoDatums(trajs, valuesNT, { lambda: PPO_LAMBDA }), ppoLoss({ value: valueLossSpec() }), seed);
    },
  },
  dpo: {
    valueHead: false, reference: true, minGroupSize: 2,
    // Online pairs ranked by reward, the reference's log-probs, then the per-token DPO gradient.
    step: async (c, groups, seed) => {
      const trajs = groups.flatMap((g) => g.trajectories);
      const none = { batches: [], loss: importanceSamplingLoss(), datums: 0, reportedLoss: 0 };
      if (trajs.length === 0 || c.reference === null) return none;
      const ref = await forwardTrajectories(c.reference, trajs, c.pack);
      const refOf = new Map(trajs.map((t, i) => [t, ref.logprobsNT[i]] as const));
      const datums = fitting(dpoDatums(dpoPairsFromGroups(groups, { refLogprobs: (t) => refOf.get(t)! })), c.pack.maxSeqLen);
      if (datums.length === 0) return none;
      const beta = dpoLoss().beta;
      // Pairs share a micro-batch: an even row count.
      const r = await customLossBatches(c.policy, datums, { ...c.pack, rows: c.pack.rows + (c.pack.rows % 2) }, seed, (seqs) => {
        const d = dpoReference(beta, seqs.map(({ datum, logprobsT }) => ({ datum, logprobsT })));
        return { loss: d.loss, dlogprobsST: d.dlogprobsST };
      });
      return { batches: r.batches, loss: importanceSamplingLoss(), datums: datums.length, reportedLoss: r.loss };
    },
  },
} as const satisfies Record<string, JobAlgorithm>;

export type RlAlgo = keyof typeof JOB_ALGORITHMS;
