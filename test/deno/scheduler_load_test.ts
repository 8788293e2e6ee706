// Deno suite: the scheduler under load (issue 22 item 7), scaled down for CI — two LoRA training
// jobs and 30 interactive requests from 5 concurrent callers over ~6 s through the GPU worker
// (test/bench/scheduler_load.ts; the bench's scheduler part runs the full size: 200 requests from
// 20 callers for 60 s). Latency percentiles are printed, never asserted.
import { assert } from 'chai';
import { preset } from '../../src/model/presets.ts';
import { WorkerService } from '../../src/runtime/worker_service.ts';
import { percentile } from '../bench/scheduler.ts';
import { ownerGrowth, runSchedulerLoad } from '../bench/scheduler_load.ts';

Deno.test({
  name: 'scheduler load: 2 training jobs + 30 requests from 5 callers — none lost or doubled, pool back to its warm level, admission refuses past the budget',
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // 16 MiB: the base, two LoRA jobs and the sampler fit (≈ 3.4 MB estimated); a full job at
    // 64 × 64 tokens (≈ 35 MB) and gpt2-10m's base (≈ 40 MB) never can.
    const service = await WorkerService.start({ tokenizer: { kind: 'byte' }, memoryBudgetBytes: 16 * 2 ** 20 });
    try {
      const r = await runSchedulerLoad(service, {
        model: preset('tiny-gpt2'), oversizeModel: preset('gpt2-10m'),
        lora: { rank: 4, alpha: 8, targets: ['q', 'v', 'up'] }, rows: 4, seqLen: 32,
        callers: 5, requests: 30, durationMs: 6000, log: console.log,
      });
      // Every request answered exactly once, with its own answer.
      assert.strictEqual(new Set(r.requestIds).size, 30);
      assert.deepEqual(Object.entries(r.answers).filter(([, n]) => n !== 1), []);
      assert.deepEqual(r.mismatched, []);
      assert.strictEqual(r.latenciesMs.length, 30);
      const p = (xs: number[], q: number) => percentile(xs, q).toFixed(1);
      console.log(`first-token ms under load p50 ${p(r.latenciesMs, 0.5)} p95 ${p(r.latenciesMs, 0.95)} p99 ${p(r.latenciesMs, 0.99)}; alone p50 ${p(r.aloneMs, 0.5)} p95 ${p(r.aloneMs, 0.95)}`);
      // Both jobs trained during the window.
      assert.isAbove(r.trainingSteps.a, 0);
      assert.isAbove(r.trainingSteps.b, 0);
      // The pool: no owner holds more after the run than after warm-up (the KV caches and scratch
      // of concurrent requests are given back; cached free buffers are not live bytes).
      assert.isAbove(r.samples.length, 0);
      const peak = Math.max(...r.samples.map((s) => s.liveBytes));
      console.log(`pool live: warm ${r.warm.liveBytes} B, peak sampled ${peak} B, after ${r.after.liveBytes} B (cached ${r.after.cachedBytes} B)`);
      console.log(`owners grown at the sampled peak: ${JSON.stringify(ownerGrowth(r.warm, r.peak))}`);
      assert.deepEqual(ownerGrowth(r.warm, r.after), {});
      assert.isAtMost(r.after.liveBytes, r.warm.liveBytes);
      // Admission: refused outright, before the worker allocated anything; no device loss.
      assert.deepEqual(r.admission.map((a) => [a.what, a.error, a.ownersAfter]), [
        ['full training job past the budget', 'AdmissionError', []],
        ['base model past the budget', 'AdmissionError', []],
      ]);
      for (const a of r.admission) assert.match(a.message, /budget/);
      assert.strictEqual(r.deviceLosses, 0);
    } finally {
      await service.close();
    }
  },
});
