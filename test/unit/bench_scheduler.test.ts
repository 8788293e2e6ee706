// The scheduler benchmark's pure part: percentiles, figures and verdicts from raw measurements, its markdown.
import { describe, expect, it } from 'vitest';
import { percentile, schedulerFigures, schedulerMarkdown } from '../../test/bench/scheduler.ts';
import type { LoadRaw } from '../../test/bench/scheduler_load.ts';
import { loadFigures, loadMarkdown } from '../../test/bench/scheduler_load_report.ts';

const raw = {
  alone: [10, 12, 11, 30, 13],
  underLoad: [20, 40, 35, 90, 25],
  windowMs: 1000,
  busyMs: 950,
  deviceMs: { a: 600, b: 320 },
  trainingQuantaMs: [100, 120, 80, 100],
  weights: { a: 2, b: 1 },
  base: 1000,
  jobStates: [100, 100, 100, 100],
  live: 1900,
  kept: { n: 500, one: 500, bound: 600 },
};

const mem = (live: number, owners: Record<string, number>) => ({
  liveBytes: live, peakLiveBytes: live, cachedBytes: 64,
  owners: Object.fromEntries(Object.entries(owners).map(([k, v]) => [k, { currentBytes: v, peakBytes: v, buffers: 1 }])),
});
const loadRaw: LoadRaw = {
  requestIds: ['c0r0', 'c0r1', 'c1r0', 'c1r1'],
  answers: { c0r0: 1, c0r1: 1, c1r0: 1, c1r1: 1 },
  mismatched: [],
  latenciesMs: [10, 40, 20, 30],
  aloneMs: [5, 6, 7, 8],
  windowMs: 2500,
  trainingSteps: { a: 6, b: 3 },
  warm: mem(1000, { 'model:m': 600, 'job:a': 200, 'job:b': 200 }),
  samples: [{ t: 0, liveBytes: 1200, cachedBytes: 0 }, { t: 10, liveBytes: 1100, cachedBytes: 100 }],
  peak: mem(1200, { 'model:m': 600, 'job:a': 200, 'job:b': 200, 'sampler:s': 200 }),
  after: mem(1000, { 'model:m': 600, 'job:a': 200, 'job:b': 200, 'sampler:s': 0 }),
  admission: [{ what: 'big job', error: 'AdmissionError', message: 'budget', ownersAfter: [] }],
  deviceLosses: 0,
};

describe('scheduler benchmark figures', () => {
  it('nearest-rank percentiles', () => {
    expect(percentile([5, 1, 3, 2, 4], 0.95)).toBe(5);
    expect(percentile(Array.from({ length: 20 }, (_, i) => i + 1), 0.95)).toBe(19);
    expect(percentile([7], 0.5)).toBe(7);
    expect(() => percentile([], 0.95)).toThrow(RangeError);
  });

  it('computes the issue fields and the verdicts', () => {
    const { figures, targets, shareA } = schedulerFigures(raw);
    expect(figures).toEqual({
      busy_fraction_two_jobs: 0.95, interactive_p95_first_token_ms_alone: 30, interactive_p95_first_token_ms_under_load: 90, quantum_ms: 100,
      share_error: Math.abs(600 / 920 - 2 / 3), n_lora_jobs: 4, base_bytes: 1000, adapter_state_bytes: 100, multi_lora_bytes: 1400,
      kept_texel_bytes: 500, kept_texel_bytes_one_job: 500, kept_texel_bytes_bound: 600, multi_lora_bytes_with_kept: 1900,
    });
    expect(shareA).toBeCloseTo(600 / 920, 12);
    expect(targets).toEqual({ busy: true, latency: true, share: true, memory: true, kept: true });
    // The kept weight texels are counted apart from the LoRA bound; growing with N, or past their bound, fails.
    const bad = schedulerFigures({ ...raw, busyMs: 500, underLoad: [500], deviceMs: { a: 1, b: 1 }, live: 2100, kept: { n: 500, one: 400, bound: 600 } }).targets;
    expect(bad).toEqual({ busy: false, latency: false, share: false, memory: false, kept: false });
    expect(schedulerFigures({ ...raw, kept: { n: 700, one: 700, bound: 600 } }).targets.kept).toBe(false);
  });

  it('writes a markdown section naming every field and target', () => {
    const { figures, targets, shareA } = schedulerFigures(raw);
    const md = schedulerMarkdown({
      scheduler: figures, targets,
      load: loadFigures(loadRaw, { model: 'gpt2-1m', callers: 2, durationMs: 2000 }),
      details: { model: 'gpt2-1m', lora: { rank: 8, alpha: 16, targets: ['q'] }, micro_batch: { rows: 8, seq_len: 64 }, interactive_requests: 5, window_s: 1, training_steps: { a: 4, b: 2 }, share_a: shareA, quantum_ms_mean: 100, quantum_ms_max: 120, latencies_ms: { alone: raw.alone, under_load: raw.underLoad } },
    }, '_Measured now._', false);
    expect(md.startsWith('## Scheduler')).toBe(true);
    for (const k of Object.keys(figures)) expect(md).toContain(k.split('_')[0]);
    expect(md).toContain('≤ alone + one quantum = 130');
    expect(md).not.toContain('**no**');
    expect(md).toContain('### Under load');
  });

  it('load figures: answers counted by id, percentiles, pool growth and admission verdicts', () => {
    const f = loadFigures(loadRaw, { model: 'gpt2-1m', callers: 2, durationMs: 2000 });
    expect(f.first_token_ms_under_load).toEqual({ p50: 20, p95: 40, p99: 40 });
    expect(f.first_token_ms_alone).toEqual({ p50: 6, p95: 8, p99: 8 });
    expect([f.answered_once, f.lost, f.answered_twice_or_more, f.mismatched]).toEqual([4, 0, 0, 0]);
    expect(f.pool).toEqual({ warm_live_bytes: 1000, peak_sampled_live_bytes: 1200, after_live_bytes: 1000, after_cached_bytes: 64, grown_owners: [] });
    expect(f.targets).toEqual({ exactly_once: true, pool_bounded: true, admission: true });
    const md = loadMarkdown(f);
    expect(md).toContain('20.0 / 40.0 / 40.0');
    expect(md).not.toContain('**no**');

    const bad = loadFigures({
      ...loadRaw,
      answers: { c0r0: 0, c0r1: 2, c1r0: 1, c1r1: 1 },
      after: mem(1100, { 'model:m': 600, 'job:a': 300, 'job:b': 200 }),
      admission: [{ what: 'big job', error: 'none', message: '', ownersAfter: [] }],
    }, { model: 'gpt2-1m', callers: 2, durationMs: 2000 });
    expect([bad.answered_once, bad.lost, bad.answered_twice_or_more]).toEqual([2, 1, 1]);
    expect(bad.pool.grown_owners).toEqual(['job:a']);
    expect(bad.targets).toEqual({ exactly_once: false, pool_bounded: false, admission: false });
    expect(loadFigures({ ...loadRaw, mismatched: ['c1r0'] }, { model: 'm', callers: 2, durationMs: 1 }).targets.exactly_once).toBe(false);
    expect(loadMarkdown(bad)).toContain('**no** (job:a)');
  });
});
