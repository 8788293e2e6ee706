/**
 * "Ours": each benchmark through the host wrappers in src/ops/, on our own device.
 *
 * An adapter uploads the inputs and allocates the outputs once (prepare), then records one
 * iteration per Recorder. Timing covers recording and `submit()`, which resolves only once the GPU
 * has finished the submission (it awaits `queue.onSubmittedWorkDone()`, or the mapping of its
 * reads or timestamps): the wall clock until the GPU has finished, with one completion wait as
 * the peers have (a second `onSubmittedWorkDone()` would add a whole device-poll tick, ~11 ms
 * under Deno here, and no GPU work). GPU time comes from a Recorder with timestamp queries
 * (`timing: true`) where the adapter offers them.
 * Peak bytes: `ctx.pool.resetPeaks()` before one iteration and `peakLiveBytes` after — the largest
 * total of live storage tensors (inputs, outputs and any scratch the op allocates), counted in the
 * pool's size classes (up to 1.5× the tensor bytes), not the pool's cached free buffers.
 *
 * A benchmark whose op has not landed in src/ops/ has no adapter: its row reports
 * "op not implemented yet" and null numbers.
 */
import { acquireGpu, type GpuContext } from '../../src/gpu/device.ts';
import { Recorder } from '../../src/gpu/recorder.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { type BenchCase, type Inputs, OUTPUT_NAMES, type Outputs } from './cases.ts';
import type { Impl, Prepared } from './impl.ts';
import { OUR_OPS } from './ours_ops.ts';

/** Build one case on our device: what to record per iteration and which tensors are its outputs. */
export interface OurCase {
  /** Record one iteration (including any zeroing an accumulating op needs). */
  record(rec: Recorder): void;
  /** Output tensors, named as in OUTPUT_NAMES. */
  outputs: Record<string, Tensor>;
  /** Where an output is part of a tensor (e.g. the total loss inside a stats vector): pick it. */
  select?: Record<string, (data: Float32Array) => Float32Array>;
  /** Everything prepare allocated (released by dispose). */
  held: Tensor[];
}

export type OurAdapter = (ctx: GpuContext, c: BenchCase, inputs: Inputs) => OurCase;

export class Ours implements Impl {
  readonly name = 'ours' as const;
  #ctx: GpuContext | null = null;

  get ctx(): GpuContext {
    if (!this.#ctx) throw new Error('ours: init() first');
    return this.#ctx;
  }

  async init(): Promise<void> {
    this.#ctx ??= await acquireGpu({ label: 'webtinker bench' });
  }

  missing(c: BenchCase): string | null {
    return OUR_OPS[c.name] ? null : 'op not implemented yet';
  }

  prepare(c: BenchCase, inputs: Inputs): Promise<Prepared> {
    const ctx = this.ctx;
    const adapter = OUR_OPS[c.name];
    if (!adapter) return Promise.reject(new Error(`${c.name}: op not implemented yet`));
    const oc = adapter(ctx, c, inputs);
    const names = OUTPUT_NAMES[c.name];
    const label = `bench ${c.name}`;
    const iterate = (timing = false) => {
      const rec = new Recorder(ctx, { label, timing });
      oc.record(rec);
      return rec.submit(); // resolves once the GPU is done (see the file comment)
    };
    return Promise.resolve({
      async run(iterations = 1) {
        // Each iteration its own Recorder and submission, as a caller's loop would have them.
        await Promise.all(Array.from({ length: iterations }, () => iterate()));
      },
      async outputs(): Promise<Outputs> {
        const rec = new Recorder(ctx, { label });
        oc.record(rec);
        const reads = names.map((n) => rec.read(oc.outputs[n]));
        await rec.submit();
        const data = await Promise.all(reads);
        const pick = (n: string, a: Float32Array) => oc.select?.[n]?.(a) ?? a;
        return Object.fromEntries(names.map((n, i) => [n, Float32Array.from(pick(n, data[i] as Float32Array))]));
      },
      async peakBytes() {
        ctx.pool.resetPeaks();
        await iterate();
        return ctx.pool.stats().peakLiveBytes;
      },
      async gpuMs() {
        if (!ctx.hasTimestamps) return null;
        const r = await iterate(true);
        return r.gpuNs === undefined ? null : r.gpuNs / 1e6;
      },
      dispose() {
        for (const t of oc.held) if (!t.released) t.release();
      },
    });
  }
}
