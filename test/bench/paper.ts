/**
 * The `paper` part (issue 8): the OpenTinker paper's results, reproduced on our engine.
 *
 * 1. The table: per seed, one SFT warm start (a job with no RL steps whose last warm-start
 *    checkpoint is kept, as the algorithms part does), then two RL jobs resumed from it — LoRA and
 *    full-parameter (paper_settings.ts says why each learning rate). Peak bytes: each job runs on a
 *    LocalService of its own (the jobs run one after another; each releases everything it made),
 *    and a PeakTracker starts counting when its RL phase begins (onPhase 'eval-before': the warm
 *    start's full-parameter trainer is closed by then, the RL base and the policy are live) — not
 *    runTraining's peakGpuBytes, which carries the resumed checkpoint's (the warm start's) peak and
 *    the pool's since the context was made. The tracker also cuts out the training steps' own peak
 *    (first forward/backward to the end of the optimizer step), since rollouts' decode buffers
 *    can outweigh them. Seconds per training step: the median of the RL steps' train-only seconds
 *    (StepMetrics.trainSeconds: forward/backward + optimizer; sampling excluded).
 * 2. Reproducibility: the first seed's LoRA job, shortened, from its warm start — run twice
 *    (same_seed_identical), and killed at step k then resumed from the checkpoint in a file store
 *    by a new checkpointer (resume_identical); both compared bitwise on the reward and loss curves,
 *    every step's metrics but the timings, the held-out success and the trained adapter's bytes.
 *    The third: the table's LoRA jobs, from the same warm starts, in Chromium on SwiftShader
 *    (paper_chromium.ts).
 * Several agents at once are the `agents` part's (agents.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireGpu, type GpuContext } from '../../src/gpu/device.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { type JobCheckpoint, type JobCheckpointing, JobCheckpointer, type StoredJobState } from '../../src/runtime/job_checkpoint.ts';
import type { TrainingClient, TrainingClientOptions } from '../../src/runtime/clients.ts';
import { LocalService, type LocalServiceOptions } from '../../src/runtime/local_service.ts';
import { type JobResult, runTraining, type StepMetrics } from '../../src/runtime/rl_job.ts';
import { CheckpointStore } from '../../src/runtime/store/checkpoint_store.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';
import { jobOptions, type TrainSettings } from '../../src/runtime/train.ts';
import { type CrossOutcome, runCrossAdapter } from './paper_chromium.ts';
import { paperJob, type Mode, type PaperSettings } from './paper_settings.ts';
import { compareRuns, medianSecondsPerKToken, medianTrainSeconds, PeakTracker, type RunTrace, stepKey } from './paper_stats.ts';

export interface ModeRun {
  readonly seed: number;
  readonly mode: Mode;
  readonly lr: number;
  readonly successBefore: number;
  readonly successAfter: number;
  readonly rewardCurve: readonly number[];
  readonly lossCurve: readonly number[];
  readonly stepSeconds: number;
  readonly msPerKToken: number;
  /** Peak pool bytes of the job's RL phase (rollouts, evaluations and training steps), and of its training steps alone. */
  readonly peakBytes: number;
  readonly trainPeakBytes: number;
  readonly seconds: number;
}

export interface SeedRuns {
  readonly seed: number;
  readonly warmStartSeconds: number;
  readonly sftLossCurve: readonly number[];
  readonly lora: ModeRun;
  readonly full: ModeRun;
}

export interface ReproCheck {
  readonly identical: boolean;
  readonly differences: readonly string[];
  /** RL steps that trained (a run whose steps all skipped would compare vacuously). */
  readonly trainedSteps: number;
}

export interface PaperReport {
  readonly settings: PaperSettings & { readonly maxSeqLen: number };
  readonly seeds: readonly SeedRuns[];
  readonly sameSeed: ReproCheck;
  readonly resume: ReproCheck & { readonly killedAt: number };
  readonly cross: CrossOutcome;
  readonly seconds: number;
}

interface Ran {
  readonly result: JobResult;
  readonly steps: readonly StepMetrics[];
  readonly seconds: number;
  /** The pool's peak live bytes over the RL phase, and over its training steps alone (PeakTracker). */
  readonly peakBytes: number;
  readonly trainPeakBytes: number;
}

/** A LocalService whose RL policy (the runner's `<id>/rl-<algo>` client) tells a PeakTracker where its training steps begin and end. */
class TrackedService extends LocalService {
  constructor(ctx: GpuContext, options: LocalServiceOptions, readonly peaks: PeakTracker) {
    super(ctx, options);
  }

