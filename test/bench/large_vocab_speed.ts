/**
 * A standalone speed probe for issue 19 item 6 (not part of `npm run bench`, no assertions):
 * the fused policy loss at 64 rows × V = 50257 (each layout, both tunings) and the sampler at
 * 4 rows × V = 151936 with top-k 50, top-p 0.9, both, and neither. Prints the minimum wall time
 * and the minimum process CPU time (llvmpipe's threads run in this process, so CPU time is the
 * steadier figure on a shared machine) over repeated submissions.
 *
 *   XDG_RUNTIME_DIR=/tmp DENO_WEBGPU_BACKEND=vulkan npx deno run -A test/bench/large_vocab_speed.ts [loss|sample]
 */
import { acquireGpu } from '../../src/gpu/mod.ts';
import { Recorder } from '../../src/gpu/recorder.ts';
import { emptyTensor, tensorFrom } from '../../src/gpu/tensor.ts';
import { POLICY_STATS_SIZE, policyLoss, policyLossScratchSize } from '../../src/ops/policy_loss.ts';
import { sample } from '../../src/ops/sample.ts';
import { Rng } from '../../src/util/rng.ts';
import process from 'node:process';
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const which = Deno.args[0] ?? 'all';
const least = (a: number[]) => Math.min(...a);
for (const tuning of ['software', 'gpu'] as const) {
  const ctx = await acquireGpu({ label: 'bench', tuning });
  const rng = new Rng(3, 0);
  const o = { owner: 'bench' };
  if (which !== 'sample') for (const layout of [undefined, 'rows', 'groups'] as const) {
    const [n, v] = [64, 50257];
    const lg = tensorFrom(ctx, rng.normalArray(n * v, 3), [n, v], o);
    const tg = tensorFrom(ctx, Int32Array.from({ length: n }, () => rng.nextInt(v)), [n], o);
    const w = tensorFrom(ctx, new Float32Array(n).fill(1), [n], o);
    const out = { dlogits: emptyTensor(ctx, [n, v], 'f32', o), logprobs: emptyTensor(ctx, [n], 'f32', o), entropy: emptyTensor(ctx, [n], 'f32', o),
      loss: emptyTensor(ctx, [n], 'f32', o), stats: emptyTensor(ctx, [POLICY_STATS_SIZE], 'f32', o), scratch: emptyTensor(ctx, [policyLossScratchSize(n)], 'f32', o) };
    const ts: number[] = [], cs: number[] = [];
    for (let it = 0; it < 21; it++) {
      const rec = new Recorder(ctx);
      policyLoss(rec, out, { logits: lg, targets: tg, weights: w }, { kind: 'cross_entropy', aggregation: 'token_mean' }, layout ? { layout } : {});
      const r = rec.read(out.stats);
      const t0 = performance.now(), c0 = cpu();
      await rec.submit(); await r;
      if (it > 0) { ts.push(performance.now() - t0); cs.push(cpu() - c0); }
    }
    for (const t of [lg, tg, w, ...Object.values(out)]) t.release();
    console.log(`policy_loss ${tuning} ${layout ?? 'default'} 64x50257: ${least(ts).toFixed(1)} ms wall, ${least(cs).toFixed(1)} ms CPU (min of ${ts.length})`);
  }
  if (which !== 'loss') for (const opts of [{ topK: 50 }, { topP: 0.9 }, { topK: 50, topP: 0.9 }, {}]) {
    const [b, v] = [4, 151936];
    const lg = tensorFrom(ctx, rng.normalArray(b * v, 2.5), [b, v], o);
    const tok = emptyTensor(ctx, [b], 'i32', o), lp = emptyTensor(ctx, [b], 'f32', o), lpr = emptyTensor(ctx, [b], 'f32', o);
    const ts: number[] = [], cs: number[] = [];
    try {
      for (let it = 0; it < 6; it++) {
        const rec = new Recorder(ctx);
        sample(rec, tok, lp, lpr, lg, { temperature: 0.8, seed: 1, ...opts });
        const r = rec.read(tok);
        const t0 = performance.now(), c0 = cpu();
        await rec.submit(); await r;
        if (it > 0) { ts.push(performance.now() - t0); cs.push(cpu() - c0); }
      }
      console.log(`sample ${tuning} 4x151936 ${JSON.stringify(opts)}: ${least(ts).toFixed(1)} ms wall, ${least(cs).toFixed(1)} ms CPU`);
    } catch (e) { console.log(`sample ${tuning} 4x151936 ${JSON.stringify(opts)}: ${(e as Error).name}`); }
    for (const t of [lg, tok, lp, lpr]) t.release();
  }
}
