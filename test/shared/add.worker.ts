// A dedicated Worker that acquires its own device and runs the residual add (s = 1) — used by both GPU suites to
// prove device acquisition and kernels work inside Workers (browser and Deno).
import * as Comlink from 'comlink';
import { acquireGpu, type GpuContext } from '../../src/gpu/device.ts';
import { Recorder } from '../../src/gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../../src/gpu/tensor.ts';
import { residualAdd } from '../../src/ops/residual.ts';

let ctx: GpuContext | null = null;

const api = {
  async run(a: Float32Array, b: Float32Array): Promise<{ host: string; out: Float32Array }> {
    ctx ??= await acquireGpu({ label: 'worker' });
    const ta = tensorFrom(ctx, a);
    const tb = tensorFrom(ctx, b);
    const out = emptyTensor(ctx, [a.length]);
    const rec = new Recorder(ctx);
    residualAdd(rec, out, ta, tb);
    const read = rec.read(out);
    await rec.submit();
    const result = (await read) as Float32Array;
    for (const t of [ta, tb, out]) t.release();
    return Comlink.transfer({ host: ctx.adapter.host, out: result }, [result.buffer as ArrayBuffer]);
  },
};

export type AddWorkerApi = typeof api;
Comlink.expose(api);
