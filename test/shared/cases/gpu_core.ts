/**
 * GPU core cases, run by both GPU suites (Chromium: test/browser, Deno: test/deno) against the
 * adapter each one has. Plain async functions with chai assertions, so the two runners share them.
 */
import { assert } from 'chai';
import {
  ConfigError,
  GpuValidationError,
  KernelCompileError,
  ReleasedError,
  ShapeError,
  WebtinkerError,
} from '../../../src/errors.ts';
import { acquireGpu, type GpuContext } from '../../../src/gpu/device.ts';
import { KernelProfiler } from '../../../src/gpu/profiler.ts';
import { readTensor, Recorder, texelTableWidth } from '../../../src/gpu/recorder.ts';
import { emptyTensor, tensorFrom, zerosTensor } from '../../../src/gpu/tensor.ts';
import { attentionTuning } from '../../../src/ops/attention.ts';
import { HARDWARE_MATMUL_CONFIG, matmulConfigFor } from '../../../src/ops/matmul.ts';
import { GPU_TUNINGS } from '../../../src/gpu/quirks/mod.ts';
import { residualAdd } from '../../../src/ops/residual.ts';
import { residualAddRef } from '../../../src/ops/residual.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { firstBitDiff, gpuTunedGpu } from '../gpu.ts';
import type { GpuCase } from '../register.ts';


/** Sizes that are not multiples of any workgroup or tile size. */
export const ODD_SIZES = [1, 7, 33, 100, 257, 4099, 100_003];

/** The fixed input both suites (and a Worker) feed to the residual add (s = 1), so results can be compared. */
export function addFixture(n = 1000): { a: Float32Array; b: Float32Array } {
  const rng = new Rng(1234, 0);
  return { a: rng.normalArray(n), b: rng.normalArray(n) };
}

async function runAdd(ctx: GpuContext, a: Float32Array, b: Float32Array): Promise<Float32Array> {
  const ta = tensorFrom(ctx, a, [a.length], { owner: 'case', label: 'a' });
  const tb = tensorFrom(ctx, b, [b.length], { owner: 'case', label: 'b' });
  const out = emptyTensor(ctx, [a.length], 'f32', { owner: 'case', label: 'out' });
  const rec = new Recorder(ctx, { label: 'add case' });
  residualAdd(rec, out, ta, tb);
  const read = rec.read(out);
  await rec.submit();
  const result = (await read) as Float32Array;
  for (const t of [ta, tb, out]) t.release();
  return result;
}

