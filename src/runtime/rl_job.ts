/**
 * The job runner: an SFT warm start on the environment's demonstrations, then RL (GRPO, PPO, RLOO,
 * REINFORCE or online DPO), with held-out evaluation before RL (after SFT) and after — built from
 * the Tinker-style clients alone (ServiceClient / TrainingClient / SamplingClient), no back door.
 *
 * One RL step: roll out `groups × groupSize` episodes with a sampling snapshot of the current
 * weights → datums by the algorithm → packDatums into micro-batches → forwardBackward each → one
 * optimStep → a new snapshot. The job seed fixes everything: model init, demonstrations, SFT
 * batch order, env seeds and sampler seeds of every step, packing order.
 *
 * Choices and departures, each for a small from-scratch model on a software adapter:
 * - the warm start trains every parameter of the from-scratch base; the RL job is then LoRA on the
 *   SFT'd weights (a new base model) or, with `lora: null`, full-parameter;
 * - GRPO runs without the KL term (β = 0, as Dr. GRPO and DAPO do), so without reference log-probs;
 * - RLOO and REINFORCE train with the importance-sampling loss (on-policy: ρ = 1 at the first
 *   micro-batch); PPO with the clipped surrogate and a clipped value loss on a value head, GAE
 *   with λ = 1 (PPO_LAMBDA; verl's default for outcome rewards): the only reward comes at the end
 *   of an episode, and at λ = 0.95 per token it reaches a decision ~100 tokens earlier (a
 *   guess-number episode's first guess) with weight 0.95^100 ≈ 0.006 — credit left to a critic
 *   that starts from nothing, so the policy gets next to no signal from the outcome;
 * - DPO pairs are made online from each group ranked by reward, the reference is the frozen start
 *   (a fresh adapter on the SFT'd base, B = 0, or an untouched full copy). The engine reduces per
 *   token, so the step takes the DPO gradient per token on the host (custom_loss.ts).
 * Each algorithm's step — datums, loss, what it needs — is its entry in job_algorithms.ts.
 */
import { EMPTY_BASELINE } from '../algorithms/advantages.ts';
import { groupEpisodes } from '../env/batch.ts';
import type { Trajectory } from '../env/types.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import { ConfigError } from '../errors.ts';
import { Rng } from '../util/rng.ts';
import type { HostParams, ServiceClient, TrainingClient } from './clients.ts';
import { checkResumable, type JobCheckpointing } from './job_checkpoint.ts';
import { checkJobOptions } from './job_config.ts';
import { namingStep } from './errors.ts';
import { type DroppedByReason, stopIfAllDropped } from './env_failures.ts';
import { type OpenedPretrained, openPretrainedJob, PRETRAINED_CONTEXT, type PretrainedJob } from './pretrained_job.ts';

export type { JobCheckpoint, JobCheckpointing, JobProgress } from './job_checkpoint.ts';
import { type AlgoStepContext, JOB_ALGORITHMS, type JobAlgorithm } from './job_algorithms.ts';
import { type AgentSettings, demonstrationTrajectories, evaluate, rolloutOf, rolloutPart } from './evaluate.ts';
import type { PolicyWeights, StepRollouts } from './step_rollouts.ts';
import type { JobEnv } from './job_envs.ts';
import { spread, stepLossStats } from './metrics.ts';
import { type LrSchedule, runSft } from './sft_job.ts';
import { type PackSettings, type StepOutcome, trainStep } from './train_step.ts';

export const ALGOS = ['grpo', 'ppo', 'rloo', 'reinforce', 'dpo', 'sft'] as const;
export type Algo = (typeof ALGOS)[number];
// Every RL algorithm a job can name has its entry (job_algorithms.ts): checked by the compiler.
const _everyAlgoRegistered: Record<Exclude<Algo, 'sft'>, JobAlgorithm> = JOB_ALGORITHMS;
void _everyAlgoRegistered;

