/**
 * Fault recovery of whole jobs (recovery.ts): the GPU is lost in the middle of training and every
 * job comes back from its last checkpoint on a fresh device, losing no step before that
 * checkpoint — the recovered run's summary, trained tensors and step metrics are the uninterrupted
 * run's, bitwise (times aside), and only the steps after the last checkpoint run twice.
 *
 *   - device lost under two concurrent jobs in the GPU worker (`device.destroy()` in the worker,
 *     through the WorkerService drill) — both suites;
 *   - the GPU worker crashes under a job: restarted, the job resumed — Deno;
 *   - the in-process engine (the CLI's LocalService) loses its device: a new device, the job resumed — Deno.
 * Jobs: tiny-gpt2, a 1-step warm start, 3 LoRA GRPO steps of 1 × 3 episodes on the graded-reward
 * test environment, checkpoints every step into a memory store.
 */
import { assert } from 'chai';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { JobCheckpointer, type StoredJobState } from '../../../src/runtime/job_checkpoint.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { LocalServiceSource, type RecoveryEvent, runTrainingRecovering, type ServiceSource, workerServiceSource } from '../../../src/runtime/recovery.ts';
import { type JobOptions, type JobResult, runTraining, type StepMetrics, summaryOf } from '../../../src/runtime/rl_job.ts';
import { CheckpointStore } from '../../../src/runtime/store/checkpoint_store.ts';
import { MemoryKv } from '../../../src/runtime/store/kv.ts';
import { WorkerService, type WorkerServiceEvent } from '../../../src/runtime/worker_service.ts';
import { acquireGpu } from '../../../src/gpu/device.ts';
import type { PlainCase } from './adapter_store.ts';
import { vowelsJobEnv } from '../vowels_env.ts';

const tok = new ByteTokenizer();

function options(id: string, seed: number, onStep?: (m: StepMetrics) => void): JobOptions {
  return {
    id, env: vowelsJobEnv(), algo: 'grpo', model: preset('tiny-gpt2'), lora: { rank: 2, alpha: 4, targets: ['q', 'v'] }, steps: 3, seed,
    groups: 1, groupSize: 3, lr: 3e-2, warmStart: { steps: 1, demos: 4, batchSize: 4, lr: 1e-2 }, evalEpisodes: 1, temperature: 1,
    maxNewTokens: 6, rows: 4, maxGradNorm: 1, ...(onStep ? { onStep } : {}),
  };
}

/** The summary without time measurements. */
function deterministic(r: JobResult): Record<string, unknown> {
  const { wallSeconds: _w, trainTokensPerSecond: _t, sampleTokensPerSecond: _s, peakGpuBytes: _p, ...rest } = summaryOf(r);
  return rest;
}

function stepKey(m: StepMetrics): string {
  const { trainSeconds: _t, sampleSeconds: _s, tokensPerSecond: _r, deviceShare: _d, ...rest } = m;
  return JSON.stringify(rest);
}

function assertSameRun(got: JobResult, want: JobResult, what: string): void {
  assert.deepEqual(deterministic(got), deterministic(want), what);
  for (const [k, v] of Object.entries(want.trained.tensors)) {
    assert.isTrue(v.every((x, i) => Object.is(x, got.trained.tensors[k][i])), `${what}: tensor ${k} differs`);
  }
}

interface Traced {
  steps: StepMetrics[];
  recoveries: RecoveryEvent[];
  result: JobResult;
}

/** A job under recovery with a memory checkpoint store; `hit` runs (once) after the given RL step's metrics. */
async function recovering(source: ServiceSource, o: JobOptions, hitAfterRlStep: number, hit: () => void): Promise<Traced> {
  const ck = new JobCheckpointer(new CheckpointStore<StoredJobState>(new MemoryKv(), { keepLast: 2 }), o.id);
  const steps: StepMetrics[] = [];
  const recoveries: RecoveryEvent[] = [];
  let fired = false;
  const result = await runTrainingRecovering(source, {
    ...o,
    onStep: (m) => {
      steps.push(m);
      if (!fired && m.phase === 'rl' && m.step === hitAfterRlStep) {
        fired = true;
        hit();
      }
    },
    checkpoint: ck.checkpointing(1),
  }, { latest: () => ck.latest(), onRecover: (e) => recoveries.push(e) });
  return { steps, recoveries, result };
}

/** The trace of a job hit after RL step 1: it resumed from the checkpoint after step 1, so step 1 ran twice and nothing else did. */
function assertResumedAfterStep1(t: Traced, straight: { result: JobResult; steps: StepMetrics[] }, what: string): void {
  assert.deepEqual(t.recoveries.map((r) => [r.recoveries, r.from?.phase, r.from?.step]), [[1, 'rl', 1]], what);
  assert.deepEqual(t.steps.map((m) => `${m.phase}${m.step}`), ['sft0', 'rl0', 'rl1', 'rl1', 'rl2'], what);
  const want = new Map(straight.steps.map((m) => [`${m.phase}${m.step}`, stepKey(m)]));
  for (const m of t.steps) assert.strictEqual(stepKey(m), want.get(`${m.phase}${m.step}`), `${what}: ${m.phase} step ${m.step}`);
  assertSameRun(t.result, straight.result, what);
}