export const gpuCoreCases: GpuCase[] = [
  {
    name: 'adapter: acquired with maximum limits and its features listed',
    async fn(ctx) {
      assert.isAbove(ctx.adapter.limits.maxStorageBufferBindingSize, 0);
      assert.strictEqual(ctx.device.limits.maxStorageBufferBindingSize, ctx.adapter.limits.maxStorageBufferBindingSize);
      assert.strictEqual(ctx.device.limits.maxComputeWorkgroupStorageSize, ctx.adapter.limits.maxComputeWorkgroupStorageSize);
      assert.strictEqual(ctx.hasF16, ctx.adapter.features.includes('shader-f16'));
      assert.isString(ctx.adapter.description + ctx.adapter.vendor);
      // The suites here run on software adapters; on a GPU host the kind is 'hardware'.
      assert.include(['llvmpipe', 'swiftshader', 'software', 'hardware'], ctx.kind);
      assert.strictEqual(ctx.isSoftware, ctx.kind !== 'hardware');
      assert.strictEqual(ctx.tuning, ctx.isSoftware ? 'software' : 'gpu');
    },
  },
  {
    name: "acquireGpu({ tuning: 'gpu' }): the real-GPU kernel configurations on any adapter; a bad tuning is a ConfigError",
    async fn(ctx) {
      const g = await gpuTunedGpu();
      assert.strictEqual(g.tuning, 'gpu');
      assert.strictEqual(g.tunings, GPU_TUNINGS);
      assert.strictEqual(g.kind, ctx.kind); // the adapter is the same; only the configurations change
      assert.strictEqual(g.quirks, ctx.quirks); // and its workarounds (llvmpipe's loop limit, texture reads) stay
      assert.deepStrictEqual(matmulConfigFor(g), { ...HARDWARE_MATMUL_CONFIG });
      assert.isTrue(attentionTuning(g, 64).tiled);
      try {
        await acquireGpu({ tuning: 'fast' as never });
        assert.fail('expected a ConfigError');
      } catch (e) {
        assert.instanceOf(e, ConfigError);
        assert.include((e as Error).message, 'tuning');
      }
    },
  },
  {
    name: 'residual add (s = 1): matches the CPU reference bitwise on odd sizes',
    async fn(ctx) {
      const rng = new Rng(7, 1);
      for (const n of ODD_SIZES) {
        const a = rng.normalArray(n);
        const b = rng.normalArray(n);
        const want = new Float32Array(n);
        residualAddRef(want, a, b);
        const got = await runAdd(ctx, a, b);
        assert.strictEqual(firstBitDiff(got, want), -1, `n=${n}`);
      }
    },
  },
  {
    name: 'residual add (s = 1): two runs give bitwise-identical output',
    async fn(ctx) {
      const { a, b } = addFixture(5000);
      const r1 = await runAdd(ctx, a, b);
      const r2 = await runAdd(ctx, a, b);
      assert.strictEqual(firstBitDiff(r1, r2), -1);
    },
  },
  {
    name: 'residual add: mismatched shapes, wrong dtype and aliasing are refused before dispatch',
    async fn(ctx) {
      const a = zerosTensor(ctx, [3, 4], 'f32', { owner: 'case', label: 'a' });
      const b = zerosTensor(ctx, [4, 3], 'f32', { owner: 'case', label: 'b' });
      const i = zerosTensor(ctx, [3, 4], 'i32', { owner: 'case', label: 'ids' });
      const rec = new Recorder(ctx);
      assert.throws(() => residualAdd(rec, a, a, b), ShapeError, /residual\.add: shapes differ: out \[3, 4\], a \[3, 4\], b \[4, 3\]/);
      assert.throws(() => residualAdd(rec, a, i, a), ShapeError, /residual\.add: a \(Tensor\(ids: i32\[3, 4\]\)\) must be f32/);
      const c = zerosTensor(ctx, [3, 4], 'f32', { owner: 'case', label: 'c' });
      assert.throws(() => residualAdd(rec, a, a, c), ShapeError, /must not alias/);
      assert.strictEqual(rec.pending, 0);
      for (const t of [a, b, i, c]) t.release();
      assert.throws(() => residualAdd(rec, a, c, c), ReleasedError);
    },
  },
  {
    name: 'pipelines: a broken WGSL source fails with an error naming its kernel',
    async fn(ctx) {
      ctx.pipelines.define('broken_kernel', '@compute @workgroup_size(1) fn main() { let x: f32 = undefined_thing; }');
      let err: unknown;
      try {
        await ctx.pipelines.get('broken_kernel');
      } catch (e) {
        err = e;
      }
      assert.instanceOf(err, KernelCompileError);
      assert.strictEqual((err as KernelCompileError).kernel, 'broken_kernel');
      assert.match((err as Error).message, /kernel "broken_kernel" failed to compile/);
      assert.match((err as Error).message, /undefined_thing/);
      // The recorder reports the same error from submit(), and rejects its reads with it.
      const t = zerosTensor(ctx, [4], 'f32', { owner: 'case', label: 'x' });
      const rec = new Recorder(ctx);
      rec.dispatch({ kernel: 'broken_kernel', bindings: {}, workgroups: [1] });
      const read = rec.read(t);
      read.catch(() => {});
      let subErr: unknown;
      try {
        await rec.submit();
      } catch (e) {
        subErr = e;
      }
      assert.instanceOf(subErr, KernelCompileError);
      let readErr: unknown;
      try {
        await read;
      } catch (e) {
        readErr = e;
      }
      assert.instanceOf(readErr, KernelCompileError);
      t.release();
    },
  },
  {
    name: 'pipelines: one pipeline per kernel and constants, cached',
    async fn(ctx) {
      const p1 = await ctx.pipelines.get('residual', { WG: 64 }, 'add');
      const p2 = await ctx.pipelines.get('residual', { WG: 64 }, 'add');
      const p3 = await ctx.pipelines.get('residual', { WG: 128 }, 'add');
      assert.strictEqual(p1, p2);
      assert.notStrictEqual(p1, p3);
      assert.match(p1.label, /^residual:add\{WG=64\}$/);
    },
  },
  {
    name: 'recorder: a validation error names the kernels of the submission and leaves no pool buffer behind, timed or profiled',
    async fn(ctx) {
      // One buffer bound as read-only and as writable storage in one dispatch: invalid usage.
      const t = zerosTensor(ctx, [16], 'f32', { owner: 'case', label: 'same' });
      for (const how of ['plain', 'timed', 'profiled'] as const) {
        const label = `bad usage ${how}`;
        const rec = new Recorder(ctx, { label, timing: how === 'timed' });
        rec.dispatch({ kernel: 'residual', entryPoint: 'add', constants: { WG: 64 }, bindings: { a: t, b: t, out: t }, params: { n: 16, row_threads: 64, s: 1 }, workgroups: [1] });
        const read = rec.read(t);
        read.catch(() => {});
        if (how === 'profiled') ctx.profiler = new KernelProfiler();
        let err: unknown;
        try {
          await rec.submit();
        } catch (e) {
          err = e;
        } finally {
          ctx.profiler = null;
        }
        assert.instanceOf(err, GpuValidationError, how);
        assert.deepEqual([...(err as GpuValidationError).kernels], ['residual']);
        assert.match((err as Error).message, /GPU validation error in submission \[residual\]/);
        let readErr: unknown;
        await read.catch((e) => (readErr = e));
        assert.strictEqual(readErr, err, `${how}: the read is rejected with the submission's error`);
        for (const pool of [ctx.uniformPool, ctx.queryPool, ctx.readbackPool]) assert.strictEqual(pool.owner(`recorder:${label}`).currentBytes, 0, how);
      }
      t.release();
    },
  },
  {
    name: 'recorder: many dispatches in one submission, reads see the value at their point',
    async fn(ctx) {
      const n = 33;
      const one = tensorFrom(ctx, new Float32Array(n).fill(1), [n], { owner: 'case', label: 'one' });
      const x = zerosTensor(ctx, [n], 'f32', { owner: 'case', label: 'x' });
      const y = emptyTensor(ctx, [n], 'f32', { owner: 'case', label: 'y' });
      const rec = new Recorder(ctx, { label: 'chain', timing: true });
      const reads: Promise<unknown>[] = [];
      for (let k = 0; k < 5; k++) {
        residualAdd(rec, y, x, one); // y = x + 1
        rec.copy(y, x); // x = y
        reads.push(rec.read(x));
      }
      const res = await rec.submit();
      assert.strictEqual(res.dispatches, 5);
      const got = (await Promise.all(reads)) as Float32Array[];
      got.forEach((v, k) => assert.deepEqual([...v], new Array(n).fill(k + 1), `read ${k}`));
      if (ctx.hasTimestamps && res.gpuNs !== undefined) assert.isAtLeast(res.gpuNs, 0);
      for (const t of [one, x, y]) t.release();
      assert.strictEqual(ctx.pool.owner('recorder:chain').currentBytes, 0);
      assert.strictEqual(ctx.uniformPool.owner('recorder:chain').currentBytes, 0);
      assert.strictEqual(ctx.readbackPool.owner('recorder:chain').currentBytes, 0);
    },
  },
  {
    name: 'profiler: times every dispatch per kernel without changing the results',
    async fn(ctx) {
      const n = 257;
      const x = tensorFrom(ctx, new Float32Array(n).fill(2), [n], { owner: 'case', label: 'x' });
      const y = emptyTensor(ctx, [n], 'f32', { owner: 'case', label: 'y' });
      ctx.profiler = new KernelProfiler({ detailed: true });
      try {
        const rec = new Recorder(ctx, { label: 'profiled' });
        residualAdd(rec, y, x, x);
        rec.copy(y, x);
        residualAdd(rec, y, x, x);
        const read = rec.read(y);
        const res = await rec.submit();
        assert.strictEqual(res.dispatches, 2);
        assert.deepEqual([...((await read) as Float32Array)], new Array(n).fill(8));
        const entries = ctx.profiler.entries();
        if (ctx.hasTimestamps) {
          assert.lengthOf(entries, 1);
          assert.match(entries[0].name, /^residual:add \{.*\} wg=\d+x1x1$/);
          assert.strictEqual(entries[0].calls, 2);
          assert.isAtLeast(entries[0].ns, 0);
          assert.match(ctx.profiler.table(), /total [\d.]+ ms$/);
        } else {
          assert.lengthOf(entries, 0);
        }
      } finally {
        ctx.profiler = null;
        for (const t of [x, y]) t.release();
      }
      assert.strictEqual(ctx.queryPool.owner('recorder:profiled').currentBytes, 0);
      assert.strictEqual(ctx.readbackPool.owner('recorder:profiled').currentBytes, 0);
    },
  },
  {
    name: 'tensors: f16, i32 and u32 round-trip through the GPU',
    async fn(ctx) {
      const f16 = Uint16Array.of(0x3c00, 0xc000, 0x7bff); // 1, -2, 65504 — odd length pads to 4 bytes
      const i32 = Int32Array.of(-5, 0, 2147483647);
      const u32 = Uint32Array.of(0, 1, 4294967295, 7);
      for (const data of [f16, i32, u32]) {
        const t = tensorFrom(ctx, data, [data.length], { owner: 'case' });
        const back = await readTensor(t);
        assert.strictEqual(back.constructor, data.constructor);
        assert.deepEqual([...back], [...data]);
        t.release();
      }
    },
  },
  {
    name: 'pool: current and peak bytes per owner on the device',
    async fn(ctx) {
      const owner = `pool-case-${Math.random()}`;
      const a = emptyTensor(ctx, [1000], 'f32', { owner }); // 4000 B -> 4096 class
      const b = emptyTensor(ctx, [100], 'f32', { owner }); // 400 B -> 512 class
      assert.deepEqual(ctx.pool.owner(owner), { currentBytes: 4608, peakBytes: 4608, buffers: 2 });
      a.release();
      assert.deepEqual(ctx.pool.owner(owner), { currentBytes: 512, peakBytes: 4608, buffers: 1 });
      const c = emptyTensor(ctx, [1000], 'f32', { owner }); // reuses a's buffer
      assert.strictEqual(c.buffer, a.buffer);
      b.release();
      c.release();
      assert.deepEqual(ctx.pool.owner(owner), { currentBytes: 0, peakBytes: 4608, buffers: 0 });
      assert.throws(() => c.release(), ReleasedError);
    },
  },
  {
    name: 'device loss: destroy() is delivered as an event with its reason',
    async fn(ctx) {
      const { acquireGpu } = await import('../../../src/gpu/device.ts');
      const other = await acquireGpu({ label: 'doomed' });
      const seen: string[] = [];
      other.onLost((e) => seen.push(e.reason));
      other.destroy();
      const e = await other.lost;
      assert.strictEqual(e.reason, 'destroyed');
      assert.deepEqual(seen, ['destroyed']);
      assert.isTrue(other.isLost);
      assert.isFalse(ctx.isLost);
    },
  },
];