export interface JobOptions {
  readonly env: JobEnv;
  readonly algo: Algo;
  readonly model: ModelConfig;
  /**
   * The pretrained checkpoint `model` is the config of: the job uses its weights, tokenizer, chat
   * template and stop ids instead of a seeded byte-level model, and a warm start (when asked for)
   * trains the RL job's own adapter (or weights) on the demonstrations, in the model's tool syntax.
   */
  readonly pretrained?: PretrainedJob;
  /**
   * Weights of `model` to start from instead of its seeded init (a from-scratch config only): e.g.
   * an SFT run's `result.trained.tensors`, or a warm-started checkpoint shipped with an app. The
   * warm start, if any, continues from them; without one, RL starts on them.
   */
  readonly weights?: HostParams;
  /** LoRA of the RL job; null: full-parameter RL. */
  readonly lora: LoraConfig | null;
  /** RL steps (for 'sft': SFT steps). */
  readonly steps: number;
  readonly seed: number;
  readonly groups: number;
  readonly groupSize: number;
  readonly lr: number;
  /** The SFT warm start; `schedule` defaults to 'cosine' (see SftOptions.schedule). */
  readonly warmStart: { readonly steps: number; readonly demos: number; readonly batchSize: number; readonly lr: number; readonly schedule?: LrSchedule } | null;
  /** Held-out episodes per evaluation (0: no evaluation). */
  readonly evalEpisodes: number;
  readonly temperature: number;
  readonly maxNewTokens: number;
  /** Rows per micro-batch. */
  readonly rows: number;
  readonly maxGradNorm: number;
  /** Time limit of each environment call (create + reset, step, a tool) in ms; default 30000. */
  readonly stepTimeoutMs?: number;
  readonly onStep?: (m: StepMetrics) => void;
  readonly onPhase?: (phase: 'warmstart' | 'eval-before' | 'rl' | 'eval-after', detail: { steps?: number }) => void;
  /** Something the caller should know that does not stop the job (e.g. most episodes ending at the turn limit); said once each. */
  readonly onWarning?: (message: string) => void;
  /** Prefix of the job's model and client ids, for several jobs on one service (default none). */
  readonly id?: string;
  /** Checkpoints: save the run's state every few steps, and resume from a saved one. */
  readonly checkpoint?: JobCheckpointing;
  /** Where RL steps' rollouts are sampled (step_rollouts.ts); default: all on this host. */
  readonly rollouts?: StepRollouts;
}

/** One step's metrics (a line of metrics.jsonl). */
export interface StepMetrics {
  readonly phase: 'sft' | 'rl';
  readonly step: number;
  readonly loss: number;
  /** Mean episode reward of the step's rollout (RL steps). */
  readonly reward?: number;
  readonly success?: number;
  readonly gradNorm: number;
  readonly skipped: boolean;
  readonly trainTokens: number;
  readonly sampledTokens: number;
  readonly trainSeconds: number;
  readonly sampleSeconds: number;
  /** Datums (or DPO sequences) trained on; 0 when every group had equal rewards. */
  readonly datums: number;
  readonly dropped: number;
  /** Episodes of the step that ended at the turn limit (RL steps). */
  readonly turnLimited?: number;
  /** The dropped episodes by reason (timeout, env_error, invalid_reward): count and first message; absent when none were dropped. */
  readonly droppedBy?: DroppedByReason;
  /** Spread (standard deviation) of the step's episode rewards (RL steps). */
  readonly rewardStd?: number;
  /** Token-weighted means over the step's micro-batches (metrics.ts). */
  readonly clipFraction?: number;
  readonly approxKl?: number;
  readonly entropy?: number;
  /** Tokens trained and sampled per second of the step. */
  readonly tokensPerSecond?: number;
  /** The step's share of device time, when the service runs several jobs on a scheduler. */
  readonly deviceShare?: number;
}

