/**
 * The `algorithms` part (issue 5's target): on `guess-number`, with a small from-scratch model and
 * seed 7, 60 RL steps of each of grpo, ppo, rloo and dpo must raise the mean reward of the last 10
 * steps at least 0.1 above that of the first 10.
 *
 * Every algorithm starts from the same warm start: the job runner trains it once (a job with no RL
 * steps, checkpointing the warm start's last step), and each algorithm's job resumes from that
 * checkpoint — exactly what a run of `npm run train -- --env guess-number --algo A --seed 7` with
 * the same settings does after its warm start, without training the warm start four times.
 */
import { Agent } from '../../src/env/agent.ts';
import { groupEpisodes } from '../../src/env/batch.ts';
import { rolloutMultiTurn } from '../../src/env/rollout.ts';
import type { Trajectory } from '../../src/env/types.ts';
import { acquireGpu } from '../../src/gpu/device.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import type { JobEnv } from '../../src/runtime/job_envs.ts';
import type { JobCheckpoint } from '../../src/runtime/job_checkpoint.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import { type Algo, runTraining, type StepMetrics } from '../../src/runtime/rl_job.ts';
import { jobOptions, type TrainSettings } from '../../src/runtime/train.ts';
import { fmtNum } from './harness.ts';
import { markdownTable } from './markdown.ts';

export interface AlgorithmsSettings {
  readonly env: TrainSettings['env'];
  readonly model: string;
  readonly seed: number;
  readonly steps: number;
  readonly groups: number;
  readonly groupSize: number;
  readonly warmStart: { readonly steps: number; readonly demos: number; readonly batchSize: number; readonly lr: number };
  /** RL learning rate per algorithm. */
  readonly lr: Readonly<Partial<Record<Algo, number>>> & { readonly default: number };
  readonly evalEpisodes: number;
  readonly algos: readonly Algo[];
  /** The window of steps whose mean rewards are compared (first and last). */
  readonly window: number;
  /** Episodes of the warm-started policy to print (0: none). */
  readonly transcripts?: number;
}

/** Issue 5's run. */
export const ALGORITHMS_RUN: AlgorithmsSettings = Object.freeze({
  env: 'guess-number',
  model: 'gpt2-100k',
  seed: 7,
  steps: 60,
  groups: 8,
  groupSize: 4,
  warmStart: { steps: 200, demos: 4096, batchSize: 32, lr: 1e-2 },
  lr: { default: 7e-4 },
  evalEpisodes: 64,
  algos: ['grpo', 'ppo', 'rloo', 'dpo'] as Algo[],
  window: 10,
});

/** A smoke run (`--quick`): the same code on a tiny model, a few steps. */
export const ALGORITHMS_QUICK: AlgorithmsSettings = Object.freeze({
  ...ALGORITHMS_RUN,
  model: 'tiny-gpt2',
  steps: 4,
  groups: 2,
  warmStart: { steps: 4, demos: 64, batchSize: 8, lr: 1e-2 },
  evalEpisodes: 4,
  window: 2,
});

export interface AlgorithmResult {
  readonly algo: Algo;
  readonly lr: number;
  readonly rewardCurve: readonly number[];
  readonly first: number;
  readonly last: number;
  readonly gain: number;
  readonly met: boolean;
  readonly successBefore: number;
  readonly successAfter: number;
  readonly rewardBefore: number;
  readonly rewardAfter: number;
  /** Wall seconds of the algorithm's job after the shared warm start. */
  readonly seconds: number;
}

