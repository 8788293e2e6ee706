/**
 * The timestamp queries of one Recorder submission, in one of two modes:
 *
 * - profiling (`ctx.profiler` set): every dispatch in a compute pass of its own, timestamps 2k and
 *   2k + 1 around dispatch k; the readback adds each dispatch's GPU time to the profiler;
 * - timing (`new Recorder(ctx, { timing: true })`, no profiler): a timestamp at the start of the
 *   first pass and one at the end of the last; the readback gives the submission's GPU time.
 *
 * The query set, its resolve buffer (queryPool) and its readback buffer (readbackPool) live from
 * `open` to `read` (or `release` when the submission fails).
 */
import type { GpuContext } from './device.ts';
import type { KernelProfiler } from './profiler.ts';
import type { DispatchSpec } from './recorder.ts';

export class SubmitTimestamps {
  readonly #ctx: GpuContext;
  readonly #query: GPUQuerySet;
  readonly #resolveBuf: GPUBuffer;
  #readBuf: GPUBuffer | null;
  /** Profiling: the dispatches in order; null when timing the whole submission. */
  readonly #profiled: readonly DispatchSpec[] | null;
  readonly #profiler: KernelProfiler | null;
  readonly #passCount: number;

  private constructor(ctx: GpuContext, label: string, owner: string, profiler: KernelProfiler | null, profiled: readonly DispatchSpec[] | null, passCount: number) {
    this.#ctx = ctx;
    this.#profiler = profiler;
    this.#profiled = profiled;
    this.#passCount = passCount;
    const count = profiled ? 2 * profiled.length : 2;
    const what = profiled ? 'profile' : 'timestamps';
    this.#query = ctx.device.createQuerySet({ type: 'timestamp', count, label: `${label} ${what}` });
    this.#resolveBuf = ctx.queryPool.acquire(8 * count, owner, `${label} ${what}`).buffer;
    this.#readBuf = ctx.readbackPool.acquire(8 * count, owner, `${label} ${what} read`).buffer;
  }

  /**
   * The submission's timestamps, or null when it takes none: profiling where the context has a
   * profiler and timestamp queries, else timing where asked for and there is a pass to time.
   */
  static open(ctx: GpuContext, o: { label: string; owner: string; timing: boolean; dispatches: readonly DispatchSpec[]; passCount: number }): SubmitTimestamps | null {
    const profiler = ctx.hasTimestamps ? ctx.profiler : null;
    if (profiler) return o.dispatches.length > 0 ? new SubmitTimestamps(ctx, o.label, o.owner, profiler, o.dispatches, o.dispatches.length) : null;
    return o.timing && o.passCount > 0 ? new SubmitTimestamps(ctx, o.label, o.owner, null, null, o.passCount) : null;
  }

  /** Whether every dispatch needs a compute pass of its own (profiling). */
  get passPerDispatch(): boolean {
    return this.#profiled !== null;
  }

  /** The timestamp writes of compute pass `index` (passes counted from 0 in encoding order), if any. */
  passWrites(index: number): GPUComputePassTimestampWrites | undefined {
    if (this.#profiled) return { querySet: this.#query, beginningOfPassWriteIndex: 2 * index, endOfPassWriteIndex: 2 * index + 1 };
    const first = index === 0;
    const last = index === this.#passCount - 1;
    if (!first && !last) return undefined;
    return { querySet: this.#query, ...(first ? { beginningOfPassWriteIndex: 0 } : {}), ...(last ? { endOfPassWriteIndex: 1 } : {}) };
  }

  /** Resolves the queries into the readback buffer (after the last pass). */
  resolve(enc: GPUCommandEncoder): void {
    const count = this.#query.count;
    enc.resolveQuerySet(this.#query, 0, count, this.#resolveBuf, 0);
    enc.copyBufferToBuffer(this.#resolveBuf, 0, this.#readBuf!, 0, 8 * count);
  }

  /**
   * Reads the timestamps once the submission has run: profiling adds every dispatch's time to the
   * profiler (undefined returned); timing returns the submission's GPU nanoseconds (undefined if
   * the clock ran backwards). The readback buffer goes back to its pool.
   */
  async read(): Promise<number | undefined> {
    const buf = this.#readBuf!;
    const bytes = 8 * this.#query.count;
    await buf.mapAsync(GPUMapMode.READ, 0, bytes);
    const t = new BigUint64Array(buf.getMappedRange(0, bytes).slice(0));
    buf.unmap();
    this.#ctx.readbackPool.release(buf);
    this.#readBuf = null;
    const span = (k: number) => (t[2 * k + 1] >= t[2 * k] ? Number(t[2 * k + 1] - t[2 * k]) : undefined);
    if (!this.#profiled) return span(0);
    const profiler = this.#profiler!;
    this.#profiled.forEach((spec, k) => {
      const [x, y = 1, z = 1] = spec.workgroups;
      const name = spec.entryPoint ? `${spec.kernel}:${spec.entryPoint}` : spec.kernel;
      const detail = profiler.detailed ? ` ${JSON.stringify(spec.constants ?? {})} wg=${x}x${y}x${z}` : '';
      profiler.add(name + detail, span(k) ?? 0, x * y * z);
    });
    return undefined;
  }

  /** The query set and resolve buffer; with `readback`, also the readback buffer if `read` has not taken it. */
  release(readback: boolean): void {
    this.#ctx.queryPool.release(this.#resolveBuf);
    this.#query.destroy();
    if (readback && this.#readBuf) {
      this.#ctx.readbackPool.release(this.#readBuf);
      this.#readBuf = null;
    }
  }
}