  override async createTrainingClient(o: TrainingClientOptions): Promise<TrainingClient> {
    const c = await super.createTrainingClient(o);
    if (!o.id?.includes('/rl-')) return c;
    const peaks = this.peaks;
    return new Proxy(c, {
      get(target, key) {
        if (key === 'forwardBackward') return (...a: Parameters<TrainingClient['forwardBackward']>) => (peaks.beginTrain(), target.forwardBackward(...a));
        if (key === 'optimStep') return async (...a: Parameters<TrainingClient['optimStep']>) => {
          const r = await target.optimStep(...a);
          peaks.endTrain();
          return r;
        };
        const v = Reflect.get(target, key);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }
}

class Killed extends Error {}

/**
 * One job on a LocalService of its own; the pool's peaks restart when its RL phase begins. With
 * `killAt`, the job throws Killed when RL step `killAt` reports (before that step's checkpoint);
 * its steps until then are in `steps`.
 */
async function job(
  ctx: GpuContext, settings: TrainSettings, checkpoint: JobCheckpointing | undefined, log: (line: string) => void,
  { killAt, steps = [] }: { killAt?: number; steps?: StepMetrics[] } = {},
): Promise<Ran> {
  const tok = new ByteTokenizer();
  const peaks = new PeakTracker(ctx.pool);
  const service = new TrackedService(ctx, { decode: (ids) => tok.decode(ids) }, peaks);
  const t0 = performance.now();
  try {
    const result = await runTraining(service, jobOptions({
      ...settings,
      onPhase: (p) => p === 'eval-before' && peaks.startPhase(),
      onStep: (m) => {
        if (m.phase === 'rl' && m.step === killAt) throw new Killed(`killed at RL step ${m.step}`);
        steps.push(m);
        if (m.phase === 'rl') log(`${settings.id} ${m.step + 1}/${settings.steps}: reward ${m.reward?.toFixed(3)} loss ${m.loss.toFixed(4)} train ${m.trainSeconds.toFixed(2)} s (${m.datums} datums)`);
        else if ((m.step + 1) % 50 === 0) log(`${settings.id} warm start ${m.step + 1}: loss ${m.loss.toFixed(4)}`);
      },
      ...(checkpoint ? { checkpoint } : {}),
    }));
    peaks.finish();
    return { result, steps, seconds: (performance.now() - t0) / 1000, peakBytes: peaks.phase, trainPeakBytes: peaks.train };
  } finally {
    await service.close();
  }
}

/** Resume from a warm-start checkpoint without inheriting its peak (the full-parameter warm start's). */
const fromWarm = (warm: JobCheckpoint): JobCheckpointing => ({ every: Number.MAX_SAFE_INTEGER, save: async () => {}, from: { ...warm, peakGpuBytes: 0 } });

async function warmStart(ctx: GpuContext, s: PaperSettings, seed: number, log: (line: string) => void): Promise<{ warm: JobCheckpoint; ran: Ran }> {
  let warm: JobCheckpoint | null = null;
  const save = async (c: JobCheckpoint) => void (c.phase === 'sft' && c.step === s.warmStart.steps && (warm = c));
  const ran = await job(ctx, { ...paperJob(s, seed, 'lora'), steps: 0, evalEpisodes: 0, id: `warm-${seed}` }, { every: Number.MAX_SAFE_INTEGER, save }, log);
  if (!warm) throw new Error(`seed ${seed}: the warm start saved no checkpoint at its last step`);
  return { warm, ran };
}

async function modeRun(ctx: GpuContext, s: PaperSettings, seed: number, mode: Mode, warm: JobCheckpoint, log: (line: string) => void): Promise<ModeRun> {
  const settings = paperJob(s, seed, mode);
  const { result: r, steps, seconds, peakBytes, trainPeakBytes } = await job(ctx, settings, fromWarm(warm), log);
  const run: ModeRun = {
    seed, mode, lr: settings.lr!, successBefore: r.successBefore, successAfter: r.successAfter, rewardCurve: r.rewardCurve, lossCurve: r.lossCurve,
    stepSeconds: medianTrainSeconds(steps), msPerKToken: medianSecondsPerKToken(steps), peakBytes, trainPeakBytes, seconds,
  };
  log(`seed ${seed} ${mode}: held-out success ${run.successBefore.toFixed(3)} → ${run.successAfter.toFixed(3)}; ${run.stepSeconds.toFixed(3)} s per training step; peak ${run.peakBytes} B (training steps ${run.trainPeakBytes} B); ${seconds.toFixed(0)} s`);
  return run;
}

const trace = (r: JobResult, steps: readonly StepMetrics[]): RunTrace => ({
  rewardCurve: r.rewardCurve, lossCurve: r.lossCurve, steps: steps.filter((m) => m.phase === 'rl').map(stepKey), successAfter: r.successAfter, tensors: r.trained.tensors,
});
const trained = (steps: readonly StepMetrics[]) => steps.filter((m) => m.phase === 'rl' && m.trainTokens > 0).length;

async function reproducibility(ctx: GpuContext, s: PaperSettings, warm: JobCheckpoint, log: (line: string) => void): Promise<Pick<PaperReport, 'sameSeed' | 'resume'>> {
  const settings: TrainSettings = { ...paperJob(s, s.seeds[0], 'lora'), steps: s.repro.steps, evalEpisodes: s.repro.evalEpisodes, id: 'repro' };
  const a = await job(ctx, settings, fromWarm(warm), log);
  const b = await job(ctx, settings, fromWarm(warm), log);
  const same = compareRuns(trace(a.result, a.steps), trace(b.result, b.steps));
  log(`reproducibility: the same seed twice ${same.identical ? 'gives identical curves and adapter' : `differs: ${same.differences.join(', ')}`}`);

  // Killed at step k (its checkpoint after step k − 1 is in the store), resumed by a new checkpointer on the same files.
  const dir = await mkdtemp(join(tmpdir(), 'bench-paper-resume-'));
  try {
    const open = () => new JobCheckpointer(new CheckpointStore<StoredJobState>(new FileKv(dir), { keepLast: 2 }));
    const k = s.repro.resumeAt;
    const killedSteps: StepMetrics[] = [];
    let killed = false;
    try {
      await job(ctx, settings, open().checkpointing(1, { ...warm, peakGpuBytes: 0 }), (l) => log(`${l} [to be killed at ${k}]`), { killAt: k, steps: killedSteps });
    } catch (e) {
      if (!(e instanceof Killed)) throw e;
      killed = true;
    }
    if (!killed) throw new Error(`the run to be killed at RL step ${k} was not killed`);
    const second = open();
    const at = await second.latest();
    if (!at || at.phase !== 'rl' || at.step !== k) throw new Error(`the store's latest checkpoint is ${at ? `${at.phase} step ${at.step}` : 'missing'}, not RL step ${k}`);
    const resumed = await job(ctx, settings, second.checkpointing(1, at), log);
    // The interrupted run's steps: the killed segment's before k, then the resumed segment's.
    const resume = compareRuns(trace(a.result, a.steps), trace(resumed.result, [...killedSteps.filter((m) => m.phase === 'rl' && m.step < k), ...resumed.steps]));
    log(`reproducibility: killed at RL step ${k} and resumed ${resume.identical ? 'gives the uninterrupted run\'s curves and adapter' : `differs: ${resume.differences.join(', ')}`}`);
    return { sameSeed: { ...same, trainedSteps: trained(a.steps) }, resume: { ...resume, trainedSteps: trained(a.steps), killedAt: k } };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runPaper(s: PaperSettings, log: (line: string) => void): Promise<PaperReport> {
  const t0 = performance.now();
  const ctx = await acquireGpu({ label: 'bench-paper' });
  const seeds: SeedRuns[] = [];
  const warmStarts: JobCheckpoint[] = [];
  let repro: Pick<PaperReport, 'sameSeed' | 'resume'>;
  let maxSeqLen: number;
  try {
    maxSeqLen = jobOptions(paperJob(s, s.seeds[0], 'lora')).model.maxSeqLen;
    for (const seed of s.seeds) {
      const { warm, ran } = await warmStart(ctx, s, seed, log);
      warmStarts.push(warm);
      log(`seed ${seed}: warm start ${ran.seconds.toFixed(0)} s, last loss ${ran.result.sftLossCurve.at(-1)?.toFixed(4)}`);
      const lora = await modeRun(ctx, s, seed, 'lora', warm, log);
      const full = await modeRun(ctx, s, seed, 'full', warm, log);
      seeds.push({ seed, warmStartSeconds: ran.seconds, sftLossCurve: ran.result.sftLossCurve, lora, full });
    }
    repro = await reproducibility(ctx, s, warmStarts[0], log);
  } finally {
    ctx.destroy();
  }
  const cross = await runCrossAdapter(s, seeds.map((x, i) => ({ seed: x.seed, warm: warmStarts[i], successAfter: x.lora.successAfter, rewardCurve: x.lora.rewardCurve, lossCurve: x.lora.lossCurve })), log);
  return { settings: { ...s, maxSeqLen }, seeds, ...repro, cross, seconds: (performance.now() - t0) / 1000 };
}