export interface AlgorithmsReport {
  readonly settings: AlgorithmsSettings & { readonly maxSeqLen: number };
  readonly warmStartSeconds: number;
  readonly sftLossCurve: readonly number[];
  readonly results: readonly AlgorithmResult[];
  /** Issue 5's target: every algorithm's gain ≥ 0.1. */
  readonly met: boolean;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** First/last window means and the verdict (pure: unit-tested). */
export function rewardGain(curve: readonly number[], window: number, target = 0.1): { first: number; last: number; gain: number; met: boolean } {
  if (!Number.isInteger(window) || window < 1 || curve.length < 2 * window) throw new RangeError(`rewardGain: ${curve.length} steps cannot give two windows of ${window}`);
  const first = mean(curve.slice(0, window));
  const last = mean(curve.slice(curve.length - window));
  return { first, last, gain: last - first, met: last - first >= target };
}

function transcript(t: Trajectory, tok: ByteTokenizer): string {
  return `${tok.decode([...t.tokensT].filter((id) => id !== tok.bosId && id !== tok.eosId))}  → reward ${t.reward.toFixed(2)} (${t.endReason})`;
}

export async function runAlgorithms(s: AlgorithmsSettings, log: (line: string) => void): Promise<AlgorithmsReport> {
  const ctx = await acquireGpu({ label: 'bench-algorithms' });
  const tok = new ByteTokenizer();
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
  try {
    const base: TrainSettings = {
      env: s.env, model: s.model, seed: s.seed, groups: s.groups, groupSize: s.groupSize, warmStart: s.warmStart, evalEpisodes: s.evalEpisodes,
    };
    // 1. The shared warm start: a job with no RL steps whose warm start's last checkpoint is kept.
    let warm: JobCheckpoint | null = null;
    const t0 = performance.now();
    const first = await runTraining(service, jobOptions({
      ...base, steps: 0, evalEpisodes: 0,
      onStep: (m) => (m.step + 1) % 10 === 0 && log(`warm start ${m.step + 1}/${s.warmStart.steps}: loss ${m.loss.toFixed(4)}`),
      checkpoint: { every: Number.MAX_SAFE_INTEGER, save: async (c) => void (c.phase === 'sft' && c.step === s.warmStart.steps && (warm = c)) },
    }));
    const warmStartSeconds = (performance.now() - t0) / 1000;
    if (!warm) throw new Error('the warm start saved no checkpoint at its last step');
    const job = jobOptions({ ...base, steps: s.steps });
    if (s.transcripts && first.trained.base) {
      const modelId = await service.createModel(job.model, { params: first.trained.base, id: 'bench-warm' });
      const sampler = await service.createSamplingClient(modelId);
      const env = job.env as Extract<JobEnv, { kind: 'single' }>;
      const agent = new Agent({ sample: sampler.sample, tokenizer: tok, maxTurns: env.maxTurns, maxNewTokens: env.maxNewTokens, maxSequenceTokens: job.model.maxSeqLen, temperature: 1, ...(env.format ? { format: env.format } : {}) });
      const batch = await rolloutMultiTurn(env.spec, agent, groupEpisodes(s.transcripts, 1, 12345), { seed: 12345 });
      for (const g of batch.groups) for (const t of g.trajectories) log(`  ${transcript(t, tok).replaceAll('\n', ' ⏎ ')}`);
      await sampler.close();
      await service.releaseModel(modelId);
    }

    // 2. Each algorithm from that checkpoint.
    const results: AlgorithmResult[] = [];
    for (const algo of s.algos) {
      const lr = s.lr[algo] ?? s.lr.default;
      const t1 = performance.now();
      const r = await runTraining(service, jobOptions({
        ...base, algo, lr, steps: s.steps, id: algo,
        onStep: (m: StepMetrics) => m.phase === 'rl' && log(`${algo} ${m.step + 1}/${s.steps}: reward ${m.reward?.toFixed(3)} loss ${m.loss.toFixed(4)} |g| ${m.gradNorm.toPrecision(3)} entropy ${m.entropy?.toFixed(3) ?? '-'} kl ${m.approxKl?.toPrecision(2) ?? '-'} clip ${m.clipFraction?.toFixed(3) ?? '-'} (${(m.trainSeconds + m.sampleSeconds).toFixed(1)} s)`),
        checkpoint: { every: Number.MAX_SAFE_INTEGER, save: async () => {}, from: warm },
      }));
      const g = rewardGain(r.rewardCurve, s.window);
      results.push({
        algo, lr, rewardCurve: r.rewardCurve, ...g, successBefore: r.successBefore, successAfter: r.successAfter,
        rewardBefore: r.rewardBefore, rewardAfter: r.rewardAfter, seconds: (performance.now() - t1) / 1000,
      });
      log(`${algo}: first ${s.window} steps ${g.first.toFixed(3)}, last ${s.window} ${g.last.toFixed(3)}, gain ${g.gain.toFixed(3)} ${g.met ? '(met)' : '(not met)'}; held-out success ${r.successBefore.toFixed(3)} → ${r.successAfter.toFixed(3)}`);
    }
    return { settings: { ...s, maxSeqLen: job.model.maxSeqLen }, warmStartSeconds, sftLossCurve: first.sftLossCurve, results, met: results.every((r) => r.met) };
  } finally {
    await service.close();
    ctx.destroy();
  }
}

/** Mean reward per block of `window` steps, for the table. */
function blocks(curve: readonly number[], window: number): string {
  const out: string[] = [];
  for (let i = 0; i < curve.length; i += window) out.push(mean(curve.slice(i, i + window)).toFixed(2));
  return out.join(' ');
}

export function algorithmsMarkdown(rep: AlgorithmsReport, measured: string, quick: boolean): string {
  const s = rep.settings;
  const w = s.warmStart;
  return [
    '## Algorithms',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): tiny-gpt2, a few steps — a smoke test, not a measurement.' : '',
    '',
    `\`${typeof s.env === 'string' ? s.env : s.env.name}\`, ${s.model} from scratch (context ${s.maxSeqLen}), seed ${s.seed}: one full-parameter SFT warm start (${w.steps} steps of ${w.batchSize} of ${w.demos} demonstrations, cosine lr peaking at ${w.lr}; ${rep.warmStartSeconds.toFixed(0)} s) shared by every algorithm, then ${s.steps} LoRA RL steps of ${s.groups} tasks × ${s.groupSize} attempts each. Issue 5's target: the mean reward of the last ${s.window} steps at least 0.1 above that of the first ${s.window}.`,
    '',
    markdownTable(['algorithm', 'lr', `first ${s.window}`, `last ${s.window}`, 'gain', 'met', 'held-out success before → after', 'mean reward per block of ' + s.window, 'seconds'], rep.results.map((r) => [
      r.algo, String(r.lr), r.first.toFixed(3), r.last.toFixed(3), (r.gain >= 0 ? '+' : '') + r.gain.toFixed(3), r.met ? 'yes' : '**no**',
      `${r.successBefore.toFixed(3)} → ${r.successAfter.toFixed(3)}`, blocks(r.rewardCurve, s.window), fmtNum(r.seconds),
    ])),
    '',
  ].join('\n');
}
