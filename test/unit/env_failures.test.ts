// Environment failures made visible (issue 22 item 5): dropped episodes by reason with the first
// message of each kind in StepMetrics, a step result whose getter throws dropped instead of
// crashing the job, a job whose every episode is dropped stopped with EnvironmentError (in an RL
// step, the warm start or an evaluation), and the reset timeout settable from the job.
import { describe, expect, it } from 'vitest';
import { dropsPart } from '../../src/cli/progress.ts';
import { Agent } from '../../src/env/agent.ts';
import { EnvironmentError } from '../../src/env/errors.ts';
import { checkStepResult, checkTurnStepResult } from '../../src/env/guard.ts';
import { rolloutMultiTurn } from '../../src/env/rollout.ts';
import type { EnvSpec, StepResult } from '../../src/env/types.ts';
import { preset } from '../../src/model/presets.ts';
import type { ServiceClient } from '../../src/runtime/clients.ts';
import { dropsByReason, dropsText } from '../../src/runtime/env_failures.ts';
import { demonstrationTrajectories, evaluate, rollout } from '../../src/runtime/evaluate.ts';
import type { JobEnv } from '../../src/runtime/job_envs.ts';
import { type JobOptions, runTraining, type StepMetrics } from '../../src/runtime/rl_job.ts';
import { jobOptions } from '../../src/runtime/train.ts';
import { fakePolicy, tok } from './env_fakes.ts';

const agentSettings = { tokenizer: tok, maxNewTokens: 8, maxSequenceTokens: 128, temperature: 1 };

/** An EnvSpec whose step does what `step(seed)` says for the episode of that seed. */
function envOf(name: string, step: (seed: number, action: string) => Promise<unknown>, opts: { reset?: (seed: number) => Promise<string> } = {}): EnvSpec {
  return {
    name,
    create() {
      let seed = 0;
      return {
        name,
        reset: async (s: number) => (seed = s, opts.reset ? opts.reset(s) : `task ${s}`),
        step: (action: string) => step(seed, action) as Promise<StepResult>,
      };
    },
    demonstrations: (n: number) => Array.from({ length: n }, (_, i) => ({ seed: i, actions: ['a'] })),
  };
}

const single = (spec: EnvSpec): JobEnv => ({ name: spec.name, kind: 'single', spec, maxTurns: 1, maxNewTokens: 8 });
const throwing = envOf('thrower', async () => {
  throw new TypeError('the env is broken');
});
const getterThrows = envOf('getter', async () => ({
  observation: 'ok', done: true,
  get reward(): number {
    throw new RangeError('reward getter exploded');
  },
}));

describe('the guard reads step results safely', () => {
  it('a throwing getter drops the episode as env_error with its message, instead of escaping', async () => {
    const r = { observation: 'x', done: true, get reward(): number { throw new Error('boom'); } };
    expect(checkStepResult(r)).toEqual({ ok: false, reason: 'env_error', message: 'reading the step result threw Error: boom' });
    const t = { observation: 'x', done: true, get rewardsP(): number[] { throw new Error('boom'); } };
    expect(checkTurnStepResult(t, 2)).toMatchObject({ ok: false, reason: 'env_error' });
    const agent = new Agent({ sample: fakePolicy(() => 'hi'), tokenizer: tok });
    const batch = await rolloutMultiTurn(getterThrows, agent, [{ seed: 1, groupId: 0 }, { seed: 2, groupId: 0 }], { seed: 0 });
    expect(batch.metrics.dropped).toBe(2);
    expect(batch.dropped[0].message).toMatch(/RangeError: reward getter exploded/);
  });
});

