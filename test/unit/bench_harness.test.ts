// The pure parts of the benchmark harness (test/bench): statistics, result rows, flags, markdown.
// No GPU and no timing assertions: the clock is a fake one.
import { ALGORITHMS_QUICK, algorithmsMarkdown, rewardGain } from '../../test/bench/algorithms.ts';
import { describe, expect, it } from 'vitest';
import { BenchArgsError, benchHelp, parseBenchArgs } from '../../test/bench/args.ts';
import { CHECK_CASES, flops, makeInputs, OUTPUT_NAMES, TIMED_CASES } from '../../test/bench/cases.ts';
import { makeRow, maxRelErr, measure, median, outliers, type RowInput, rowCells, TABLE_HEADERS } from '../../test/bench/harness.ts';
import { kernelsMarkdown, withPeak } from '../../test/bench/kernels.ts';
import { peakGrid } from '../../test/bench/peak.ts';
import { GENERATED_NOTE, markdownTable, parseSections, renderHeader, type RunInfo, section, updateMarkdown } from '../../test/bench/markdown.ts';

describe('bench statistics', () => {
  it('takes the median of odd and even counts without reordering the input', () => {
    const xs = [5, 1, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 3]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(() => median([])).toThrow(RangeError);
  });

  it('drops the warm-up iterations and reports the median of the timed ones', async () => {
    // Fake clock: iteration i lasts durations[i] ms (the first two are warm-up, slow on purpose).
    const durations = [100, 90, 5, 7, 6, 50, 4];
    let t = 0;
    let i = 0;
    const fn = () => {
      t += durations[i++];
      return Promise.resolve();
    };
    const s = await measure(fn, { warmup: 2, iters: 5, minIters: 5, budgetMs: 0, now: () => t });
    expect(i).toBe(7);
    expect(s).toEqual({ median_ms: 6, min_ms: 4, max_ms: 50, n: 5, warmup: 2, batch: 1 });
  });

  it('stops early once the budget is spent, but not before minIters', async () => {
    let t = 0;
    let calls = 0;
    const fn = () => {
      calls++;
      t += 10;
      return Promise.resolve();
    };
    const s = await measure(fn, { warmup: 1, iters: 100, minIters: 3, budgetMs: 25, now: () => t });
    expect(s.n).toBe(3);
    expect(calls).toBe(4);
    const s2 = await measure(fn, { warmup: 0, iters: 100, minIters: 2, budgetMs: 1000, now: () => t });
    expect(s2.n).toBe(100);
  });

  it('ends the warm-up early after a slow warm-up iteration', async () => {
    let t = 0;
    let calls = 0;
    const fn = () => {
      calls++;
      t += 50;
      return Promise.resolve();
    };
    const s = await measure(fn, { warmup: 3, iters: 2, minIters: 2, budgetMs: 0, warmupStopMs: 40, now: () => t });
    expect(s.warmup).toBe(1);
    expect(calls).toBe(3);
    const s2 = await measure(fn, { warmup: 3, iters: 2, minIters: 2, budgetMs: 0, warmupStopMs: 60, now: () => t });
    expect(s2.warmup).toBe(3);
  });

  it('times samples of several iterations per completion wait, sized from the last warm-up iteration', async () => {
    // Each call costs a 10 ms completion wait plus 4 ms per iteration.
    let t = 0;
    const calls: number[] = [];
    const fn = (k: number) => {
      calls.push(k);
      t += 10 + 4 * k;
      return Promise.resolve();
    };
    const s = await measure(fn, { warmup: 2, iters: 3, minIters: 3, budgetMs: 0, batchMs: 100, now: () => t });
    // The last warm-up took 14 ms: floor(100 / 14) = 7 iterations a sample, each sample (10 + 28) / 7 ms.
    expect(calls).toEqual([1, 1, 7, 7, 7]);
    expect(s.batch).toBe(7);
    expect(s.median_ms).toBeCloseTo(38 / 7, 12);
    // Capped by maxBatch; an iteration longer than batchMs runs alone.
    calls.length = 0;
    expect((await measure(fn, { warmup: 1, iters: 1, minIters: 1, budgetMs: 0, batchMs: 1000, maxBatch: 3, now: () => t })).batch).toBe(3);
    expect((await measure(fn, { warmup: 1, iters: 1, minIters: 1, budgetMs: 0, batchMs: 5, now: () => t })).batch).toBe(1);
    // Without batchMs every sample is one iteration.
    calls.length = 0;
    await measure(fn, { warmup: 1, iters: 2, minIters: 2, budgetMs: 0, now: () => t });
    expect(calls).toEqual([1, 1, 1]);
  });

  it('measures agreement as the worst relative L2 error over the outputs', () => {
    const a = { y: new Float32Array([1, 2]), d: new Float32Array([3, 4]) };
    const b = { y: new Float32Array([1, 2]), d: new Float32Array([3, 4.5]) };
    expect(maxRelErr(a, a, ['y', 'd'])).toBe(0);
    expect(maxRelErr(b, a, ['y', 'd'])).toBeCloseTo(0.1, 6);
    expect(maxRelErr({ y: new Float32Array([NaN]) }, { y: new Float32Array([1]) }, ['y'])).toBe(Infinity);
    expect(() => maxRelErr(a, { y: a.y }, ['y', 'd'])).toThrow(/"d" missing/);
  });

  it('singles out the one implementation that disagrees with two that agree', () => {
    const names = ['ours', 'tfjs', 'jax'];
    expect(outliers({ 'ours~tfjs': 1e-6, 'ours~jax': 1e28, 'tfjs~jax': 1e28 }, names, 1e-3)).toEqual(['jax']);
    expect(outliers({ 'ours~tfjs': 1e-6, 'ours~jax': 2e-6, 'tfjs~jax': 1e-6 }, names, 1e-3)).toEqual([]);
    // Everyone disagrees: nobody can be singled out.
    expect(outliers({ 'ours~tfjs': 1, 'ours~jax': 1, 'tfjs~jax': 1 }, names, 1e-3)).toEqual([]);
    expect(outliers({ 'tfjs~jax': 1 }, ['tfjs', 'jax'], 1e-3)).toEqual([]);
    expect(outliers({ 'ours~tfjs': NaN, 'ours~jax': Infinity, 'tfjs~jax': 0 }, names, 1e-3)).toEqual(['ours']);
  });
});

