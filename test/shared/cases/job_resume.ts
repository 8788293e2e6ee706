/**
 * Kill and resume, in both GPU suites: a tiny job — tiny-gpt2, a 2-step SFT warm start, 3 LoRA
 * GRPO steps of 2 × 3 episodes on the graded-reward test environment (so every RL step trains) —
 * run straight, and run in three segments through a checkpoint store that each suite opens anew
 * for every segment, as a new process or page would (files under Deno, IndexedDB in Chromium):
 * killed in the middle of the warm start, resumed up to RL step 2 (`--steps 2`), resumed again up
 * to step 3. The summaries must be identical but for the time measurements, the trained
 * tensors bitwise, and every step's metrics equal to the straight run's.
 */
import { assert } from 'chai';
import type { ModelConfig } from '../../../src/model/config.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { JobCheckpointer, type StoredJobState } from '../../../src/runtime/job_checkpoint.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { type JobOptions, type JobResult, runTraining, type StepMetrics, summaryOf } from '../../../src/runtime/rl_job.ts';
import { CheckpointStore } from '../../../src/runtime/store/checkpoint_store.ts';
import type { KvStore } from '../../../src/runtime/store/kv.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import type { GpuCase } from '../register.ts';
import { vowelsJobEnv } from '../vowels_env.ts';

const tok = new ByteTokenizer();
const model: ModelConfig = preset('tiny-gpt2');

function options(steps: number, onStep?: (m: StepMetrics) => void): JobOptions {
  return {
    env: vowelsJobEnv(),
    algo: 'grpo', model, lora: { rank: 2, alpha: 4, targets: ['q', 'v'] }, steps, seed: 5, groups: 2, groupSize: 3, lr: 3e-2,
    warmStart: { steps: 2, demos: 8, batchSize: 4, lr: 1e-2 }, evalEpisodes: 2, temperature: 1, maxNewTokens: 6, rows: 4, maxGradNorm: 1,
    ...(onStep ? { onStep } : {}),
  };
}

class Killed extends Error {}

/** The summary without what measures time (wall clock, tokens per second). */
function deterministic(r: JobResult): Record<string, unknown> {
  const { wallSeconds: _w, trainTokensPerSecond: _t, sampleTokensPerSecond: _s, ...rest } = summaryOf(r);
  return rest;
}

/** A step's metrics without its timings. */
function stepKey(m: StepMetrics): string {
  const { trainSeconds: _t, sampleSeconds: _s, tokensPerSecond: _r, deviceShare: _d, ...rest } = m;
  return JSON.stringify(rest, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
}

async function run(ctx: GpuContext, o: JobOptions): Promise<JobResult> {
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
  try {
    return await runTraining(service, o);
  } finally {
    await service.close();
  }
}

/** `place()` makes a fresh storage place and returns how to open (connect to) it. */
export const jobResumeCases = (place: () => Promise<() => KvStore>): GpuCase[] => [
  {
    name: 'job runner: killed mid warm start, resumed to step 2, resumed to step 3 — the same summary, tensors and step metrics as a straight run',
    async fn(ctx) {
      const straightSteps: StepMetrics[] = [];
      const straight = await run(ctx, options(3, (m) => straightSteps.push(m)));
      // Not vacuous: every RL step trained on a spread of rewards.
      for (const m of straightSteps.filter((m) => m.phase === 'rl')) assert.deepInclude(m, { skipped: false }, JSON.stringify(m));
      assert.isAbove(new Set(straight.rewardCurve).size, 1);

      const open = await place();
      const seen: StepMetrics[] = [];
      // Segment 1: killed during SFT step 1 (its checkpoint after step 0 is on disk).
      const c1 = new JobCheckpointer(new CheckpointStore<StoredJobState>(open(), { keepLast: 2 }));
      let err: unknown;
      try {
        await run(ctx, {
          ...options(3, (m) => {
            seen.push(m);
            if (m.phase === 'sft' && m.step === 1) throw new Killed('killed');
          }),
          checkpoint: c1.checkpointing(1),
        });
      } catch (e) {
        err = e;
      }
      assert.instanceOf(err, Killed);

      // Segment 2: a new checkpointer on the same files (as a new process would make), to RL step 2.
      const c2 = new JobCheckpointer(new CheckpointStore<StoredJobState>(open(), { keepLast: 2 }));
      const at1 = await c2.latest();
      assert.deepInclude(at1, { phase: 'sft', step: 1, base: null });
      const mid = await run(ctx, { ...options(2, (m) => seen.push(m)), checkpoint: c2.checkpointing(1, at1) });
      assert.deepEqual(mid.rewardCurve, straight.rewardCurve.slice(0, 2));

      // Segment 3: on to step 3.
      const c3 = new JobCheckpointer(new CheckpointStore<StoredJobState>(open(), { keepLast: 2 }));
      const at2 = await c3.latest();
      assert.deepInclude(at2, { phase: 'rl', step: 2 });
      assert.isNotNull(at2!.base);
      const resumed = await run(ctx, { ...options(3, (m) => seen.push(m)), checkpoint: c3.checkpointing(1, at2) });

      assert.deepEqual(deterministic(resumed), deterministic(straight));
      assert.strictEqual(resumed.peakGpuBytes, straight.peakGpuBytes);
      assert.deepEqual(Object.keys(resumed.trained.tensors).sort(), Object.keys(straight.trained.tensors).sort());
      for (const [k, v] of Object.entries(straight.trained.tensors)) {
        assert.isTrue(v.every((x, i) => Object.is(x, resumed.trained.tensors[k][i])), `tensor ${k} differs`);
      }
      // Every step ran once more only when it was killed before its checkpoint; each matches the straight run.
      assert.deepEqual(seen.map((m) => `${m.phase}${m.step}`), ['sft0', 'sft1', 'sft1', 'rl0', 'rl1', 'rl2']);
      const want = new Map(straightSteps.map((m) => [`${m.phase}${m.step}`, stepKey(m)]));
      for (const m of seen) assert.strictEqual(stepKey(m), want.get(`${m.phase}${m.step}`), `${m.phase} step ${m.step}`);
      // Checkpoints were pruned to the last two, and the base is stored once.
      assert.deepEqual((await c3.store.versions('run')).map((v) => v.step), [2, 3]);
      assert.lengthOf(await c3.store.versions('run.base'), 1);
    },
  },
];

