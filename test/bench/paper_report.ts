/**
 * The paper part's JSON (issue 8's shape, details beside it) and its BENCHMARKS.md section: the
 * table with its verdicts, the reproducibility checks, and the figure drawn with the train CLI's
 * curvesSvg (LoRA vs full mean reward per RL step). Several agents are the `agents` part's.
 * Pure functions of a PaperReport, so the Node unit tests render them.
 */
import { curvesSvg } from '../../src/cli/report.ts';
import { fmtNum, median } from './harness.ts';
import { f3, markdownTable, yes } from './markdown.ts';
import type { ModeRun, PaperReport } from './paper.ts';
import { meanSd, PAPER_TARGETS, paperVerdicts, type PaperVerdicts } from './paper_stats.ts';

/** The mean reward of each RL step over the seeds. */
export function meanCurve(curves: readonly (readonly number[])[]): number[] {
  const n = Math.min(...curves.map((c) => c.length));
  return curves.length === 0 ? [] : Array.from({ length: n }, (_, i) => meanSd(curves.map((c) => c[i])).mean);
}

/** Per mode over the seeds: success mean ± sd, the median of the seeds' step seconds, the largest peak. */
export function modeSummary(runs: readonly ModeRun[]): { successMean: number; successSd: number; stepSeconds: number; msPerKToken: number; peakBytes: number; trainPeakBytes: number } {
  const s = meanSd(runs.map((r) => r.successAfter));
  const finite = (xs: number[]) => xs.filter(Number.isFinite);
  const med = (xs: number[]) => (finite(xs).length === 0 ? NaN : median(finite(xs)));
  return { successMean: s.mean, successSd: s.sd, stepSeconds: med(runs.map((r) => r.stepSeconds)), msPerKToken: med(runs.map((r) => r.msPerKToken)), peakBytes: Math.max(...runs.map((r) => r.peakBytes)), trainPeakBytes: Math.max(...runs.map((r) => r.trainPeakBytes)) };
}

export function verdictsOf(rep: PaperReport): PaperVerdicts {
  const lora = modeSummary(rep.seeds.map((x) => x.lora));
  const full = modeSummary(rep.seeds.map((x) => x.full));
  return paperVerdicts({ loraSuccess: lora.successMean, fullSuccess: full.successMean, loraStepSeconds: lora.stepSeconds, fullStepSeconds: full.stepSeconds, loraPeakBytes: lora.peakBytes, fullPeakBytes: full.peakBytes });
}

/** `--json` for the paper part: issue 8's three objects, with details beside them (NaN becomes null). */
export function paperJson(rep: PaperReport): Record<string, unknown> {
  const lora = modeSummary(rep.seeds.map((x) => x.lora));
  const full = modeSummary(rep.seeds.map((x) => x.full));
  const v = verdictsOf(rep);
  return {
    paper: {
      lora_success_mean: lora.successMean, lora_success_sd: lora.successSd, full_success_mean: full.successMean, full_success_sd: full.successSd,
      lora_step_seconds: lora.stepSeconds, full_step_seconds: full.stepSeconds, lora_peak_bytes: lora.peakBytes, full_peak_bytes: full.peakBytes,
      lora_ms_per_ktoken: lora.msPerKToken, full_ms_per_ktoken: full.msPerKToken,
      lora_train_peak_bytes: lora.trainPeakBytes, full_train_peak_bytes: full.trainPeakBytes,
      success_gap: v.successGap, speedup: v.speedup, memory_ratio: v.memoryRatio,
      verdicts: { success: v.successMet, speedup: v.speedupMet, memory: v.memoryMet }, targets: PAPER_TARGETS,
      settings: rep.settings, seeds: rep.seeds,
    },
    reproducibility: {
      same_seed_identical: rep.sameSeed.identical,
      resume_identical: rep.resume.identical,
      cross_adapter_success_gap: rep.cross.gap,
      ...(rep.cross.gap === null ? { reason: rep.cross.reason } : { cross_adapter: { deno_mean: rep.cross.denoMean, chromium_mean: rep.cross.chromiumMean, seeds: rep.cross.seeds, adapter: rep.cross.chromium.adapter, seconds: rep.cross.seconds } }),
      same_seed: rep.sameSeed,
      resume: rep.resume,
    },
  };
}

