// The pure parts of the bench's paper part (test/bench/paper_*.ts): statistics, verdicts, run
// comparison, the settling test, the peak tracker, the checkpoint transfer and the report — all
// against hand-computed values, no GPU.
import { describe, expect, it } from 'vitest';
import type { StepMetrics } from '../../src/runtime/rl_job.ts';
import { crossCompare } from '../../test/bench/paper_chromium.ts';
import type { ModeRun, PaperReport } from '../../test/bench/paper.ts';
import { meanCurve, modeSummary, paperFigures, paperJson, paperMarkdown } from '../../test/bench/paper_report.ts';
import { fromTransferJson, PAPER_QUICK, PAPER_RUN, paperJob, transferJson } from '../../test/bench/paper_settings.ts';
import {
  compareRuns, firstDifference, meanSd, medianSecondsPerKToken, medianTrainSeconds, paperVerdicts, PeakTracker, type RunTrace, stepKey, tensorsIdentical,
} from '../../test/bench/paper_stats.ts';

const step = (o: Partial<StepMetrics>): StepMetrics => ({
  phase: 'rl', step: 0, loss: 0, gradNorm: 0, skipped: false, trainTokens: 100, sampledTokens: 10, trainSeconds: 1, sampleSeconds: 2, datums: 4, dropped: 0, ...o,
});

describe('paper part: statistics', () => {
  it('gives the mean and the sample sd over seeds', () => {
    // mean 0.6; squared deviations 0.01 + 0 + 0.01 = 0.02; / (3 − 1) = 0.01; sd 0.1
    const r = meanSd([0.5, 0.6, 0.7]);
    expect(r.mean).toBeCloseTo(0.6, 12);
    expect(r.sd).toBeCloseTo(0.1, 12);
    expect(meanSd([0.25])).toEqual({ mean: 0.25, sd: NaN });
    expect(() => meanSd([])).toThrow(RangeError);
  });

  it('takes the median train seconds of the RL steps that trained', () => {
    const steps = [
      step({ phase: 'sft', trainSeconds: 100 }),
      step({ step: 0, trainSeconds: 3 }),
      step({ step: 1, trainSeconds: 0, trainTokens: 0 }), // every group uniform: nothing trained
      step({ step: 2, trainSeconds: 1 }),
      step({ step: 3, trainSeconds: 2, trainTokens: 400 }),
    ];
    expect(medianTrainSeconds(steps)).toBe(2);
    // ms per 1k tokens: 30, 10, 5 → median 10
    expect(medianSecondsPerKToken(steps)).toBeCloseTo(10, 12);
    expect(medianTrainSeconds([step({ trainTokens: 0 })])).toBeNaN();
  });

  it('judges issue 8’s three targets', () => {
    const v = paperVerdicts({ loraSuccess: 0.85, fullSuccess: 0.86, loraStepSeconds: 1, fullStepSeconds: 1.5, loraPeakBytes: 40, fullPeakBytes: 100 });
    expect(v.successGap).toBeCloseTo(-0.01, 12);
    expect(v).toMatchObject({ successMet: true, speedup: 1.5, speedupMet: true, memoryRatio: 0.4, memoryMet: true });
    // exactly 2 points behind is within; 3 is not; 1.3× and 41% miss
    expect(paperVerdicts({ loraSuccess: 0.5, fullSuccess: 0.52, loraStepSeconds: 1, fullStepSeconds: 1.4, loraPeakBytes: 1, fullPeakBytes: 1 })).toMatchObject({ successMet: true, speedupMet: true, memoryMet: false });
    expect(paperVerdicts({ loraSuccess: 0.5, fullSuccess: 0.53, loraStepSeconds: 1, fullStepSeconds: 1.3, loraPeakBytes: 41, fullPeakBytes: 100 })).toMatchObject({ successMet: false, speedupMet: false, memoryMet: false });
    expect(paperVerdicts({ loraSuccess: 0.9, fullSuccess: 0.5, loraStepSeconds: NaN, fullStepSeconds: 1, loraPeakBytes: 1, fullPeakBytes: 10 })).toMatchObject({ successMet: true, speedupMet: false, memoryMet: true });
  });
});

