// The TrainingClient's GPU calls are listed once (training_calls.ts); the page's WorkerTrainingClient
// forwards each from that list. Driven here against a fake service and a fake worker API: each call
// is one quantum of the job with its label, reaches the worker's method of the same name with the
// job id first and the arguments unchanged, and hands back what the worker returned.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { NonFiniteStepsError } from '../../src/runtime/errors.ts';
import { SkipCounter } from '../../src/runtime/skip_policy.ts';
import { TRAINING_CALL_NAMES, TRAINING_CALLS } from '../../src/runtime/training_calls.ts';
import { type ClientHost, WorkerTrainingClient } from '../../src/runtime/worker_clients.ts';
import type { Owned } from '../../src/runtime/worker_types.ts';
import type { ModelConfig } from '../../src/model/config.ts';
import type { TrainingClient } from '../../src/runtime/clients.ts';
import type { TrainingCall } from '../../src/runtime/training_calls.ts';

function fakeHost() {
  const quanta: { label: string; objectId: string }[] = [];
  const sent: { method: string; args: unknown[] }[] = [];
  const api = new Proxy({}, {
    get: (_, method: string) => (...args: unknown[]) => {
      sent.push({ method, args });
      return Promise.resolve(method === 'optimStep' ? { gradNorm: NaN, skipped: true, step: 3 } : { from: method });
    },
  });
  const noted: unknown[] = [];
  const host = {
    quantum: (_o: Owned, objectId: string, label: string, f: (api: never) => Promise<unknown>) => {
      quanta.push({ label, objectId });
      return f(api as never);
    },
    noteStep: (o: Owned, id: string, r: { gradNorm: number; skipped: boolean; step: number }) => {
      noted.push({ id, r });
      (o.skips ??= new SkipCounter(1)).check(id, r);
    },
  } as unknown as ClientHost;
  return { host, quanta, sent, noted };
}

const owned = (): Owned => ({ schedId: 'job-7', epoch: 0, kind: 'job', closed: false, tail: Promise.resolve() });

describe('TRAINING_CALLS: the one list of the TrainingClient GPU calls', () => {
  it('keeps the quantum labels the scheduler reports have always used', () => {
    expect(Object.fromEntries(TRAINING_CALL_NAMES.map((n) => [n, TRAINING_CALLS[n].label]))).toEqual({
      forwardBackward: 'forwardBackward', optimStep: 'optimStep', computeLogprobs: 'computeLogprobs', weights: 'weights',
      saveWeightsForSampler: 'publish', saveState: 'saveState', loadState: 'loadState',
    });
    expect(Object.keys(TRAINING_CALLS).sort()).toEqual([...TRAINING_CALL_NAMES].sort());
  });

  it('covers every TrainingClient method but the three that cross differently (checked by tsc)', () => {
    type Methods = { [K in keyof TrainingClient]: TrainingClient[K] extends (...a: never[]) => unknown ? K : never }[keyof TrainingClient];
    expectTypeOf<Exclude<Methods, TrainingCall | 'samplingClient' | 'memory' | 'close'>>().toBeNever();
    expectTypeOf<Exclude<TrainingCall, Methods>>().toBeNever();
  });

  it('names the result arrays that go back by transfer (each of the large results, none of the small ones)', () => {
    const a = new Float32Array(2), b = new Float32Array(3), c = new Float32Array(4);
    expect([...TRAINING_CALLS.computeLogprobs.transfer!({ logprobsBT: a, logits: b, valuesBT: c } as never)]).toEqual([a, b, c]);
    expect([...TRAINING_CALLS.saveState.transfer!({ params: { w: a }, m: { w: b }, v: { w: c }, step: 1 } as never)]).toEqual([a, b, c]);
    expect([...TRAINING_CALLS.weights.transfer!({ x: a, y: b })]).toEqual([a, b]);
    expect([TRAINING_CALLS.optimStep.transfer, TRAINING_CALLS.loadState.transfer, TRAINING_CALLS.saveWeightsForSampler.transfer]).toEqual([undefined, undefined, undefined]);
  });
});

describe('WorkerTrainingClient forwards every call of the list', () => {
  const cfg = { name: 'tiny' } as ModelConfig;

  it('as one quantum of its job, to the worker method of the same name with the job id first', async () => {
    const { host, quanta, sent } = fakeHost();
    const client = new WorkerTrainingClient(host, owned(), 'job-7', 'm', 'lora', cfg, undefined);
    const args: Record<string, unknown[]> = {
      forwardBackward: [{ tokens: 1 }, { kind: 'ce' }, { logprobs: true }],
      computeLogprobs: [{ tokens: 2 }],
      weights: [],
      saveWeightsForSampler: ['policy'],
      saveState: [],
      loadState: [{ step: 4 }],
    };
    for (const name of TRAINING_CALL_NAMES) {
      if (name === 'optimStep') continue;
      const r = await (client[name] as (...a: unknown[]) => Promise<unknown>)(...args[name]!);
      expect(r).toEqual({ from: name });
    }
    const names = TRAINING_CALL_NAMES.filter((n) => n !== 'optimStep');
    expect(quanta).toEqual(names.map((n) => ({ label: TRAINING_CALLS[n].label, objectId: 'job-7' })));
    expect(sent).toEqual(names.map((n) => ({ method: n, args: ['job-7', ...args[n]!] })));
  });

  it('optimStep goes through the service\'s non-finite policy after its quantum, and rejects with its error', async () => {
    const { host, quanta, sent, noted } = fakeHost();
    const o = owned();
    const client = new WorkerTrainingClient(host, o, 'job-7', 'm', 'all', cfg, undefined);
    await expect(client.optimStep({ lr: 1e-3 } as never)).rejects.toBeInstanceOf(NonFiniteStepsError);
    expect(quanta).toEqual([{ label: 'optimStep', objectId: 'job-7' }]);
    expect(sent).toEqual([{ method: 'optimStep', args: ['job-7', { lr: 1e-3 }] }]);
    expect(noted).toEqual([{ id: 'job-7', r: { gradNorm: NaN, skipped: true, step: 3 } }]);
    expect([o.skips!.total, o.skips!.inARow]).toEqual([1, 1]);
  });
});
