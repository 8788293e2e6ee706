/**
 * Benchmark harness: timing statistics, result rows (the JSON of issue 3), numerical agreement, and
 * the plain-text table. Pure TypeScript (no Deno, no GPU), so the Node unit tests cover it.
 *
 * Timing protocol: an iteration is timed by wall clock from its start until its work has finished
 * on the GPU (each implementation's `run()` resolves only then). `warmup` iterations run first and
 * are dropped (pipeline compilation, buffer pools filling); then up to `iters` iterations are timed,
 * stopping early — after at least `minIters` — once `budgetMs` of timed work has been spent, so the
 * big shapes on a software adapter stay affordable; likewise the warm-up ends early after one
 * iteration that took `warmupStopMs` or more. The reported figure is the median.
 *
 * Batches (`batchMs`): a completion wait costs a platform constant on top of the GPU's work — Deno
 * resolves `mapAsync` and `onSubmittedWorkDone` only at its device poll, which sleeps 10 ms after
 * each check (11.5 ms measured for an empty submission on llvmpipe) — that would otherwise swamp
 * the short kernels of every implementation alike. With `batchMs`, each timed sample is
 * `fn(k)`: k iterations issued back to back with one completion wait, its time divided by k, where
 * k = clamp(floor(batchMs / the last warm-up iteration's ms), 1, maxBatch) — chosen per
 * implementation from its own warm-up, so an iteration of batchMs or more runs alone. The budget
 * counts whole samples.
 */

export interface TimingOptions {
  warmup: number;
  iters: number;
  /** Fewest timed iterations, whatever the budget. */
  minIters: number;
  /** Stop timing once this many ms were spent in timed iterations (after minIters). */
  budgetMs: number;
  /** End the warm-up after the first warm-up iteration that took at least this long (big shapes). */
  warmupStopMs?: number;
  /** Aim for timed samples of about this many ms, several iterations per completion wait (see the file header). */
  batchMs?: number;
  /** Most iterations in one sample (default 8). */
  maxBatch?: number;
  /** Clock in ms; `performance.now` by default (tests inject a fake one). */
  now?: () => number;
}

export interface TimingStats {
  median_ms: number;
  min_ms: number;
  max_ms: number;
  /** Timed iterations (warm-up excluded). */
  n: number;
  /** Warm-up iterations run. */
  warmup: number;
  /** Iterations per timed sample (one completion wait each sample). */
  batch: number;
}

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError('median of an empty list');
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Run `fn` for warm-up, then time it; see the file header for the protocol. `fn(k)` runs k
 * iterations back to back and resolves once the GPU has finished them all (k is 1 without `batchMs`).
 */
export async function measure(fn: (iterations: number) => Promise<void>, opts: TimingOptions): Promise<TimingStats> {
  const now = opts.now ?? (() => performance.now());
  let warm = 0;
  let last = Infinity;
  while (warm < opts.warmup) {
    const t0 = now();
    await fn(1);
    last = now() - t0;
    warm++;
    if (opts.warmupStopMs !== undefined && last >= opts.warmupStopMs) break;
  }
  const batch = opts.batchMs === undefined || !(last > 0) ? 1 : Math.max(1, Math.min(opts.maxBatch ?? 8, Math.floor(opts.batchMs / last)));
  const samples: number[] = [];
  let spent = 0;
  while (samples.length < Math.max(1, opts.iters)) {
    const t0 = now();
    await fn(batch);
    const dt = now() - t0;
    samples.push(dt / batch);
    spent += dt;
    if (samples.length >= opts.minIters && spent >= opts.budgetMs) break;
  }
  return {
    median_ms: median(samples),
    min_ms: Math.min(...samples),
    max_ms: Math.max(...samples),
    n: samples.length,
    warmup: warm,
    batch,
  };
}

/** Relative L2 error ‖got − want‖ / max(‖want‖, tiny), in f64. */
export function relL2(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) throw new RangeError(`relL2: lengths differ (${got.length} vs ${want.length})`);
  let num = 0;
  let den = 0;
  for (let i = 0; i < got.length; i++) {
    const d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}

/** Largest relative L2 error over the named outputs both sides produced (NaN anywhere gives Infinity). */
export function maxRelErr(a: Record<string, ArrayLike<number>>, b: Record<string, ArrayLike<number>>, names: readonly string[]): number {
  let worst = 0;
  for (const n of names) {
    if (!a[n] || !b[n]) throw new RangeError(`output "${n}" missing`);
    const e = relL2(a[n], b[n]);
    worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
  }
  return worst;
}

/**
 * Implementations whose outputs disagree (error > tol) with every other one while all the others
 * agree among themselves: with three implementations, the odd one out computed something else.
 * `errs` is keyed "a~b" as written by the comparison. With fewer than three nobody can be singled out.
 */
