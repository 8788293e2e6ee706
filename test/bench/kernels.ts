/**
 * The `kernels` part: each kernel beside its best equivalent in tfjs-backend-webgpu and jax-js,
 * in this process, on the same adapter (each framework asks the adapter for its own device).
 *
 * 1. Checks: every implementation runs each benchmark on a small shape (no size a multiple of a
 *    tile) and their outputs must agree within CHECK_TOL (relative L2) pairwise, so that the timed
 *    rows compare equal work.
 * 2. Timed rows: per shape and implementation, one iteration whose outputs are read back (the
 *    first warm-up, and the same pairwise agreement check at the timed shape), `warmup` more
 *    iterations, then the median of the timed ones (see harness.ts), then ours' GPU time (median
 *    of GPU_RUNS timestamped iterations) and one iteration measuring peak bytes.
 * An implementation that fails gets null with its error printed and noted, never a number.
 */
import { BENCH_NAMES, type BenchCase, CHECK_CASES, flops, makeInputs, OUTPUT_NAMES, type Outputs, shapeString, TIMED_CASES } from './cases.ts';
import {
  fmtMs, fmtNum, makeRow, maxRelErr, measure, median, outliers, type ResultRow, rowCells, TABLE_HEADERS, textTable, type TimingOptions,
} from './harness.ts';
import { type DevicePeak, measureDevicePeak } from './peak.ts';
import type { Impl, ImplName } from './impl.ts';
import { markdownTable } from './markdown.ts';

export const CHECK_TOL = 1e-3;
const GPU_RUNS = 3;

/** Speedup over the best peer that issue 3 asks each kernel to reach. */
export const TARGETS: Readonly<Record<string, number>> = {
  matmul: 1.0,
  lora_linear_fwd_bwd: 1.5,
  attention_fwd_bwd: 3,
  policy_loss_fwd_bwd: 5,
};

export const TIMING_FULL: TimingOptions = { warmup: 2, iters: 10, minIters: 3, budgetMs: 15_000, warmupStopMs: 3_000, batchMs: 250, maxBatch: 8 };
export const TIMING_QUICK: TimingOptions = { warmup: 1, iters: 3, minIters: 3, budgetMs: 0 };

export interface CheckResult {
  name: string;
  shape: string;
  max_rel_err: Record<string, number>;
  ok: boolean;
  notes: string[];
}

export interface KernelsReport {
  results: ResultRow[];
  checks: CheckResult[];
  /** The adapter's measured f32 FMA peak (test/bench/peak.ts), when it could be measured. */
  peak: DevicePeak | null;
  /** Problems that should fail the run: disagreeing outputs. */
  failures: string[];
}

const errText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).split('\n')[0];

/** Pairwise agreement of the implementations' outputs; adds a note per disagreeing pair. */
function compare(c: BenchCase, outs: Partial<Record<ImplName, Outputs>>, notes: string[]): Record<string, number> {
  const names = OUTPUT_NAMES[c.name];
  const have = (['ours', 'tfjs', 'jax'] as const).filter((n) => outs[n]);
  const errs: Record<string, number> = {};
  for (let i = 0; i < have.length; i++) {
    for (let j = i + 1; j < have.length; j++) {
      const pair = `${have[i]}~${have[j]}`;
      errs[pair] = maxRelErr(outs[have[i]]!, outs[have[j]]!, names);
      if (!(errs[pair] <= CHECK_TOL)) notes.push(`outputs disagree: ${pair} relative L2 ${errs[pair].toExponential(2)} > ${CHECK_TOL}`);
    }
  }
  return errs;
}