describe('paper part: comparing runs bitwise', () => {
  const trace = (o: Partial<RunTrace> = {}): RunTrace => ({
    rewardCurve: [0.1, 0.2], lossCurve: [1, NaN], steps: ['a', 'b'], successAfter: 0.5, tensors: { w: new Float32Array([1, 2]) }, ...o,
  });

  it('finds the first differing entry (NaN equals NaN, 0 is not −0, lengths count)', () => {
    expect(firstDifference([1, NaN, 3], [1, NaN, 3])).toBe(-1);
    expect(firstDifference([1, 2, 3], [1, 2.0000001, 3])).toBe(1);
    expect(firstDifference([0], [-0])).toBe(0);
    expect(firstDifference([1, 2], [1, 2, 3])).toBe(2);
  });

  it('compares tensors by their bits', () => {
    expect(tensorsIdentical({ a: new Float32Array([1, NaN]) }, { a: new Float32Array([1, NaN]) })).toBe(true);
    expect(tensorsIdentical({ a: new Float32Array([0]) }, { a: new Float32Array([-0]) })).toBe(false);
    expect(tensorsIdentical({ a: new Float32Array([1]) }, { b: new Float32Array([1]) })).toBe(false);
    expect(tensorsIdentical({ a: new Float32Array([1]) }, { a: new Float32Array([1, 1]) })).toBe(false);
  });

  it('names what differs between two runs', () => {
    expect(compareRuns(trace(), trace())).toEqual({ identical: true, differences: [] });
    const d = compareRuns(trace(), trace({ lossCurve: [1, 0], successAfter: 0.75, tensors: { w: new Float32Array([1, 3]) } }));
    expect(d).toEqual({ identical: false, differences: ['loss curve from step 1', 'held-out success', 'trained tensors'] });
  });

  it('keys a step by everything but its timings', () => {
    expect(stepKey(step({ trainSeconds: 1, sampleSeconds: 2, tokensPerSecond: 5, deviceShare: 0.5 }))).toBe(stepKey(step({ trainSeconds: 9, sampleSeconds: 8 })));
    expect(stepKey(step({ loss: NaN }))).toContain('"loss":"NaN"');
    expect(stepKey(step({ datums: 3 }))).not.toBe(stepKey(step({ datums: 4 })));
  });
});

describe('paper part: the peak tracker', () => {
  /** A pool whose live bytes the test sets; the peak follows them as the real pool's does. */
  class FakePool {
    live = 0;
    peak = 0;
    set(b: number) {
      this.live = b;
      this.peak = Math.max(this.peak, b);
    }
    stats() {
      return { peakLiveBytes: this.peak };
    }
    resetPeaks() {
      this.peak = this.live;
    }
  }

  it('counts from the RL phase on, and cuts out the training steps’ own peak', () => {
    const pool = new FakePool();
    const t = new PeakTracker(pool);
    pool.set(500); // the warm start: not counted
    pool.set(10);
    t.beginTrain(); // before the phase: ignored
    t.endTrain();
    t.startPhase();
    pool.set(80); // a rollout
    pool.set(20);
    t.beginTrain();
    t.beginTrain(); // a second micro-batch of the same step
    pool.set(50);
    pool.set(20);
    t.endTrain();
    pool.set(90); // the next rollout
    pool.set(20);
    t.beginTrain();
    pool.set(60);
    t.endTrain();
    pool.set(30);
    t.finish();
    expect(t.train).toBe(60);
    expect(t.phase).toBe(90);
  });

  it('reports nothing for a job that never reached RL', () => {
    const pool = new FakePool();
    const t = new PeakTracker(pool);
    pool.set(100);
    t.finish();
    expect([t.phase, t.train]).toEqual([0, 0]);
  });
});

