/**
 * `npm run train` — the main job's entry point, run by Deno (`deno task train`).
 *
 * Today: acquire the device, report the adapter, and run the `add` kernel against its CPU
 * reference as a self-check. The engine, runtime and agent issues grow this into the training
 * run; the flags and the JSON summary keep their shape as they do.
 */
import { writeFile } from 'node:fs/promises';
import { ConfigError, WebtinkerError } from '../errors.ts';
import { acquireGpu, type AdapterSummary } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../gpu/tensor.ts';
import { add } from '../ops/add.ts';
import { addRef } from '../ops/add.ref.ts';
import { Rng } from '../util/rng.ts';
import { parseTrainArgs, trainHelp } from './args.ts';

export interface TrainSummary {
  adapter: AdapterSummary;
  seed: number;
  selfCheck: { kernel: string; elements: number; mismatches: number; gpuNs?: number };
  wallSeconds: number;
}

async function main(argv: string[]): Promise<number> {
  let opts;
  try {
    opts = parseTrainArgs(argv);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  if (opts.help) {
    console.log(trainHelp());
    return 0;
  }
  const log = opts.quiet ? () => {} : (s: string) => console.log(s);
  const t0 = performance.now();
  const ctx = await acquireGpu({ label: 'train' });
  const a = ctx.adapter;
  log(`adapter: ${a.description || a.vendor || 'unknown'}${a.isFallbackAdapter ? ' (software)' : ''} on ${a.host}`);
  log(`  features: ${a.features.join(', ') || '(none)'}`);
  log(`  maxStorageBufferBindingSize: ${a.limits.maxStorageBufferBindingSize} B, maxBufferSize: ${a.limits.maxBufferSize} B`);

  const n = 1 << 20;
  const rng = new Rng(opts.seed);
  const x = rng.normalArray(n);
  const y = rng.normalArray(n);
  const tx = tensorFrom(ctx, x, [n], { owner: 'self-check', label: 'x' });
  const ty = tensorFrom(ctx, y, [n], { owner: 'self-check', label: 'y' });
  const out = emptyTensor(ctx, [n], 'f32', { owner: 'self-check', label: 'x+y' });
  const rec = new Recorder(ctx, { label: 'self-check', timing: true });
  add(rec, out, tx, ty);
  const read = rec.read(out);
  const { gpuNs } = await rec.submit();
  const got = (await read) as Float32Array;
  const want = new Float32Array(n);
  addRef(want, x, y);
  let mismatches = 0;
  for (let i = 0; i < n; i++) if (Object.is(got[i], want[i]) === false) mismatches++;
  ctx.pool.releaseOwner('self-check');
  log(`self-check: add on ${n} elements, ${mismatches} mismatches against the CPU reference${gpuNs !== undefined ? `, ${(gpuNs / 1e6).toFixed(2)} ms on the GPU` : ''}`);

  const summary: TrainSummary = {
    adapter: a,
    seed: opts.seed,
    selfCheck: { kernel: 'add', elements: n, mismatches, ...(gpuNs !== undefined ? { gpuNs } : {}) },
    wallSeconds: (performance.now() - t0) / 1000,
  };
  if (opts.json) await writeFile(opts.json, JSON.stringify(summary, null, 2) + '\n');
  ctx.destroy();
  return mismatches === 0 ? 0 : 1;
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  const argv = (globalThis as unknown as { Deno: { args: string[]; exit(c: number): never } }).Deno;
  main(argv.args).then((code) => argv.exit(code), (e) => {
    console.error(e instanceof WebtinkerError ? `error: ${e.message}` : e);
    argv.exit(1);
  });
}