async function runChecks(impls: Impl[], want: (c: BenchCase) => boolean, log: (s: string) => void): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const c of CHECK_CASES.filter(want)) {
    const inputs = makeInputs(c, 99);
    const outs: Partial<Record<ImplName, Outputs>> = {};
    const notes: string[] = [];
    for (const impl of impls) {
      const why = impl.missing(c);
      if (why) {
        notes.push(`${impl.name}: ${why}`);
        continue;
      }
      try {
        const p = await impl.prepare(c, inputs);
        try {
          outs[impl.name] = await p.outputs();
        } finally {
          p.dispose();
        }
      } catch (e) {
        log(`  check ${c.name} ${impl.name} FAILED: ${errText(e)}`);
        notes.push(`${impl.name} failed: ${errText(e)}`);
      }
    }
    const before = notes.length;
    const max_rel_err = compare(c, outs, notes);
    const ok = notes.length === before && Object.keys(max_rel_err).length > 0;
    const pairs = Object.entries(max_rel_err).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(', ') || 'nothing to compare';
    log(`  check ${c.name} ${shapeString(c)}: ${pairs}${ok ? '' : ` — ${notes.slice(before).join('; ') || 'FAILED'}`}`);
    out.push({ name: c.name, shape: shapeString(c), max_rel_err, ok, notes });
  }
  return out;
}

interface ImplRun {
  ms: number | null;
  gpuMs: number | null;
  peak: number | null;
  outputs: Outputs | null;
  /** Iterations per completion wait of the timed samples. */
  batch: number | null;
}

async function runImpl(impl: Impl, c: BenchCase, inputs: ReturnType<typeof makeInputs>, timing: TimingOptions, notes: string[], log: (s: string) => void): Promise<ImplRun> {
  const none: ImplRun = { ms: null, gpuMs: null, peak: null, outputs: null, batch: null };
  const why = impl.missing(c);
  if (why) {
    notes.push(`${impl.name}: ${why}`);
    return none;
  }
  let stage = 'prepare';
  try {
    const p = await impl.prepare(c, inputs);
    try {
      stage = 'first iteration';
      const outputs = await p.outputs();
      stage = 'timing';
      const stats = await measure((k) => p.run(k), timing);
      let gpuMs: number | null = null;
      if (p.gpuMs) {
        stage = 'GPU timing';
        const g: number[] = [];
        for (let i = 0; i < GPU_RUNS; i++) {
          const v = await p.gpuMs();
          if (v !== null) g.push(v);
        }
        gpuMs = g.length ? median(g) : null;
      }
      stage = 'peak bytes';
      const peak = await p.peakBytes();
      log(`    ${impl.name.padEnd(4)} ${fmtMs(stats.median_ms)} ms (median of ${stats.n}${stats.batch > 1 ? ` samples of ${stats.batch}` : ''}, min ${fmtMs(stats.min_ms)}, max ${fmtMs(stats.max_ms)})`);
      return { ms: stats.median_ms, gpuMs, peak, outputs, batch: stats.batch };
    } finally {
      p.dispose();
    }
  } catch (e) {
    log(`    ${impl.name.padEnd(4)} FAILED during ${stage}: ${errText(e)}`);
    if (e instanceof Error && e.stack) log(e.stack.split('\n').slice(1, 4).join('\n'));
    notes.push(`${impl.name} failed during ${stage}: ${errText(e)}`);
    return none;
  }
}

/** The row's TFLOP/s and its fraction of the device's measured peak (JSON extras). */
export function withPeak(r: ResultRow, peak: DevicePeak | null): ResultRow & { ours_tflops: number | null; ours_fraction_of_peak: number | null } {
  const tflops = r.ours_gflops === null ? null : r.ours_gflops / 1000;
  return { ...r, ours_tflops: tflops, ours_fraction_of_peak: r.ours_gflops === null || !peak ? null : r.ours_gflops / peak.gflops };
}