describe('paper part: settings, transfer and report', () => {
  it('builds the table’s jobs from npm run train’s defaults, full-parameter at a tenth of LoRA’s rate', () => {
    expect(paperJob(PAPER_RUN, 1, 'lora')).toMatchObject({ env: 'calculator', model: 'gpt2-100k', seed: 1, steps: 20, groups: 16, groupSize: 4, lr: 5e-3, lora: { rank: 8 } });
    expect(paperJob(PAPER_RUN, 1, 'full')).toMatchObject({ lr: 5e-4, lora: null });
    expect(PAPER_RUN.seeds).toEqual([0, 1, 2]);
    expect(PAPER_RUN.warmStart.steps).toBe(300);
    expect((paperJob(PAPER_QUICK, 0, 'lora').env as { name: string }).name).toBe('vowels');
  });

  it('carries checkpoints through JSON bitwise', () => {
    const v = { step: 3, loss: NaN, inf: -Infinity, curve: [1, NaN], t: { w: new Float32Array([1.5, -0, NaN, 3e-39]) } };
    const back = fromTransferJson(transferJson(v)) as typeof v;
    expect(back.step).toBe(3);
    expect(back.loss).toBeNaN();
    expect(back.inf).toBe(-Infinity);
    expect(back.curve[1]).toBeNaN();
    expect(back.t.w).toBeInstanceOf(Float32Array);
    expect(tensorsIdentical(back.t, v.t)).toBe(true);
  });

  it('compares the adapters’ final success over the seeds', () => {
    const chromium = { adapter: { vendor: 'google', architecture: 'swiftshader', device: '', description: '', isFallbackAdapter: true }, userAgent: 'x', seeds: [
      { seed: 0, successBefore: 0.5, successAfter: 0.8, rewardCurve: [0.1, 0.2], lossCurve: [1, 2], seconds: 1 },
      { seed: 1, successBefore: 0.5, successAfter: 0.6, rewardCurve: [0.1, 0.3], lossCurve: [1, 2], seconds: 1 },
    ] };
    const c = crossCompare([
      { seed: 0, successAfter: 0.75, rewardCurve: [0.1, 0.2], lossCurve: [1, 2] },
      { seed: 1, successAfter: 0.6, rewardCurve: [0.1, 0.2], lossCurve: [1, 3] },
    ], chromium);
    // Deno mean 0.675, Chromium 0.7
    expect(c.gap).toBeCloseTo(0.025, 12);
    expect(c.seeds.map((x) => [x.firstRewardDifference, x.firstLossDifference])).toEqual([[-1, -1], [1, 1]]);
    expect(() => crossCompare([{ seed: 5, successAfter: 0, rewardCurve: [], lossCurve: [] }], chromium)).toThrow(/seed 5/);
  });

  const run = (mode: 'lora' | 'full', seed: number, successAfter: number, stepSeconds: number, peakBytes: number): ModeRun => ({
    seed, mode, lr: mode === 'lora' ? 5e-3 : 5e-4, successBefore: 0.5, successAfter, rewardCurve: [0.2, 0.4 + seed / 10], lossCurve: [1, 1],
    stepSeconds, msPerKToken: 2 * stepSeconds, peakBytes, trainPeakBytes: peakBytes / 2, seconds: 10,
  });
  const report: PaperReport = {
    settings: { ...PAPER_RUN, maxSeqLen: 128 },
    seeds: [0, 1].map((seed) => ({ seed, warmStartSeconds: 100, sftLossCurve: [2, 1], lora: run('lora', seed, 0.8 + seed / 10, 1 + seed, 300), full: run('full', seed, 0.85, 2 + seed, 1000) })),
    sameSeed: { identical: true, differences: [], trainedSteps: 6 },
    resume: { identical: false, differences: ['loss curve from step 4'], trainedSteps: 6, killedAt: 3 },
    cross: { gap: null, reason: 'no Chromium here' },
    seconds: 1234,
  };

  it('summarises each mode over the seeds', () => {
    // successes 0.8, 0.9 → mean 0.85, sd √(0.005) ; step seconds 1, 2 → median 1.5
    const s = modeSummary(report.seeds.map((x) => x.lora));
    expect(s.successMean).toBeCloseTo(0.85, 12);
    expect(s.successSd).toBeCloseTo(Math.sqrt(0.005), 12);
    expect(s.stepSeconds).toBe(1.5);
    expect(s.peakBytes).toBe(300);
    expect(s.trainPeakBytes).toBe(150);
    expect(meanCurve([[1, 2, 3], [3, 4]])).toEqual([2, 3]);
  });

  it('writes issue 8’s JSON shape', () => {
    const j = paperJson(report) as Record<string, Record<string, unknown>>;
    expect(j.paper.lora_success_mean).toBeCloseTo(0.85, 12);
    expect(j.paper).toMatchObject({ full_success_mean: 0.85, lora_step_seconds: 1.5, full_step_seconds: 2.5, lora_peak_bytes: 300, full_peak_bytes: 1000 });
    expect(j.paper.lora_success_sd).toBeCloseTo(Math.sqrt(0.005), 12);
    expect(j.paper.full_success_sd).toBe(0);
    expect(j.reproducibility).toMatchObject({ same_seed_identical: true, resume_identical: false, cross_adapter_success_gap: null, reason: 'no Chromium here' });
    expect(j.multi_agent).toBeUndefined(); // the agents part's now
    expect(JSON.parse(JSON.stringify(j)).paper.verdicts).toEqual({ success: true, speedup: true, memory: true });
  });

  it('renders the section with the verdicts, the null cross-adapter reason, a pointer to the agents part and the figure', () => {
    const md = paperMarkdown(report, '_measured_', false, (f) => `BENCHMARKS.${f}`);
    expect(md).toContain('## Paper');
    expect(md).toMatch(/\| LoRA \| 0\.850 ± 0\.071 \| 1\.500 \|/);
    expect(md).toMatch(/LoRA ≥ 1\.4× faster per training step \| 1\.667× /);
    expect(md).toMatch(/LoRA peak ≤ 40% of full \| 30\.0% .* \| yes \|/);
    expect(md).toMatch(/killed at step 3 and resumed \| \*\*no\*\* \| loss curve from step 4 \|/);
    expect(md).toContain('not measured: no Chromium here');
    expect(md).toContain('**Several agents** section below');
    expect(md).not.toContain('nim');
    expect(md).toContain('](BENCHMARKS.paper-rewards.svg)');
    const figs = paperFigures(report);
    expect([...figs.keys()]).toEqual(['paper-rewards.svg']);
    // Two lines of two points each.
    expect([...figs.get('paper-rewards.svg')!.matchAll(/<polyline/g)]).toHaveLength(2);
  });
});