async function straightRun(service: LocalService | WorkerService, o: JobOptions): Promise<{ result: JobResult; steps: StepMetrics[] }> {
  const steps: StepMetrics[] = [];
  const result = await runTraining(service, { ...o, onStep: (m) => steps.push(m) });
  return { result, steps };
}

export const jobRecoveryCases: PlainCase[] = [
  {
    name: 'recovery: the device is destroyed under two jobs in the GPU worker; both resume from their last checkpoints, no step lost',
    async fn() {
      const service = await WorkerService.start({ tokenizer: { kind: 'byte' } });
      try {
        // Two concurrent jobs on the scheduler, run straight first.
        const [a, b] = await Promise.all([straightRun(service, options('a', 3)), straightRun(service, options('b', 4))]);
        assert.notDeepEqual(a.result.rewardCurve, b.result.rewardCurve);
        // The metrics stream of a scheduled job: its device-time share and the loss statistics of each step.
        for (const m of [...a.steps, ...b.steps]) {
          assert.isTrue(m.deviceShare! > 0 && m.deviceShare! <= 1, JSON.stringify(m));
          assert.isAbove(m.tokensPerSecond!, 0);
          assert.isTrue(Number.isFinite(m.entropy!) && m.entropy! > 0);
          if (m.phase === 'rl') for (const k of ['rewardStd', 'clipFraction', 'approxKl'] as const) assert.isTrue(Number.isFinite(m[k]!), k);
        }

        const events: WorkerServiceEvent[] = [];
        service.on((e) => events.push(e));
        const source = workerServiceSource(service);
        const [ra, rb] = await Promise.all([
          recovering(source, options('a', 3), 1, () => void service.loseDevice()),
          recovering(source, options('b', 4), 99, () => {}),
        ]);
        assert.deepEqual(events.map((e) => e.type), ['device-lost', 'recovered']);
        const lost = events[0] as Extract<WorkerServiceEvent, { lost: unknown }>;
        assert.includeMembers(lost.lost.jobs, ['a/rl-grpo', 'b/rl-grpo']);
        assertResumedAfterStep1(ra, a, 'job a');
        // Job b was hit wherever it was: it resumed once, from its own last checkpoint, and ended as its straight run.
        assert.lengthOf(rb.recoveries, 1);
        assertSameRun(rb.result, b.result, 'job b');
        const want = new Map(b.steps.map((m) => [`${m.phase}${m.step}`, stepKey(m)]));
        for (const m of rb.steps) assert.strictEqual(stepKey(m), want.get(`${m.phase}${m.step}`), `job b: ${m.phase} step ${m.step}`);
        // Every step ran; the only one that may have run twice is the one after the last checkpoint.
        const from = rb.recoveries[0].from;
        const keys = rb.steps.map((m) => `${m.phase}${m.step}`);
        assert.deepEqual([...new Set(keys)], b.steps.map((m) => `${m.phase}${m.step}`));
        const twice = [...new Set(keys)].filter((k) => keys.indexOf(k) !== keys.lastIndexOf(k));
        assert.isAtMost(twice.length, 1, `ran twice: ${twice.join(', ')}`);
        if (twice.length) assert.strictEqual(twice[0], from ? `${from.phase}${from.step}` : 'sft0');
      } finally {
        await service.close();
      }
    },
  },
];

/** Deno only (each recovery recompiles every kernel on the new device; SwiftShader is slow at that). */
export const jobRecoveryDenoCases: PlainCase[] = [
  {
    name: 'recovery: the GPU worker crashes mid-training; it is restarted and the job resumes from its last checkpoint',
    async fn() {
      const service = await WorkerService.start({ tokenizer: { kind: 'byte' } });
      try {
        const straight = await straightRun(service, options('c', 5));
        const events: WorkerServiceEvent[] = [];
        service.on((e) => events.push(e));
        const t = await recovering(workerServiceSource(service), options('c', 5), 1, () => {
          void service.gpu.call((api) => new Promise<never>(() => void api.crash())).catch(() => {});
        });
        assert.deepEqual(events.map((e) => e.type), ['worker-crashed', 'recovered']);
        assertResumedAfterStep1(t, straight, 'crash');
      } finally {
        await service.close();
      }
    },
  },
  {
    name: 'recovery: the in-process engine (the CLI\'s) loses its device; a new device, the job resumes from its last checkpoint',
    async fn() {
      const ctx = await acquireGpu({ label: 'recovery-straight' });
      const straight = await straightRun(new LocalService(ctx, { decode: (ids) => tok.decode(ids) }), options('d', 6));
      ctx.destroy();
      const source = new LocalServiceSource(await acquireGpu({ label: 'recovery' }), (c) => new LocalService(c, { decode: (ids) => tok.decode(ids) }), { label: 'recovery' });
      const first = source.ctx;
      try {
        const t = await recovering(source, options('d', 6), 1, () => first.destroy());
        assert.notStrictEqual(source.ctx, first);
        assert.isTrue(first.isLost);
        assertResumedAfterStep1(t, straight, 'local');
      } finally {
        await source.close();
      }
    },
  },
];