/** The run summary (the --json file). */
export interface JobSummary {
  readonly env: string;
  readonly algo: Algo;
  readonly seed: number;
  readonly steps: number;
  readonly model: string;
  readonly trainable: 'lora' | 'all';
  readonly lora: LoraConfig | null;
  readonly warmStartSteps: number;
  /** Mean reward of each RL step's rollout. */
  readonly rewardCurve: number[];
  /** Loss of each RL step (for 'sft': of each SFT step). */
  readonly lossCurve: number[];
  readonly sftLossCurve: number[];
  /** Held-out success rate before RL (after the warm start) and after. */
  readonly successBefore: number;
  readonly successAfter: number;
  readonly rewardBefore: number;
  readonly rewardAfter: number;
  readonly evalEpisodes: number;
  readonly wallSeconds: number;
  readonly trainTokensPerSecond: number;
  readonly sampleTokensPerSecond: number;
  readonly peakGpuBytes: number;
  /** The WebGPU device the run used (its adapter's description; the trained weights are in `trained`). */
  readonly device: AdapterSummary;
}

export interface JobResult extends JobSummary {
  /** The trained tensors: the LoRA adapter's, or every parameter (full). */
  readonly trained: {
    readonly cfg: ModelConfig;
    readonly lora: LoraConfig | null;
    readonly tensors: HostParams;
    /** LoRA runs from scratch: the base the adapter was trained on (the warm-started model, or the from-scratch init). */
    readonly base?: HostParams;
    /** Jobs on a pretrained checkpoint: which one (repo and commit) and its tokenizer files, for the exported adapter. */
    readonly pretrained?: { readonly job: PretrainedJob; readonly tokenizerFiles: Readonly<Record<string, Uint8Array>> };
  };
}

/** The JSON-safe part of a result. */
export function summaryOf(r: JobResult): JobSummary {
  const { trained: _trained, ...summary } = r;
  return summary;
}


/**
 * How a job's agent meets its environment: the byte tokenizer and the model's context from
 * scratch; a pretrained model's tokenizer, chat-template format and eos ids, within
 * PRETRAINED_CONTEXT. Used by the job runner and by `npm run eval` alike.
 */
export function agentSettingsOf(o: JobOptions, pre: OpenedPretrained | null): AgentSettings {
  return {
    tokenizer: pre?.tokenizer ?? new ByteTokenizer(),
    maxNewTokens: o.maxNewTokens,
    maxSequenceTokens: pre ? Math.min(o.model.maxSeqLen, PRETRAINED_CONTEXT) : o.model.maxSeqLen,
    temperature: o.temperature,
    ...(o.stepTimeoutMs !== undefined ? { stepTimeoutMs: o.stepTimeoutMs } : {}),
    ...(pre ? { format: pre.format, eosTokenIds: pre.eosTokenIds } : o.env.format ? { format: o.env.format } : {}),
  };
}

/** The warning for a step where most episodes ended at the turn limit, else null. */
export function turnLimitWarning(env: { name: string; maxTurns: number }, step: number, episodes: number, turnLimited: number): string | null {
  if (episodes === 0 || turnLimited * 2 <= episodes) return null;
  return `RL step ${step}: ${turnLimited} of ${episodes} episodes of ${env.name} ended at the turn limit (${env.maxTurns} turns; each tool call is one) — raise maxTurns if the agent needs more calls before it answers`;
}

export { PPO_LAMBDA } from './job_algorithms.ts';

/** The env and sampler seed of RL step `step` (a stream of its own per step). */
export function stepSeed(jobSeed: number, step: number): number {
  return new Rng(jobSeed, 0x1000 + step).nextU32();
}

/**
 * Runs the whole job; see the header. The caller owns `service` (it is not closed). `opened`: the
 * job's pretrained checkpoint when the caller has opened it already (train() and the CLI do, to
 * check the job against its config first); used when it is the job's repo at the job's commit.
 */