/** Run the part. `impls` are initialized already (a failed peer is simply absent, noted in `down`). */
export async function runKernels(
  impls: Impl[],
  down: Partial<Record<ImplName, string>>,
  opts: { quick: boolean; filter?: string; log: (s: string) => void; device?: GPUDevice },
): Promise<KernelsReport> {
  const { log } = opts;
  let peak: DevicePeak | null = null;
  if (opts.device) {
    try {
      peak = await measureDevicePeak(opts.device);
      log(`kernels: device f32 FMA peak ${fmtNum(peak.gflops)} GFLOP/s (${peak.timing}, ${peak.workgroups} workgroups of 64, ${fmtMs(1000 * peak.seconds)} ms)`);
    } catch (e) {
      log(`kernels: the device's peak could not be measured: ${errText(e)}`);
    }
  }
  const timing = opts.quick ? TIMING_QUICK : TIMING_FULL;
  log(`kernels: checking every implementation on small shapes (tolerance ${CHECK_TOL} relative L2)`);
  const want = (c: BenchCase) => !opts.filter || c.name.includes(opts.filter);
  const checks = await runChecks(impls, want, log);
  const failures = checks.filter((k) => !k.ok && Object.keys(k.max_rel_err).length > 0).map((k) => `check ${k.name} ${k.shape}: ${k.notes.join('; ')}`);

  const results: ResultRow[] = [];
  for (const c of TIMED_CASES.filter((t) => (!opts.quick || t.quick) && want(t))) {
    const shape = shapeString(c);
    log(`  ${c.name} ${shape}`);
    const notes: string[] = Object.entries(down).map(([n, why]) => `${n} unavailable: ${why}`);
    const inputs = makeInputs(c);
    const runs: Partial<Record<ImplName, ImplRun>> = {};
    for (const impl of impls) runs[impl.name] = await runImpl(impl, c, inputs, timing, notes, log);
    const outs: Partial<Record<ImplName, Outputs>> = {};
    for (const [n, r] of Object.entries(runs)) if (r?.outputs) outs[n as ImplName] = r.outputs;
    const before = notes.length;
    const max_rel_err = compare(c, outs, notes);
    // An implementation that disagrees with two that agree computed something else: its time is
    // not a measurement of this work. A wrong peer is reported; anything else fails the run.
    const odd = outliers(max_rel_err, Object.keys(outs), CHECK_TOL) as ImplName[];
    for (const n of odd) {
      const r = runs[n]!;
      notes.push(`${n}: outputs disagree with the other two implementations; its time and peak bytes are not reported`);
      r.ms = r.gpuMs = r.peak = null;
    }
    if (notes.length > before && !(odd.length === 1 && odd[0] !== 'ours')) {
      for (const n of notes.slice(before)) failures.push(`${c.name} ${shape}: ${n}`);
    }
    results.push(makeRow({
      name: c.name,
      shape,
      model: c.model,
      flops: flops(c),
      ours_ms: runs.ours?.ms ?? null,
      ours_gpu_ms: runs.ours?.gpuMs ?? null,
      peers: { tfjs: runs.tfjs?.ms ?? null, jax: runs.jax?.ms ?? null },
      peak_bytes: { ours: runs.ours?.peak ?? null, tfjs: runs.tfjs?.peak ?? null, jax: runs.jax?.peak ?? null },
      max_rel_err,
      iterations_per_wait: { ours: runs.ours?.batch ?? null, tfjs: runs.tfjs?.batch ?? null, jax: runs.jax?.batch ?? null },
      notes,
    }));
  }
  log('');
  log(textTable(TABLE_HEADERS, results.map(rowCells)));
  for (const r of results) for (const n of r.notes) log(`  ${r.name} ${r.shape}: ${n}`);
  return { results: results.map((r) => withPeak(r, peak)), checks, failures, peak };
}

