/**
 * The job runner end to end on the engine (Deno suite only: the Chromium suite is slow on
 * SwiftShader and this case adds minutes there): tiny-gpt2 with a longer context (calculator's
 * prompt with its tool list is ~176 byte tokens), a 2-step SFT warm start, 2 RL steps of
 * 2 groups × 2 attempts — the summary's fields, the curves' lengths, and that the same seed
 * twice gives identical curves and success rates.
 */
import { assert } from 'chai';
import type { ModelConfig } from '../../../src/model/config.ts';
import { preset } from '../../../src/model/presets.ts';
import { jobEnv } from '../../../src/runtime/job_envs.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { type JobOptions, type StepMetrics, runTraining, summaryOf } from '../../../src/runtime/rl_job.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import type { GpuCase } from '../register.ts';

const tok = new ByteTokenizer();
const model: ModelConfig = { ...preset('tiny-gpt2'), maxSeqLen: 256 };

function options(algo: JobOptions['algo'], onStep?: (m: StepMetrics) => void): JobOptions {
  return {
    env: { ...jobEnv('calculator'), maxTurns: 2 } as JobOptions['env'],
    algo, model, lora: { rank: 2, alpha: 4, targets: ['q', 'v'] }, steps: 2, seed: 11, groups: 2, groupSize: 2, lr: 1e-2,
    warmStart: { steps: 2, demos: 8, batchSize: 4, lr: 1e-2 }, evalEpisodes: 2, temperature: 1, maxNewTokens: 8, rows: 4, maxGradNorm: 1,
    ...(onStep ? { onStep } : {}),
  };
}

export const rlJobCases: GpuCase[] = [
  {
    name: 'job runner: SFT warm start then 2 GRPO steps; summary fields, curve lengths, same seed → same curves',
    async fn(ctx) {
      const run = async (onStep?: (m: StepMetrics) => void) => {
        const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
        try {
          return await runTraining(service, options('grpo', onStep));
        } finally {
          await service.close();
        }
      };
      const steps: StepMetrics[] = [];
      const a = await run((m) => steps.push(m));
      const s = JSON.parse(JSON.stringify(summaryOf(a)));
      for (const k of ['env', 'algo', 'seed', 'steps', 'rewardCurve', 'lossCurve', 'successBefore', 'successAfter', 'wallSeconds', 'trainTokensPerSecond', 'sampleTokensPerSecond', 'peakGpuBytes', 'device']) {
        assert.property(s, k);
      }
      assert.include(s, { env: 'calculator', algo: 'grpo', seed: 11, steps: 2, trainable: 'lora', warmStartSteps: 2 });
      assert.lengthOf(s.rewardCurve, 2);
      assert.lengthOf(s.lossCurve, 2);
      assert.lengthOf(s.sftLossCurve, 2);
      for (const x of [...s.rewardCurve, ...s.lossCurve, ...s.sftLossCurve, s.successBefore, s.successAfter]) assert.isTrue(Number.isFinite(x));
      assert.isAbove(s.peakGpuBytes, 0);
      assert.isAbove(s.sampleTokensPerSecond, 0);
      assert.isAbove(s.trainTokensPerSecond, 0);
      assert.deepEqual(steps.map((m) => `${m.phase}${m.step}`), ['sft0', 'sft1', 'rl0', 'rl1']);
      assert.isBelow(s.sftLossCurve[1], s.sftLossCurve[0] + 1);
      // LoRA tensors of the RL job come back for saving.
      assert.isAbove(Object.keys(a.trained.tensors).length, 0);
      assert.isTrue(Object.keys(a.trained.tensors).every((k) => k.includes('lora_')));

      const b = await run();
      assert.deepEqual(b.rewardCurve, a.rewardCurve);
      assert.deepEqual(b.lossCurve, a.lossCurve);
      assert.deepEqual(b.sftLossCurve, a.sftLossCurve);
      assert.strictEqual(b.successBefore, a.successBefore);
      assert.strictEqual(b.successAfter, a.successAfter);
      for (const k of Object.keys(a.trained.tensors)) assert.deepEqual([...b.trained.tensors[k]], [...a.trained.tensors[k]], k);
      // The runner closes its clients and releases its models.
      const leaked = Object.entries(ctx.pool.stats().owners).filter(([o, st]) => /^(model|job|sampler):/.test(o) && st.currentBytes > 0);
      assert.deepEqual(leaked.map(([o]) => o), []);
    },
  },
];
