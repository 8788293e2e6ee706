// The one non-finite-step policy (skip_policy.ts) both services use.
import { describe, expect, it } from 'vitest';
import { NonFiniteStepsError } from '../../src/runtime/errors.ts';
import { SkipCounter } from '../../src/runtime/skip_policy.ts';

describe('SkipCounter', () => {
  it('stops at the limit-th skip in a row; a finite step or a reset starts the run over; the total keeps counting', () => {
    const c = new SkipCounter(3);
    expect([c.note('j', true), c.note('j', true)]).toEqual([null, null]);
    expect(c.note('j', false)).toBeNull();
    expect(c.inARow).toBe(0);
    c.note('j', true);
    c.note('j', true);
    const err = c.note('j', true);
    expect(err).toBeInstanceOf(NonFiniteStepsError);
    expect(err!.message).toContain('j');
    expect([c.inARow, c.total]).toEqual([3, 5]);
    c.reset();
    expect(c.note('j', true)).toBeNull();
    expect(new SkipCounter(Infinity).note('j', true)).toBeNull();
  });
});

describe('SkipCounter.check (the policy both services apply to an optimStep result)', () => {
  it('reports each skip with its counts, calls stopping with the error it then throws at the limit, and leaves finite steps silent', () => {
    const c = new SkipCounter(2);
    const skipped: unknown[] = [];
    const stopped: Error[] = [];
    const hooks = { skipped: (s: unknown) => skipped.push(s), stopping: (e: Error) => stopped.push(e) };
    c.check('job-a', { skipped: false, gradNorm: 1.5, step: 1 }, hooks);
    c.check('job-a', { skipped: true, gradNorm: NaN, step: 1 }, hooks);
    c.check('job-a', { skipped: false, gradNorm: 0.5, step: 2 }, hooks);
    c.check('job-a', { skipped: true, gradNorm: Infinity, step: 2 }, hooks);
    expect(stopped).toEqual([]);
    let thrown: unknown;
    try {
      c.check('job-a', { skipped: true, gradNorm: NaN, step: 2 }, hooks);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(NonFiniteStepsError);
    expect((thrown as Error).message).toContain('job-a');
    expect(stopped).toEqual([thrown]);
    expect(skipped).toEqual([
      { jobId: 'job-a', step: 1, gradNorm: NaN, inARow: 1, total: 1 },
      { jobId: 'job-a', step: 2, gradNorm: Infinity, inARow: 1, total: 2 },
      { jobId: 'job-a', step: 2, gradNorm: NaN, inARow: 2, total: 3 },
    ]);
  });

  it('without hooks (the LocalService) it only throws, at the limit-th skip in a row; an infinite limit never does', () => {
    const c = new SkipCounter(1);
    expect(() => c.check('j', { skipped: true, gradNorm: NaN, step: 0 })).toThrow(NonFiniteStepsError);
    const never = new SkipCounter(Infinity);
    for (let i = 0; i < 10; i++) never.check('j', { skipped: true, gradNorm: NaN, step: 0 });
    expect([never.inARow, never.total]).toEqual([10, 10]);
  });
});
