// The scheduler benchmark's pure part: percentiles, figures and verdicts from raw measurements, its markdown.
import { describe, expect, it } from 'vitest';
import { percentile, schedulerFigures, schedulerMarkdown } from '../../test/bench/scheduler.ts';

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
  live: 1400,
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
    });
    expect(shareA).toBeCloseTo(600 / 920, 12);
    expect(targets).toEqual({ busy: true, latency: true, share: true, memory: true });
    const bad = schedulerFigures({ ...raw, busyMs: 500, underLoad: [500], deviceMs: { a: 1, b: 1 }, live: 1600 }).targets;
    expect(bad).toEqual({ busy: false, latency: false, share: false, memory: false });
  });

  it('writes a markdown section naming every field and target', () => {
    const { figures, targets, shareA } = schedulerFigures(raw);
    const md = schedulerMarkdown({
      scheduler: figures, targets,
      details: { model: 'gpt2-1m', lora: { rank: 8, alpha: 16, targets: ['q'] }, micro_batch: { rows: 8, seq_len: 64 }, interactive_requests: 5, window_s: 1, training_steps: { a: 4, b: 2 }, share_a: shareA, quantum_ms_mean: 100, quantum_ms_max: 120, latencies_ms: { alone: raw.alone, under_load: raw.underLoad } },
    }, '_Measured now._', false);
    expect(md.startsWith('## Scheduler')).toBe(true);
    for (const k of Object.keys(figures)) expect(md).toContain(k.split('_')[0]);
    expect(md).toContain('≤ alone + one quantum = 130');
    expect(md).not.toContain('**no**');
  });
});