describe('bench result rows (the JSON of issue 3)', () => {
  const base: RowInput = {
    name: 'attention_fwd_bwd', shape: 'B=4 T=256 H=4 D=64', model: '10M', flops: 2e9,
    ours_ms: 10, ours_gpu_ms: 8, peers: { tfjs: 40, jax: 30 },
    peak_bytes: { ours: 1000, tfjs: 5000, jax: null }, max_rel_err: { 'tfjs~jax': 1e-7 }, notes: [],
  };

  it('has the keys of issue 3, in its order, and derives speedup and GFLOP/s', () => {
    const row = makeRow(base);
    expect(Object.keys(row).slice(0, 8)).toEqual(['name', 'shape', 'ours_ms', 'peers', 'speedup_vs_best_peer', 'ours_gflops', 'peak_bytes', 'ours_gpu_ms']);
    expect(Object.keys(row.peers)).toEqual(['tfjs', 'jax']);
    expect(Object.keys(row.peak_bytes)).toEqual(['ours', 'tfjs', 'jax']);
    expect(row.speedup_vs_best_peer).toBe(3);
    expect(row.ours_gflops).toBe(200);
    expect(row.peer_gflops).toEqual({ tfjs: 50, jax: 2e9 / 30e6 });
    expect(JSON.parse(JSON.stringify(row))).toEqual(row);
  });

  it('reports a missing op or a failed peer as null, never a number', () => {
    const missing = makeRow({ ...base, ours_ms: null, ours_gpu_ms: null, peak_bytes: { ours: null, tfjs: 5000, jax: null }, notes: ['ours: op not implemented yet'] });
    expect(missing.ours_ms).toBeNull();
    expect(missing.speedup_vs_best_peer).toBeNull();
    expect(missing.ours_gflops).toBeNull();
    expect(missing.notes).toEqual(['ours: op not implemented yet']);
    const noPeers = makeRow({ ...base, peers: { tfjs: null, jax: null } });
    expect(noPeers.speedup_vs_best_peer).toBeNull();
    expect(noPeers.peer_gflops).toEqual({ tfjs: null, jax: null });
    const oneFailed = makeRow({ ...base, peers: { tfjs: null, jax: 20 } });
    expect(oneFailed.speedup_vs_best_peer).toBe(2);
    const cells = rowCells(missing);
    expect(cells).toHaveLength(TABLE_HEADERS.length);
    expect(cells[2]).toBe('—');
  });

  it('describes every benchmark of issue 3 at both model sizes, with inputs for each output', () => {
    for (const name of ['matmul', 'lora_linear_fwd_bwd', 'attention_fwd_bwd', 'policy_loss_fwd_bwd'] as const) {
      const rows = TIMED_CASES.filter((c) => c.name === name);
      expect(rows.some((c) => c.model === '10M' && c.quick)).toBe(true);
      expect(rows.some((c) => c.model === '125M')).toBe(true);
      expect(OUTPUT_NAMES[name].length).toBeGreaterThan(0);
    }
    for (const c of CHECK_CASES) {
      expect(flops(c)).toBeGreaterThan(0);
      const a = makeInputs(c, 5);
      const b = makeInputs(c, 5);
      for (const k of Object.keys(a)) expect(Array.from(a[k])).toEqual(Array.from(b[k])); // deterministic
    }
    expect(flops({ name: 'matmul', dims: { M: 2, K: 3, N: 4 } })).toBe(48);
  });
});