/** The figure (an SVG document), by file suffix. */
export function paperFigures(rep: PaperReport): Map<string, string> {
  const s = rep.settings;
  const seeds = rep.seeds.map((x) => x.seed).join(', ');
  return new Map([
    ['paper-rewards.svg', curvesSvg({
      title: `${s.env}, ${s.model}: mean training reward per RL step`,
      subtitle: `mean over seeds ${seeds}; LoRA r=${s.loraRank} at lr ${s.loraLr}, full-parameter at ${s.fullLr}`,
      series: [
        { label: 'LoRA', ys: meanCurve(rep.seeds.map((x) => x.lora.rewardCurve)), color: '#1f77b4', axis: 'left' },
        { label: 'full-parameter', ys: meanCurve(rep.seeds.map((x) => x.full.rewardCurve)), color: '#d62728', axis: 'left', dashed: true },
      ],
    })],

  ]);
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(2)} MiB`;

/** The section; `figure(suffix)` is the link to a figure file written beside the markdown. */
export function paperMarkdown(rep: PaperReport, measured: string, quick: boolean, figure: (suffix: string) => string): string {
  const s = rep.settings;
  const lora = modeSummary(rep.seeds.map((x) => x.lora));
  const full = modeSummary(rep.seeds.map((x) => x.full));
  const v = verdictsOf(rep);
  const w = s.warmStart;
  const cross = rep.cross;
  const pm = (m: number, sd: number) => `${f3(m)} ± ${f3(sd)}`;
  return [
    '## Paper',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): tiny-gpt2, a few steps, one seed, the table on the test suites\' graded-reward `vowels` env — a smoke test, not a measurement.' : '',
    '',
    `### LoRA against full-parameter RL`,
    '',
    `\`${s.env}\`, ${s.model} from scratch (context ${s.maxSeqLen}), seeds ${s.seeds.join(', ')}: per seed one full-parameter SFT warm start (${w.steps} steps of ${w.batchSize} of ${w.demos} demonstrations, cosine lr peaking at ${w.lr}), then from that same checkpoint ${s.steps} GRPO steps of ${s.groups} tasks × ${s.groupSize} attempts — LoRA (r=${s.loraRank}, lr ${s.loraLr}) and full-parameter (lr ${s.fullLr}: a tenth of LoRA's, LoRA's best rate being about ten times full fine-tuning's). Held-out success over ${s.evalEpisodes} episodes after RL. Seconds per training step: median over the seeds of each job's median train-only step (forward/backward of every micro-batch + AdamW; sampling excluded; steps that trained nothing left out). Peak bytes: the largest over the seeds of the pool's peak live bytes during the job's RL phase — rollouts, evaluations and training steps; each job on a service of its own, counted from when RL begins, so the warm start's full-parameter trainer is not in it — and, beside it, the peak during the training steps alone (first forward/backward to the end of the optimizer step).`,
    '',
    markdownTable(['mode', 'held-out success (mean ± sd)', 's per training step', 'ms per 1k trained tokens', 'peak GPU bytes (RL phase)', 'peak during training steps'], [
      ['LoRA', pm(lora.successMean, lora.successSd), f3(lora.stepSeconds), fmtNum(lora.msPerKToken), `${lora.peakBytes} (${mib(lora.peakBytes)})`, `${lora.trainPeakBytes} (${mib(lora.trainPeakBytes)})`],
      ['full-parameter', pm(full.successMean, full.successSd), f3(full.stepSeconds), fmtNum(full.msPerKToken), `${full.peakBytes} (${mib(full.peakBytes)})`, `${full.trainPeakBytes} (${mib(full.trainPeakBytes)})`],
    ]),
    '',
    markdownTable(['target (issue 8)', 'measured', 'met'], [
      [`LoRA success within ${100 * PAPER_TARGETS.successPoints} points of full`, `${(100 * v.successGap).toFixed(1)} points`, yes(v.successMet)],
      [`LoRA ≥ ${PAPER_TARGETS.speedup}× faster per training step`, `${f3(v.speedup)}× (per trained token ${f3(full.msPerKToken / lora.msPerKToken)}×)`, yes(v.speedupMet)],
      [`LoRA peak ≤ ${100 * PAPER_TARGETS.memoryRatio}% of full`, `${(100 * v.memoryRatio).toFixed(1)}% (training steps alone ${(100 * lora.trainPeakBytes / full.trainPeakBytes).toFixed(1)}%)`, yes(v.memoryMet)],
    ]),
    '',
    markdownTable(['seed', 'warm start s', 'success after warm start', 'LoRA success', 'full success', 'LoRA s/step', 'full s/step', 'LoRA s', 'full s'], rep.seeds.map((x) => [
      String(x.seed), fmtNum(x.warmStartSeconds), f3(x.lora.successBefore), f3(x.lora.successAfter), f3(x.full.successAfter),
      f3(x.lora.stepSeconds), f3(x.full.stepSeconds), fmtNum(x.lora.seconds), fmtNum(x.full.seconds),
    ])),
    '',
    `![LoRA and full-parameter mean reward per RL step](${figure('paper-rewards.svg')})`,
    '',
    '### Reproducibility',
    '',
    `The first seed's LoRA job shortened to ${s.repro.steps} RL steps (${s.repro.evalEpisodes} held-out episodes) from its warm start: run twice; and killed at RL step ${rep.resume.killedAt} (after its checkpoint of step ${rep.resume.killedAt - 1} reached a file store), then resumed by a new checkpointer on those files. Compared bitwise: reward and loss curves, every step's metrics but the timings, held-out success, the adapter's bytes. ${rep.sameSeed.trainedSteps} of the ${s.repro.steps} steps trained.`,
    '',
    markdownTable(['check', 'result', 'detail'], [
      ['same seed twice', yes(rep.sameSeed.identical), rep.sameSeed.differences.join('; ') || 'identical'],
      [`killed at step ${rep.resume.killedAt} and resumed`, yes(rep.resume.identical), rep.resume.differences.join('; ') || 'identical'],
      ['Deno on llvmpipe vs Chromium on SwiftShader: final success gap (target ≤ 3 points)',
        cross.gap === null ? '—' : `${(100 * cross.gap).toFixed(1)} points ${cross.gap <= 0.03 + 1e-12 ? '(met)' : '(**not met**)'}`,
        cross.gap === null ? `not measured: ${cross.reason}` : `mean ${f3(cross.denoMean)} (Deno) vs ${f3(cross.chromiumMean)} (Chromium, ${cross.chromium.adapter.vendor} ${cross.chromium.adapter.architecture}); the table's LoRA jobs from the same warm-start checkpoints (the warm starts are not retrained on SwiftShader, about 4× slower here); per seed (Deno/Chromium) ${cross.seeds.map((x) => `${x.seed}: ${f3(x.deno)}/${f3(x.chromium)}, reward curves ${x.firstRewardDifference < 0 ? 'bitwise equal' : `part at RL step ${x.firstRewardDifference}`}, loss curves ${x.firstLossDifference < 0 ? 'bitwise equal' : `at step ${x.firstLossDifference}`}`).join('; ')}; ${fmtNum(cross.seconds)} s in Chromium`],
    ]),
    '',
    'Several agents learning at once (the paper\'s third result) are measured in the **Several agents** section below (`npm run bench -- --only agents`).',
    '',
    `Whole part: ${fmtNum(rep.seconds)} s.`,
    '',
  ].join('\n');
}