export function outliers(errs: Record<string, number>, names: readonly string[], tol: number): string[] {
  if (names.length < 3) return [];
  const bad = (a: string, b: string) => {
    const e = errs[`${a}~${b}`] ?? errs[`${b}~${a}`];
    return e === undefined || !(e <= tol);
  };
  return names.filter((x) => {
    const others = names.filter((y) => y !== x);
    return others.every((y) => bad(x, y)) && others.every((y) => others.every((z) => y === z || !bad(y, z)));
  });
}

export type PeerName = 'tfjs' | 'jax';
export const PEERS: readonly PeerName[] = ['tfjs', 'jax'];

/** One benchmark row: the keys of issue 3 first, then ours extras. */
export interface ResultRow {
  name: string;
  shape: string;
  ours_ms: number | null;
  peers: Record<PeerName, number | null>;
  /** min(peer ms) / ours ms: above 1 means we are faster than the best peer. */
  speedup_vs_best_peer: number | null;
  ours_gflops: number | null;
  peak_bytes: { ours: number | null; tfjs: number | null; jax: number | null };
  /** Ours' GPU time from timestamp queries (median), where the adapter offers them. */
  ours_gpu_ms: number | null;
  peer_gflops: Record<PeerName, number | null>;
  /** Largest relative L2 error between implementations' outputs at this shape, per pair. */
  max_rel_err: Record<string, number>;
  /** The model size the shape stands for. */
  model: string;
  /** Iterations per completion wait in each implementation's timed samples (TimingStats.batch), where batched. */
  iterations_per_wait?: { ours: number | null; tfjs: number | null; jax: number | null };
  /** Why a number is null, what failed. */
  notes: string[];
}

export interface RowInput {
  name: string;
  shape: string;
  model: string;
  flops: number | null;
  ours_ms: number | null;
  ours_gpu_ms: number | null;
  peers: Record<PeerName, number | null>;
  peak_bytes: { ours: number | null; tfjs: number | null; jax: number | null };
  max_rel_err: Record<string, number>;
  iterations_per_wait?: { ours: number | null; tfjs: number | null; jax: number | null };
  notes: string[];
}

const gflops = (flops: number | null, ms: number | null) => (flops === null || ms === null || ms <= 0 ? null : flops / (ms * 1e6));

/** Assemble a row, deriving the speedup and the GFLOP/s columns. */
export function makeRow(r: RowInput): ResultRow {
  const peerMs = PEERS.map((p) => r.peers[p]).filter((v): v is number => v !== null);
  const best = peerMs.length ? Math.min(...peerMs) : null;
  return {
    name: r.name,
    shape: r.shape,
    ours_ms: r.ours_ms,
    peers: { tfjs: r.peers.tfjs, jax: r.peers.jax },
    speedup_vs_best_peer: r.ours_ms !== null && best !== null && r.ours_ms > 0 ? best / r.ours_ms : null,
    ours_gflops: gflops(r.flops, r.ours_ms),
    peak_bytes: { ...r.peak_bytes },
    ours_gpu_ms: r.ours_gpu_ms,
    peer_gflops: { tfjs: gflops(r.flops, r.peers.tfjs), jax: gflops(r.flops, r.peers.jax) },
    max_rel_err: { ...r.max_rel_err },
    model: r.model,
    ...(r.iterations_per_wait ? { iterations_per_wait: { ...r.iterations_per_wait } } : {}),
    notes: [...r.notes],
  };
}

// ---- formatting ----

export function fmtMs(ms: number | null): string {
  if (ms === null) return '—';
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

/** Three significant digits below 100 (GFLOP/s on a software adapter can be 0.04), integers above. */
export function fmtNum(x: number | null): string {
  if (x === null) return '—';
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3);
}

export function fmtBytes(b: number | null): string {
  if (b === null) return '—';
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(1)} MiB`;
  if (b >= 1 << 10) return `${(b / (1 << 10)).toFixed(1)} KiB`;
  return `${b} B`;
}

export const TABLE_HEADERS = [
  'name', 'shape', 'ours ms', 'ours GPU ms', 'tfjs ms', 'jax ms', 'speedup', 'GFLOP/s ours', 'tfjs', 'jax',
  'peak ours', 'peak tfjs', 'peak jax',
] as const;

/** The cells of a row, as the text and markdown tables print them. */
export function rowCells(r: ResultRow): string[] {
  return [
    r.name, r.shape, fmtMs(r.ours_ms), fmtMs(r.ours_gpu_ms), fmtMs(r.peers.tfjs), fmtMs(r.peers.jax),
    r.speedup_vs_best_peer === null ? '—' : `${r.speedup_vs_best_peer.toFixed(2)}×`,
    fmtNum(r.ours_gflops), fmtNum(r.peer_gflops.tfjs), fmtNum(r.peer_gflops.jax),
    fmtBytes(r.peak_bytes.ours), fmtBytes(r.peak_bytes.tfjs), fmtBytes(r.peak_bytes.jax),
  ];
}

/** A fixed-width text table for the console. */
export function textTable(headers: readonly string[], rows: readonly string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