describe('bench flags', () => {
  it('runs every implemented part by default and writes BENCHMARKS.md', () => {
    const a = parseBenchArgs([]);
    expect(a.parts).toEqual(['kernels', 'model', 'scheduler', 'algorithms', 'paper', 'agents', 'fleet']);
    expect(a.markdown).toBe('BENCHMARKS.md');
    expect(a.quick).toBe(false);
    expect(a.json).toBeUndefined();
  });

  it('parses --only, --json, --quick; a quick run leaves BENCHMARKS.md alone unless asked', () => {
    const a = parseBenchArgs(['--only', 'kernels', '--quick', '--json', '/tmp/k.json']);
    expect(a).toMatchObject({ parts: ['kernels'], quick: true, json: '/tmp/k.json' });
    expect(a.markdown).toBeUndefined();
    expect(parseBenchArgs(['--quick', '--markdown', 'x.md']).markdown).toBe('x.md');
    expect(parseBenchArgs(['--no-markdown']).markdown).toBeUndefined();
    expect(parseBenchArgs(['--only=kernels']).parts).toEqual(['kernels']);
    expect(parseBenchArgs(['--filter', 'attention']).filter).toBe('attention');
    expect(parseBenchArgs(['--filter', 'attention']).markdown).toBeUndefined();
  });

  it('refuses unknown flags and unknown parts; --only takes parts in PARTS order', () => {
    expect(() => parseBenchArgs(['--fast'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['--only', 'nope'])).toThrow(/unknown part "nope"/);
    expect(parseBenchArgs(['--only', 'paper']).parts).toEqual(['paper']);
    expect(parseBenchArgs(['--only', 'paper', '--quick']).markdown).toBeUndefined();
    expect(parseBenchArgs(['--only', 'model']).parts).toEqual(['model']);
    expect(parseBenchArgs(['--only', 'paper,kernels']).parts).toEqual(['kernels', 'paper']);
    expect(() => parseBenchArgs(['--json'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['extra'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['--markdown', 'a.md', '--no-markdown'])).toThrow(/contradict/);
    // --from-json: the agents section alone, written to a markdown file, nothing measured.
    expect(parseBenchArgs(['--only', 'agents', '--from-json', 'r.json'])).toMatchObject({ parts: ['agents'], fromJson: 'r.json', markdown: 'BENCHMARKS.md' });
    expect(() => parseBenchArgs(['--from-json', 'r.json'])).toThrow(/give --only agents \(got no --only\)/);
    expect(() => parseBenchArgs(['--only', 'agents,kernels', '--from-json', 'r.json'])).toThrow(/--only agents/);
    expect(() => parseBenchArgs(['--only', 'agents', '--from-json', 'r.json', '--no-markdown'])).toThrow(/not with --no-markdown/);
    expect(() => parseBenchArgs(['--only', 'agents', '--from-json', 'r.json', '--json', 'x.json'])).toThrow(/measures nothing/);
  });

  it('documents every flag and part in --help', () => {
    const h = benchHelp();
    for (const f of ['--only', '--quick', '--filter', '--json', '--markdown', '--no-markdown', '--from-json', '--help']) expect(h).toContain(f);
    for (const p of ['kernels', 'model', 'scheduler', 'algorithms', 'paper', 'agents', 'fleet']) expect(h).toContain(p);
  });
});

describe('BENCHMARKS.md generation', () => {
  const run = (date: string): RunInfo => ({
    date,
    command: 'npm run bench',
    adapter: { vendor: 'mesa', architecture: '', device: '', description: 'llvmpipe', isFallbackAdapter: false, features: ['shader-f16'] },
    machine: { cpu: 'AMD EPYC', cores: 2, os: 'Debian', deno: '2.9.6', loadavg: [1, 2, 3] },
  });

  it('writes a generated header with the adapter and the machine', () => {
    const h = renderHeader(run('2026-01-01T00:00:00Z'));
    expect(h).toContain(GENERATED_NOTE);
    expect(h).toContain('llvmpipe');
    expect(h).toContain('AMD EPYC, 2 cores, Debian, Deno 2.9.6');
  });

  it('replaces only the sections of the parts that ran and keeps the others', () => {
    const first = updateMarkdown(null, renderHeader(run('day 1')), new Map([['kernels', 'K1'], ['paper', 'P1']]), ['kernels', 'model', 'paper']);
    expect([...parseSections(first).keys()]).toEqual(['kernels', 'paper']);
    const second = updateMarkdown(first, renderHeader(run('day 2')), new Map([['kernels', 'K2']]), ['kernels', 'model', 'paper']);
    const s = parseSections(second);
    expect(s.get('kernels')).toBe(section('kernels', 'K2'));
    expect(s.get('paper')).toBe(section('paper', 'P1'));
    expect(second).toContain('day 2');
    expect(second).not.toContain('day 1');
    expect(second).not.toContain('K1');
    // Regenerating with the same content is stable, and a part run later slots into its place.
    expect(updateMarkdown(second, renderHeader(run('day 2')), new Map(), ['kernels', 'model', 'paper'])).toBe(second);
    const third = updateMarkdown(second, renderHeader(run('day 3')), new Map([['model', 'M1']]), ['kernels', 'model', 'paper']);
    expect([...parseSections(third).keys()]).toEqual(['kernels', 'model', 'paper']);
  });

  it('escapes pipes in table cells', () => {
    expect(markdownTable(['a', 'b'], [['x|y', 'z']])).toBe('| a | b |\n|---|---|\n| x\\|y | z |');
  });
});

describe('algorithms part', () => {
  it('compares the mean reward of the first and last windows against issue 5’s +0.1', () => {
    const curve = [0.1, 0.2, 0.1, 0.2, 0.5, 0.3, 0.3, 0.4];
    const g = rewardGain(curve, 2);
    expect(g.first).toBeCloseTo(0.15, 12);
    expect(g.last).toBeCloseTo(0.35, 12);
    expect(g.gain).toBeCloseTo(0.2, 12);
    expect(g.met).toBe(true);
    expect(rewardGain([0.3, 0.3, 0.35, 0.35], 2).met).toBe(false);
    expect(() => rewardGain([0.1, 0.2, 0.3], 2)).toThrow(RangeError);
  });

  it('renders one row per algorithm with its verdict and block means', () => {
    const row = (algo: 'grpo' | 'dpo', curve: number[]) => ({ algo, lr: 5e-3, rewardCurve: curve, ...rewardGain(curve, 2), successBefore: 0.25, successAfter: 0.5, rewardBefore: 0.1, rewardAfter: 0.3, seconds: 12.5 });
    const md = algorithmsMarkdown({
      settings: { ...ALGORITHMS_QUICK, maxSeqLen: 384 }, warmStartSeconds: 30, sftLossCurve: [1, 0.5],
      results: [row('grpo', [0, 0.1, 0.3, 0.4]), row('dpo', [0.2, 0.2, 0.2, 0.2])], met: false,
    }, '_measured_', true);
    expect(md).toContain('## Algorithms');
    expect(md).toMatch(/\| grpo \| 0\.005 \| 0\.050 \| 0\.350 \| \+0\.300 \| yes \| 0\.250 → 0\.500 \| 0\.05 0\.35 \|/);
    expect(md).toMatch(/\| dpo \| 0\.005 \| 0\.200 \| 0\.200 \| \+0\.000 \| \*\*no\*\* \|/);
    expect(md).toContain('Quick run');
  });
});

describe('the device peak in the kernels report', () => {
  it('lays a grid over x ≤ 65535 workgroups', () => {
    expect(peakGrid(300)).toEqual([300, 1]);
    expect(peakGrid(65535)).toEqual([65535, 1]);
    const [x, y] = peakGrid(400_000);
    expect(x).toBeLessThanOrEqual(65535);
    expect(x * y).toBeGreaterThanOrEqual(400_000);
    expect(x * y - 400_000).toBeLessThan(y);
  });

  it('gives each row its TFLOP/s and fraction of the measured peak, and renders them', () => {
    const row = makeRow({
      name: 'matmul', shape: '[256,256]x[256,1024]', model: '10M', flops: 2 * 256 * 256 * 1024, ours_ms: 10, ours_gpu_ms: null,
      peers: { tfjs: 20, jax: 30 }, peak_bytes: { ours: null, tfjs: null, jax: null }, max_rel_err: {}, notes: [],
    });
    const peak = { gflops: 50, timing: 'timestamp-query' as const, workgroups: 256, seconds: 0.1 };
    const x = withPeak(row, peak);
    expect(x.ours_gflops).toBeCloseTo(13.4217728, 9);
    expect(x.ours_tflops).toBeCloseTo(0.0134217728, 12);
    expect(x.ours_fraction_of_peak).toBeCloseTo(13.4217728 / 50, 12);
    expect(withPeak(row, null).ours_fraction_of_peak).toBeNull();
    const md = kernelsMarkdown({ results: [row], checks: [], failures: [], peak }, '_m_', false);
    expect(md).toContain('reaches 50.0 GFLOP/s = 0.0500 TFLOP/s on this adapter (timestamp-query)');
    expect(md).toMatch(/\| matmul \| \[256,256\]x\[256,1024\] \| 0\.0134 \| 26\.8% \|/);
    expect(kernelsMarkdown({ results: [row], checks: [], failures: [], peak: null }, '_m_', false)).not.toContain('fraction of peak');
  });
});