/** The body of the kernels section of BENCHMARKS.md. */
export function kernelsMarkdown(rep: KernelsReport, measured: string, quick: boolean): string {
  const lines = [
    '## Kernels',
    '',
    measured,
    quick ? '\n**Quick run** (`--quick`): small shapes only, 1 warm-up and 3 timed iterations — a smoke test, not a measurement.' : '',
    '',
    markdownTable(TABLE_HEADERS, rep.results.map(rowCells)),
    '',
  ];
  if (rep.peak) {
    const p = rep.peak;
    lines.push(
      `Against the device's peak: a kernel of nothing but independent f32 fused multiply-adds (test/bench/peak.ts) reaches ` +
        `${fmtNum(p.gflops)} GFLOP/s = ${(p.gflops / 1000).toPrecision(3)} TFLOP/s on this adapter (${p.timing}); ours, per row:`,
      '',
      markdownTable(['name', 'shape', 'ours TFLOP/s', 'fraction of peak'], rep.results.map((r) => {
        const x = withPeak(r, p);
        return [r.name, r.shape, x.ours_tflops === null ? '—' : x.ours_tflops.toPrecision(3), x.ours_fraction_of_peak === null ? '—' : `${(100 * x.ours_fraction_of_peak).toPrecision(3)}%`];
      })),
      '',
    );
  }
  const noted = rep.results.filter((r) => r.notes.length);
  if (noted.length) {
    lines.push('Notes:', '');
    for (const r of noted) for (const n of r.notes) lines.push(`- ${r.name} ${r.shape}: ${n}`);
    lines.push('');
  }
  lines.push('Where issue 3 asks us to end, against the best peer on the same adapter:', '');
  for (const name of BENCH_NAMES) {
    const rows = rep.results.filter((r) => r.name === name);
    const got = rows.map((r) => (r.speedup_vs_best_peer === null ? '—' : `${r.speedup_vs_best_peer.toFixed(2)}×`)).join(', ');
    lines.push(`- ${name}: ≥ ${TARGETS[name]}× — now ${rows.some((r) => r.ours_ms !== null) ? got : 'op not implemented yet'}`);
  }
  lines.push(
    '',
    'Outputs agree before anything is timed (largest relative L2 error between implementations, small shapes):',
    '',
    markdownTable(['name', 'shape', 'pairs', 'ok'], rep.checks.map((k) => [
      k.name, k.shape,
      Object.entries(k.max_rel_err).map(([p, e]) => `${p} ${e.toExponential(1)}`).join(', ') || '—',
      k.ok ? 'yes' : `no: ${k.notes.join('; ')}`,
    ])),
    '',
    'How to read it:',
    '',
    '- ms: wall clock per iteration until the GPU has finished it (ours: record + `Recorder.submit()` + ' +
      '`queue.onSubmittedWorkDone()`; tfjs: its queue submitted and `onSubmittedWorkDone()`; jax-js: `blockUntilReady()` on every ' +
      'output), median after warm-up; nothing is read back. Warm-up: the iteration whose outputs are checked, then 2 more (1 where ' +
      'it took 3 s or more). Full runs time up to 10 samples and stop after 3 once 15 s were spent. A sample is k iterations issued ' +
      'back to back with one completion wait, divided by k, k = min(8, 250 ms / the implementation\'s last warm-up iteration) and ' +
      'at least 1 (the JSON\'s `iterations_per_wait`): Deno resolves a completion wait only at its device poll, which sleeps 10 ms ' +
      'after each check (11.5 ms measured for an empty submission here), a constant that would otherwise swamp short kernels of ' +
      'every implementation alike.',
    '- ours GPU ms: timestamp queries around the submission (median of 3), where the adapter offers `timestamp-query`.',
    '- speedup: best peer ms / ours ms. GFLOP/s: useful FLOPs (see test/bench/cases.ts: attention counts 6·B·H·T²·D for the ' +
      'causal forward and backward; policy loss a nominal 8·N·V) over the median.',
    '- peak: ours = the buffer pool\'s peakLiveBytes over one iteration (live tensors incl. inputs, in pool size classes); ' +
      'tfjs = `tf.profile().peakBytes` (live tensor bytes incl. inputs); jax-js exposes no memory statistics (—).',
    '- Peers compose their ops: matmul; LoRA as x·Wᵀ + s·(x·Aᵀ)·Bᵀ with autograd for dx, dA, dB (W frozen); attention as ' +
      'QKᵀ·scale + causal bias → softmax → ·V with autograd; the PPO clipped loss as log-softmax → target gather (tfjs) or ' +
      'masked row sum with mask = (iota == target) (jax-js) → ratio → clip → mean, with autograd for dlogits. jax-js traces ' +
      'forward and backward under one `jit`.',
  );
  return lines.filter((l, i) => !(l === '' && lines[i - 1] === '')).join('\n');
}