describe('dropped episodes by reason', () => {
  it('counts each reason and keeps its first message', async () => {
    // Odd seeds throw, seed 2 returns a NaN reward, the rest are fine.
    const spec = envOf('mixed', async (seed) => {
      if (seed % 2 === 1) throw new Error(`odd seed ${seed}`);
      return { observation: 'ok', reward: seed === 2 ? NaN : 1, done: true };
    });
    const episodes = [0, 1, 2, 3, 4, 5].map((seed) => ({ seed, groupId: seed }));
    const ro = await rollout(single(spec), fakePolicy(() => 'x'), episodes, 0, agentSettings);
    expect(ro.dropped).toBe(4);
    expect(ro.droppedBy).toEqual({
      env_error: { count: 3, message: 'mixed.step threw Error: odd seed 1' },
      invalid_reward: { count: 1, message: 'step returned reward NaN, not a finite number' },
    });
    expect(dropsText(ro.droppedBy)).toBe('env_error ×3 (first: mixed.step threw Error: odd seed 1); invalid_reward ×1 (first: step returned reward NaN, not a finite number)');
    expect(dropsByReason([])).toEqual({});
    // The CLI's progress line shows them; a step without drops adds nothing.
    expect(dropsPart({ dropped: 4, droppedBy: ro.droppedBy }, 200)).toBe(` | dropped 4: ${dropsText(ro.droppedBy)}`);
    expect(dropsPart({ dropped: 0 }, 200)).toBe('');
  });

  it('an evaluation whose every episode is dropped is an EnvironmentError, not a success of 0', async () => {
    const err = await evaluate(single(throwing), fakePolicy(() => 'x'), 4, 0, agentSettings).catch((e) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ env: 'thrower', phase: 'the held-out evaluation', episodes: 4 });
    expect(err.message).toMatch(/env_error ×4: thrower.step threw TypeError: the env is broken/);
  });

  it('a warm start whose every demonstration is dropped stops with the environment’s error', async () => {
    const err = await demonstrationTrajectories(single(throwing), 5, 0, agentSettings).catch((e) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ env: 'thrower', phase: "the warm start's demonstrations", episodes: 5 });
    expect(err.message).toMatch(/TypeError: the env is broken/);
  });

  it('the reset timeout is the job’s stepTimeoutMs', async () => {
    const hangs = envOf('slow', async () => ({ observation: '', reward: 1, done: true }), { reset: () => new Promise(() => {}) });
    const ro = await rollout(single(hangs), fakePolicy(() => 'x'), [{ seed: 0, groupId: 0 }], 0, { ...agentSettings, stepTimeoutMs: 5 });
    expect(ro.droppedBy).toEqual({ timeout: { count: 1, message: 'slow.reset(0) did not finish within 5 ms' } });
    expect(jobOptions({ env: hangs, stepTimeoutMs: 5 }).stepTimeoutMs).toBe(5);
  });
});

/**
 * A service whose policy samples the fixed text "x": enough of the ServiceClient for a job with no
 * warm start and no evaluation, whose groups all have equal rewards (so no training call is made).
 */
function fakeService(): ServiceClient & { calls: string[] } {
  const calls: string[] = [];
  const sample = fakePolicy(() => 'x');
  const training = {
    id: 'policy',
    samplingClient: async () => ({ sample, close: async () => {} }),
    weights: async () => ({}),
    close: async () => {},
  };
  return {
    calls,
    adapter: {} as ServiceClient['adapter'],
    createModel: async () => (calls.push('createModel'), 'm'),
    modelWeights: async () => ({}),
    releaseModel: async () => void calls.push('releaseModel'),
    createTrainingClient: async () => (calls.push('createTrainingClient'), training) as never,
    memory: async () => ({ liveBytes: 0, peakLiveBytes: 0, owners: {} }),
  } as unknown as ServiceClient & { calls: string[] };
}

function job(spec: EnvSpec, over: Partial<JobOptions> = {}): JobOptions {
  return { ...jobOptions({ env: spec, model: preset('tiny-gpt2'), warmStart: null, evalEpisodes: 0, steps: 2, groups: 2, groupSize: 2, lora: { rank: 2, targets: ['q'] } }), ...over };
}

describe('the job runner', () => {
  it('stops an RL step whose every episode is dropped with EnvironmentError naming the env and the step', async () => {
    const service = fakeService();
    const err = await runTraining(service, job(throwing)).catch((e) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ env: 'thrower', phase: 'RL step 0', episodes: 4, byReason: { env_error: { count: 4 } } });
    expect(err.message).toMatch(/TypeError: the env is broken/);
    expect(service.calls).toContain('releaseModel'); // cleaned up as after any failure
  });

  it('a step result with a throwing getter drops the episodes (and stops the job by EnvironmentError), never the raw error', async () => {
    const err = await runTraining(fakeService(), job(getterThrows)).catch((e) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err.message).toMatch(/reading the step result threw RangeError: reward getter exploded/);
  });

  it('a warm start whose every demonstration is dropped stops before any training client exists', async () => {
    const service = fakeService();
    const err = await runTraining(service, job(throwing, { warmStart: { steps: 2, demos: 3, batchSize: 2, lr: 1e-2 } })).catch((e) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ phase: "the warm start's demonstrations", episodes: 3 });
    expect(service.calls).not.toContain('createTrainingClient');
  });

  it('reports partly dropped steps in StepMetrics.droppedBy, with the first message of each kind', async () => {
    // Seeds are per step: whether an episode fails depends on its seed's parity.
    const spec = envOf('half', async (seed) => {
      if (seed % 2 === 0) throw new Error(`even seed ${seed}`);
      return { observation: 'ok', reward: 0, done: true };
    });
    const steps: StepMetrics[] = [];
    await runTraining(fakeService(), job(spec, { steps: 3, groups: 8, onStep: (m) => steps.push(m) }));
    expect(steps).toHaveLength(3);
    for (const m of steps) {
      if (m.dropped === 0) {
        expect(m.droppedBy).toBeUndefined();
        continue;
      }
      expect(m.droppedBy?.env_error?.count).toBe(m.dropped);
      expect(m.droppedBy?.env_error?.message).toMatch(/^half\.step threw Error: even seed \d+$/);
    }
    expect(steps.some((m) => m.dropped > 0)).toBe(true);
  });
});
