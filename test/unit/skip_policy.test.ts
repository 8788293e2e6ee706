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
