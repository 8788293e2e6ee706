// The `pretrained` bench part's flags and report: opt-in (not in a plain run), its table rows and
// notes — pure functions, no GPU.
import { describe, expect, it } from 'vitest';
import { benchHelp, parseBenchArgs } from '../../test/bench/args.ts';
import { type PretrainedReport, pretrainedMarkdown, pretrainedRows } from '../../test/bench/pretrained_report.ts';

const report = (over: Partial<PretrainedReport> = {}): PretrainedReport => ({
  settings: { train: { B: 1, T: 256, rank: 8 }, decode: { P: 16, n: 16, batches: [1, 8] }, loraTargets: ['q_proj', 'v_proj'] },
  models: [{
    model: 'M', params: 100, f16Base: true, loadS: 2,
    lora: { stepS: 10, firstStepS: 12, peakBytes: 1000, estimateBytes: 1010 },
    full: { stepS: 30, peakBytes: 4000, estimateBytes: 4004 },
    decodeTokS: { b1: 2, b8: 12 },
    torch: { load_s: 1, lora_step_s: 5, decode_b1_tok_s: 4, decode_b8_tok_s: 24 },
    notes: [],
  }],
  torchVersions: 'torch 2, transformers 5, peft 0.2, 2 threads', torchWhy: null, failures: [],
  ...over,
});

describe('pretrained part flags', () => {
  it('runs only when named', () => {
    expect(parseBenchArgs([]).parts).not.toContain('pretrained');
    expect(parseBenchArgs([]).parts).toContain('model');
    expect(parseBenchArgs(['--only', 'pretrained']).parts).toEqual(['pretrained']);
    expect(parseBenchArgs(['--only', 'pretrained,model']).parts).toEqual(['model', 'pretrained']);
    expect(benchHelp()).toMatch(/but pretrained/);
  });
});

describe('pretrained report', () => {
  it('one row per figure: times and rates beside torch, how many times faster ours is, estimates against peaks', () => {
    const rows = pretrainedRows(report());
    expect(rows.map((r) => r[1])).toEqual([
      'load from the HF cache (s)', 'LoRA step B=1 T=256 R=8 (s)', 'greedy decode B=1 P=16 n=16 (tokens/s)', 'greedy decode B=8 P=16 n=16 (tokens/s)',
      'peak bytes, LoRA step', 'peak bytes, full step',
    ]);
    expect(rows[0].slice(2, 5)).toEqual(['2.00', '1.00', '0.50×']); // ours takes twice as long to load
    expect(rows[1].slice(2, 5)).toEqual(['10.0', '5.00', '0.50×']);
    expect(rows[3].slice(2, 5)).toEqual(['12.0', '24.0', '0.50×']);
    expect(rows[4][5]).toContain('1.010×');
    expect(rows[5][5]).toContain('1.001×');
    expect(rows[5][5]).toContain('LoRA peak 25.0% of full');
  });

  it('says why torch or a full step did not run, and names failures', () => {
    const base = report();
    const r = report({
      models: [{ ...base.models[0], torch: null, full: { stepS: null, peakBytes: null, estimateBytes: 9e9 }, notes: ['full step not run: over 80%'] }],
      torchVersions: null, torchWhy: 'torch not run: python3 lacks torch', failures: ['pretrained X: boom'],
    });
    const rows = pretrainedRows(r);
    expect(rows[1].slice(3, 5)).toEqual(['—', '—']);
    expect(rows[5][2]).toBe('—');
    expect(rows[5][5]).toMatch(/^not run \(estimate/);
    const md = pretrainedMarkdown(r, '_measured_', false);
    expect(md).toContain('- M: full step not run: over 80%');
    expect(md).toContain('- torch: torch not run: python3 lacks torch');
    expect(md).toContain('- failed: pretrained X: boom');
    expect(md).not.toContain('Quick smoke run');
  });
});