gpuCoreCases.push({
  name: 'recorder: scratch tensors live for one recording and return to the pool at submit',
  async fn(ctx) {
    const n = 100;
    const x = tensorFrom(ctx, new Float32Array(n).fill(2), [n], { owner: 'case', label: 'x' });
    const out = emptyTensor(ctx, [n], 'f32', { owner: 'case', label: 'out' });
    const rec = new Recorder(ctx, { label: 'temps' });
    const t = rec.temp([n], 'f32', 'twice');
    residualAdd(rec, t, x, x); // t = 4
    residualAdd(rec, out, t, x); // out = 6
    assert.strictEqual(ctx.pool.owner('recorder:temps').currentBytes, 512);
    const read = rec.read(out);
    await rec.submit();
    assert.strictEqual(ctx.pool.owner('recorder:temps').currentBytes, 0);
    assert.isTrue(t.released);
    assert.deepEqual([...((await read) as Float32Array)], new Array(n).fill(6));
    x.release();
    out.release();
  },
});

gpuCoreCases.push({
  name: 'recorder: a scratch texture given back is the copy target of a later tempTexture that fits it (charged once, freed at submit, kept for the next recording)',
  async fn(ctx) {
    const row = 4 * texelTableWidth(ctx); // f32 elements per texel row
    const x = emptyTensor(ctx, [2 * row], 'f32', { owner: 'case', label: 'x' });
    const y = emptyTensor(ctx, [row], 'f32', { owner: 'case', label: 'y' });
    const z = emptyTensor(ctx, [3 * row], 'f32', { owner: 'case', label: 'z' });
    const owner = 'recorder:textures';
    const rec = new Recorder(ctx, { label: 'textures' });
    const tx = rec.tempTexture(x, 'x');
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 2 * row * 4);
    rec.releaseTexture(tx);
    const ty = rec.tempTexture(y, 'y'); // one row: fits x's two
    assert.strictEqual(ty.texture, tx.texture);
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 2 * row * 4);
    const tz = rec.tempTexture(z, 'z'); // three rows: a texture of its own
    assert.notStrictEqual(tz.texture, tx.texture);
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 5 * row * 4);
    rec.releaseTexture(ty);
    assert.throws(() => rec.releaseTexture(ty), ReleasedError);
    const other = new Recorder(ctx, { label: 'other' });
    assert.throws(() => other.releaseTexture(tz), WebtinkerError, /not a scratch texture of recorder "other"/);
    await other.submit();
    await rec.submit();
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0);
    // Kept for the next recording: its one-row copy gets the smallest kept texture that fits (x's).
    const kept = ctx.textureCache.size;
    assert.isAtLeast(kept, 2);
    const next = new Recorder(ctx, { label: 'textures' });
    assert.strictEqual(next.tempTexture(y, 'y').texture, tx.texture);
    assert.strictEqual(ctx.textureCache.size, kept - 1);
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 2 * row * 4);
    await next.submit();
    assert.strictEqual(ctx.textureCache.size, kept);
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, 0);
    // A kept texture of over CACHE_FIT_SLACK times the rows asked for is left in the cache: the
    // taker would be charged its whole size (a one-row copy holding z's three rows).
    ctx.textureCache.trim();
    const big = new Recorder(ctx, { label: 'textures' });
    const bz = big.tempTexture(z, 'z');
    await big.submit();
    assert.strictEqual(ctx.textureCache.size, 1);
    const small = new Recorder(ctx, { label: 'textures' });
    assert.notStrictEqual(small.tempTexture(y, 'y').texture, bz.texture);
    assert.strictEqual(ctx.textureCache.size, 1, "z's texture stays kept");
    assert.strictEqual(ctx.pool.owner(owner).currentBytes, row * 4);
    await small.submit();
    for (const t of [x, y, z]) t.release();
  },
});