export async function runTraining(service: ServiceClient, o: JobOptions, opened?: OpenedPretrained): Promise<JobResult> {
  checkJobOptions(o); // before any GPU work: a job built by hand is held to jobOptions' rules
  const ck = o.checkpoint;
  const from = ck?.from;
  if (from) checkResumable(o, from);
  const t0 = performance.now() - 1000 * (from?.wallSeconds ?? 0);
  const cfg = o.model;
  const reuse = opened !== undefined && o.pretrained !== undefined && opened.job.repo === o.pretrained.repo && opened.job.commit === o.pretrained.commit;
  const pre: OpenedPretrained | null = !o.pretrained ? null : reuse ? opened! : await openPretrainedJob(o.pretrained);
  if (pre && JSON.stringify(pre.config) !== JSON.stringify(cfg)) throw new ConfigError('model', `is not the config of ${o.pretrained!.repo} (config.json gives ${JSON.stringify(pre.config)})`);
  const agent = agentSettingsOf(o, pre);
  const tok = agent.tokenizer;
  const context = agent.maxSequenceTokens;
  const pack: PackSettings = { rows: o.rows, maxSeqLen: context, padId: tok.padId };
  const optim = { lr: o.lr, maxGradNorm: o.maxGradNorm };
  let trainTokens = from?.trainTokens ?? 0, trainSeconds = from?.trainSeconds ?? 0, sampledTokens = from?.sampledTokens ?? 0, sampleSeconds = from?.sampleSeconds ?? 0;
  const sftLossCurve: number[] = [...(from?.sftLossCurve ?? [])];
  const rewardCurve: number[] = [...(from?.rewardCurve ?? [])];
  const lossCurve: number[] = [...(from?.lossCurve ?? [])];
  let before = from?.before ?? { success: 0, meanReward: 0 };
  let baseline = from?.baseline ?? EMPTY_BASELINE;
  /** The RL base's weights when they are not the seeded init (kept for checkpoints). */
  let base = from?.phase === 'rl' ? from.base : (o.weights ?? null);
  const prefix = o.id ? `${o.id}/` : '';
  const sftId = `${prefix}${cfg.name ?? cfg.family}-sft-${o.seed}`;
  let modelId = await service.createModel(cfg, pre ? { pretrained: pre.serviceRef, id: `${prefix}${cfg.name}` } : base ? { params: base, id: sftId } : { seed: o.seed });
  const toDispose: TrainingClient[] = [];
  const save = async (phase: 'sft' | 'rl', step: number, trainer: TrainingClient, haveBefore: boolean) => {
    if (!ck) return;
    const trainerState = await trainer.saveState();
    await ck.save({
      phase, step, sftLossCurve: [...sftLossCurve], rewardCurve: [...rewardCurve], lossCurve: [...lossCurve],
      before: haveBefore ? { ...before } : null, baseline, trainTokens, trainSeconds, sampledTokens, sampleSeconds,
      wallSeconds: (performance.now() - t0) / 1000, peakGpuBytes: await peakBytes(), trainer: trainerState, base: phase === 'rl' ? base : null,
    });
  };
  const lossStats = (s: StepOutcome) => ({ clipFraction: s.stats.clipFraction, approxKl: s.stats.approxKl, entropy: s.stats.entropy });
  // Tokens per second, and the step's device-time share when the service runs jobs on a scheduler.
  const lastTime = new Map<string, { jobMs: number; totalMs: number }>();
  const stepRates = (clientId: string, tokens: number, seconds: number) => {
    const now = service.deviceTime?.(clientId);
    const last = lastTime.get(clientId);
    const share = now && last && now.totalMs > last.totalMs ? (now.jobMs - last.jobMs) / (now.totalMs - last.totalMs) : undefined;
    if (now) lastTime.set(clientId, now);
    return { tokensPerSecond: seconds > 0 ? tokens / seconds : 0, ...(share !== undefined ? { deviceShare: share } : {}) };
  };
  // Most episodes cut by the turn limit: the agent never got to answer (a tool call is a turn). Said once.
  let warnedTurns = false;
  const warnTurnLimit = (step: number, ro: { episodes: number; turnLimited: number }) => {
    const w = warnedTurns ? null : turnLimitWarning(o.env, step, ro.episodes, ro.turnLimited);
    if (w === null) return;
    warnedTurns = true;
    o.onWarning?.(w);
  };
  const due = (done: number, total: number) => ck !== undefined && (done % ck.every === 0 || done === total);
  const peakBytes = async () => Math.max(from?.peakGpuBytes ?? 0, (await service.memory()).peakLiveBytes);

  try {
    // 1. Warm start (or, for 'sft', the whole job). From scratch: full-parameter SFT of the seeded
    // base, which then becomes the RL job's base. Pretrained: SFT of the RL job's own trainable
    // (its LoRA adapter, or every weight) on the checkpoint, continued by RL on the same client.
    const sftSteps = o.algo === 'sft' ? o.steps : (o.warmStart?.steps ?? 0);
    const sftLr = o.algo === 'sft' ? o.lr : (o.warmStart?.lr ?? o.lr);
    if (o.algo === 'sft' && !from) {
      before = await evalIfAsked(service, modelId, o, agent);
    }
    // The demonstrations first: an environment that fails them all stops the job before any GPU work.
    const demonstrations = async () => {
      o.onPhase?.('warmstart', { steps: sftSteps });
      return demonstrationTrajectories(o.env, o.warmStart?.demos ?? 256, o.seed, agent);
    };
    const warmStart = async (client: TrainingClient, demos: readonly Trajectory[]) => {
      stepRates(client.id, 0, 0); // the device-time baseline
      if (from) await client.loadState(from.trainer);
      await runSft(client, demos, {
        steps: sftSteps, batchSize: o.warmStart?.batchSize ?? 32, optim: { lr: sftLr, maxGradNorm: o.maxGradNorm }, seed: o.seed, pack,
        schedule: o.algo === 'sft' ? 'constant' : (o.warmStart?.schedule ?? 'cosine'),
        startStep: from?.step ?? 0,
        onStep: (step, s) => o.onStep?.({ phase: 'sft', step, loss: s.loss, gradNorm: s.gradNorm, skipped: s.skipped, trainTokens: s.tokens, sampledTokens: 0, trainSeconds: s.seconds, sampleSeconds: 0, datums: 0, dropped: 0, entropy: s.stats.entropy, ...stepRates(client.id, s.tokens, s.seconds) }),
        afterStep: async (step, s) => {
          sftLossCurve.push(s.loss);
          trainTokens += s.tokens;
          trainSeconds += s.seconds;
          if (due(step + 1, sftSteps)) await save('sft', step + 1, client, o.algo === 'sft');
        },
      });
    };
    if (!pre && sftSteps > 0 && from?.phase !== 'rl') {
      const demos = await demonstrations();
      const sft = await service.createTrainingClient({ modelId, trainable: 'all', seed: o.seed, id: `${prefix}warmstart` });
      try {
        await warmStart(sft, demos);
        const warm = await sft.weights();
        await service.releaseModel(modelId);
        modelId = await service.createModel(cfg, { params: warm, id: sftId });
        if (o.algo !== 'sft') base = warm;
      } finally {
        await sft.close();
      }
    }
    if (o.algo === 'sft' && !pre) {
      o.onPhase?.('eval-after', {});
      const after = await evalIfAsked(service, modelId, o, agent);
      return finish({ rewardCurve: [], lossCurve: sftLossCurve, sftLossCurve, before, after, trained: { cfg, lora: null, tensors: await service.modelWeights(modelId) } });
    }

    // 2. The RL job on top of the (warm-started) base.
    const trainable = o.lora ? 'lora' : 'all';
    const demos = pre && sftSteps > 0 && from?.phase !== 'rl' ? await demonstrations() : null;
    const algo = o.algo === 'sft' ? null : JOB_ALGORITHMS[o.algo];
    const policy = await service.createTrainingClient({ modelId, trainable, ...(o.lora ? { lora: o.lora } : {}), seed: o.seed, valueHead: algo?.valueHead ?? false, id: `${prefix}${algo ? `rl-${o.algo}` : 'sft'}` });
    toDispose.push(policy);
    if (demos) await warmStart(policy, demos);
    const pretrainedOut = pre ? { pretrained: { job: pre.job, tokenizerFiles: pre.tokenizerFiles } } : {};
    if (!algo) {
      o.onPhase?.('eval-after', {});
      const s = await policy.samplingClient();
      try {
        const after = o.evalEpisodes > 0 ? await namingStep('the evaluation after SFT', () => evaluate(o.env, s.sample, o.evalEpisodes, o.seed, agent)) : { success: 0, meanReward: 0 };
        return finish({ rewardCurve: [], lossCurve: sftLossCurve, sftLossCurve, before, after, trained: { cfg, lora: o.lora, tensors: await policy.weights(), ...pretrainedOut } });
      } finally {
        await s.close();
      }
    }
    // A reference is the frozen start: the policy as the warm start left it.
    const startAdapter = pre && o.lora && sftSteps > 0 && algo.reference ? { adapter: await policy.weights() } : {};
    const reference = algo.reference ? await service.createTrainingClient({ modelId, trainable, ...(o.lora ? { lora: o.lora } : {}), ...startAdapter, seed: o.seed, id: `${prefix}reference` }) : null;
    if (reference) toDispose.push(reference);
    if (from?.phase === 'rl') await policy.loadState(from.trainer);
    stepRates(policy.id, 0, 0); // the device-time baseline
    const c: AlgoStepContext = { policy, reference, pack, baseline };

    let sampler = await policy.samplingClient();
    // For rollouts sampled elsewhere (step_rollouts.ts): the policy's weights, and later steps' episodes.
    let baseHost: HostParams | undefined;
    const policyWeights = async (): Promise<PolicyWeights> => ({ cfg, lora: o.lora, tensors: await policy.weights(), ...(o.lora && !pre ? { base: (baseHost ??= base ?? (await service.modelWeights(modelId))) } : {}) });
    const plan = (k: number) => (k < o.steps ? { seed: stepSeed(o.seed, k), episodes: groupEpisodes(o.groups, o.groupSize, stepSeed(o.seed, k)) } : null);
    if (from?.phase !== 'rl') {
      o.onPhase?.('eval-before', {});
      before = o.evalEpisodes > 0 ? await namingStep('the evaluation before RL', () => evaluate(o.env, sampler.sample, o.evalEpisodes, o.seed, agent)) : before;
      if (ck) await save('rl', 0, policy, true); // the warm start and its evaluation are done for good
    }
    o.onPhase?.('rl', { steps: o.steps });
    for (let step = from?.phase === 'rl' ? from.step : 0; step < o.steps; step++) {
      const { seed, episodes } = plan(step)!;
      const ts = performance.now();
      const local = (indices?: readonly number[]) => rolloutPart(o.env, sampler.sample, episodes, seed, agent, indices);
      const ro = await namingStep(`RL step ${step}'s rollout`, async () => rolloutOf(o.env, episodes, o.rollouts ? await o.rollouts.rollout({ step, seed, episodes, local, weights: policyWeights, plan }) : [await local()]));
      const sSec = (performance.now() - ts) / 1000;
      stopIfAllDropped(o.env.name, `RL step ${step}`, ro.episodes, ro.droppedEpisodes); // nothing to learn from: say why
      const { batches, loss: lossSpec, datums: nDatums, reportedLoss } = await algo.step(c, ro.groups, seed);
      let out: StepOutcome = { loss: 0, gradNorm: 0, skipped: true, tokens: 0, seconds: 0, stats: stepLossStats([]) };
      if (batches.length > 0) {
        out = await trainStep(policy, batches, lossSpec, optim);
        await sampler.close();
        sampler = await policy.samplingClient();
      }
      const loss = reportedLoss ?? out.loss;
      warnTurnLimit(step, ro);
      rewardCurve.push(ro.meanReward);
      lossCurve.push(loss);
      trainTokens += out.tokens;
      trainSeconds += out.seconds;
      sampledTokens += ro.sampledTokens;
      sampleSeconds += sSec;
      o.onStep?.({
        phase: 'rl', step, loss, reward: ro.meanReward, success: ro.success, gradNorm: out.gradNorm, skipped: out.skipped,
        trainTokens: out.tokens, sampledTokens: ro.sampledTokens, trainSeconds: out.seconds, sampleSeconds: sSec, datums: nDatums, dropped: ro.dropped, turnLimited: ro.turnLimited, ...(ro.dropped > 0 ? { droppedBy: ro.droppedBy } : {}),
        rewardStd: spread(ro.groups.flatMap((g) => g.trajectories.map((t) => t.reward))), ...lossStats(out), ...stepRates(policy.id, out.tokens + ro.sampledTokens, out.seconds + sSec),
      });
      baseline = c.baseline;
      if (due(step + 1, o.steps)) await save('rl', step + 1, policy, true);
    }
    o.onPhase?.('eval-after', {});
    const after = o.evalEpisodes > 0 ? await namingStep('the evaluation after RL', () => evaluate(o.env, sampler.sample, o.evalEpisodes, o.seed, agent)) : { success: 0, meanReward: 0 };
    await sampler.close();
    return finish({ rewardCurve, lossCurve, sftLossCurve, before, after, trained: { cfg, lora: o.lora, tensors: await policy.weights(), ...(o.lora && !pre ? { base: base ?? (await service.modelWeights(modelId)) } : {}), ...pretrainedOut } });
  } finally {
    for (const cl of toDispose) await cl.close();
    await service.releaseModel(modelId).catch(() => {});
  }

  async function finish(r: {
    rewardCurve: number[]; lossCurve: number[]; sftLossCurve: number[];
    before: { success: number; meanReward: number }; after: { success: number; meanReward: number };
    trained: JobResult['trained'];
  }): Promise<JobResult> {
    const peakGpuBytes = await peakBytes();
    return {
      env: o.env.name, algo: o.algo, seed: o.seed, steps: o.steps, model: cfg.name ?? cfg.family,
      trainable: r.trained.lora ? 'lora' : 'all', lora: r.trained.lora,
      warmStartSteps: o.algo === 'sft' ? 0 : (o.warmStart?.steps ?? 0),
      rewardCurve: r.rewardCurve, lossCurve: r.lossCurve, sftLossCurve: r.sftLossCurve,
      successBefore: r.before.success, successAfter: r.after.success, rewardBefore: r.before.meanReward, rewardAfter: r.after.meanReward,
      evalEpisodes: o.evalEpisodes,
      wallSeconds: (performance.now() - t0) / 1000,
      trainTokensPerSecond: trainSeconds > 0 ? trainTokens / trainSeconds : 0,
      sampleTokensPerSecond: sampleSeconds > 0 ? sampledTokens / sampleSeconds : 0,
      peakGpuBytes,
      device: service.adapter,
      trained: r.trained,
    };
  }
}

/** Evaluation of a base model as it is (no adapter). */
async function evalIfAsked(service: ServiceClient, modelId: string, o: JobOptions, agent: AgentSettings): Promise<{ success: number; meanReward: number }> {
  if (o.evalEpisodes <= 0) return { success: 0, meanReward: 0 };
  const s = await service.createSamplingClient(modelId);
  try {
    return await namingStep('an evaluation of the SFT model', () => evaluate(o.env, s.sample, o.evalEpisodes, o.seed, agent));
  } finally {
    await s.close();
  }
}


