/**
 * Per-kernel GPU time, for finding where a step's time goes (tinygrad's DEBUG=2 habit).
 *
 * Set `ctx.profiler = new KernelProfiler()` and every later Recorder submission puts each dispatch
 * in a compute pass of its own with a timestamp before and after it; the profiler sums the GPU
 * nanoseconds per kernel (kernel name and entry point). Passes of one dispatch each cost a little
 * more than shared passes, so a profiled step runs somewhat slower than an unprofiled one: use it
 * to compare kernels with each other, and benchmarks for absolute speed. Needs the
 * 'timestamp-query' feature (acquireGpu asks for it); without it the profiler stays empty.
 */

export interface KernelTime {
  /** `kernel` or `kernel:entryPoint`. */
  readonly name: string;
  readonly calls: number;
  readonly ns: number;
  /** Workgroups launched over all calls. */
  readonly workgroups: number;
}

export class KernelProfiler {
  /** Also split kernels by their override constants and workgroup counts. */
  readonly detailed: boolean;
  constructor(opts: { detailed?: boolean } = {}) {
    this.detailed = Boolean(opts.detailed);
  }
  #byName = new Map<string, { calls: number; ns: number; workgroups: number }>();

  /** Records one dispatch. */
  add(name: string, ns: number, workgroups: number): void {
    const e = this.#byName.get(name) ?? { calls: 0, ns: 0, workgroups: 0 };
    e.calls++;
    e.ns += ns;
    e.workgroups += workgroups;
    this.#byName.set(name, e);
  }

  /** Totals per kernel, the most expensive first. */
  entries(): KernelTime[] {
    return [...this.#byName].map(([name, e]) => ({ name, ...e })).sort((a, b) => b.ns - a.ns);
  }

  get totalNs(): number {
    let s = 0;
    for (const e of this.#byName.values()) s += e.ns;
    return s;
  }

  reset(): void {
    this.#byName.clear();
  }

  /** A fixed-width table: kernel, calls, total ms, share, µs per call. */
  table(top = 30): string {
    const total = this.totalNs || 1;
    const rows = this.entries().slice(0, top).map((e) =>
      `${e.name.padEnd(this.detailed ? 110 : 44)} ${String(e.calls).padStart(7)} ${(e.ns / 1e6).toFixed(1).padStart(10)} ${((100 * e.ns) / total).toFixed(1).padStart(6)}% ${(e.ns / 1e3 / e.calls).toFixed(0).padStart(9)}`);
    return [`${'kernel'.padEnd(this.detailed ? 110 : 44)} ${'calls'.padStart(7)} ${'ms'.padStart(10)} ${'share'.padStart(7)} ${'µs/call'.padStart(9)}`, ...rows, `total ${(total / 1e6).toFixed(1)} ms`].join('\n');
  }
}
