import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/runtime/scheduler.ts';
import { AdmissionError, JobCancelledError, JobStateError } from '../../src/runtime/errors.ts';

/** A fake device clock: a quantum of `ms` advances it by `ms` and reports it. */
function fakeClock() {
  let t = 0;
  return {
    now: () => t,
    work: (ms: number, log?: string[], tag?: string) => async () => {
      t += ms;
      log?.push(tag ?? '');
      return { deviceMs: ms };
    },
  };
}

const MB = 2 ** 20;

/** Keep a job asking for quanta until `stop()` says so. */
async function loop(s: Scheduler, id: string, q: () => Promise<unknown>, stop: () => boolean): Promise<number> {
  let n = 0;
  while (!stop()) {
    await s.quantum(id, q);
    n++;
  }
  return n;
}

describe('Scheduler', () => {
  it('shares device time by weight (2:1) between two training jobs', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'a', kind: 'lora_rl', weight: 2, memoryBytes: MB });
    await s.submit({ id: 'b', kind: 'lora_rl', weight: 1, memoryBytes: MB });
    const stop = () => c.now() >= 3000;
    await Promise.all([loop(s, 'a', c.work(10), stop), loop(s, 'b', c.work(7), stop)]);
    expect(Math.abs(s.stats('a').share - 2 / 3)).toBeLessThan(0.02);
    expect(Math.abs(s.stats('b').share - 1 / 3)).toBeLessThan(0.02);
    expect(s.busyFraction()).toBe(1);
  });

  it('keeps the 2:1 shares when each job asks for its next quantum only after the last one, several ticks later', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'a', kind: 'lora_rl', weight: 2, memoryBytes: MB });
    await s.submit({ id: 'b', kind: 'lora_rl', weight: 1, memoryBytes: MB });
    const stop = () => c.now() >= 1500;
    // Quanta that end in a later task (a worker's reply) and a client several promise ticks away
    // from the scheduler (as the worker clients are): the other job has asked long before.
    const run = async (id: string) => {
      while (!stop()) {
        await s.quantum(id, async () => {
          await new Promise((r) => setTimeout(r, 0));
          return c.work(10)();
        });
        for (let i = 0; i < 12; i++) await Promise.resolve();
      }
    };
    await Promise.all([run('a'), run('b')]);
    expect(Math.abs(s.stats('a').share - 2 / 3)).toBeLessThan(0.03);
  });

  it('serves interactive requests ahead of training at the next quantum boundary', async () => {
    const c = fakeClock();
    const log: string[] = [];
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'train', kind: 'full_rl', memoryBytes: MB });
    await s.submit({ id: 'chat', kind: 'inference', memoryBytes: MB });
    expect(s.stats('chat').priority).toBe('interactive');
    const t = [1, 2, 3].map((i) => s.quantum('train', c.work(50, log, `train${i}`)));
    const q = s.quantum('chat', c.work(5, log, 'chat'));
    await Promise.all([...t, q]);
    // train1 was already running when chat arrived; chat goes right after it.
    expect(log).toEqual(['train1', 'chat', 'train2', 'train3']);
  });

  it('gives an idle job no credit: after idling it shares equally, not in a burst', async () => {
    const c = fakeClock();
    const log: string[] = [];
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'a', kind: 'sft', memoryBytes: MB });
    await s.submit({ id: 'b', kind: 'sft', memoryBytes: MB });
    for (let i = 0; i < 50; i++) await s.quantum('a', c.work(10));
    const stop = () => log.length >= 20;
    await Promise.all([loop(s, 'a', c.work(10, log, 'a'), stop), loop(s, 'b', c.work(10, log, 'b'), stop)]);
    const firstTen = log.slice(0, 10);
    expect(firstTen.filter((x) => x === 'b').length).toBeLessThanOrEqual(6);
    expect(firstTen.filter((x) => x === 'a').length).toBeGreaterThanOrEqual(4);
  });

  it('runs other jobs while one does CPU work between its quanta', async () => {
    const c = fakeClock();
    const log: string[] = [];
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'env', kind: 'lora_rl', memoryBytes: MB });
    await s.submit({ id: 'other', kind: 'lora_rl', memoryBytes: MB });
    let cpuDone!: () => void;
    const cpu = new Promise<void>((r) => (cpuDone = r));
    const envJob = (async () => {
      await s.quantum('env', c.work(10, log, 'env-sample'));
      await cpu; // stepping environments on the CPU
      await s.quantum('env', c.work(10, log, 'env-train'));
    })();
    await s.quantum('other', c.work(10, log, 'other1'));
    await s.quantum('other', c.work(10, log, 'other2'));
    cpuDone();
    await envJob;
    expect(log).toEqual(['env-sample', 'other1', 'other2', 'env-train']);
  });

  it('pauses, resumes, reprioritizes and cancels', async () => {
    const c = fakeClock();
    const log: string[] = [];
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'a', kind: 'sft', memoryBytes: MB });
    await s.submit({ id: 'b', kind: 'sft', memoryBytes: MB });
    s.pause('a');
    const pa = s.quantum('a', c.work(5, log, 'a'));
    await s.quantum('b', c.work(5, log, 'b'));
    expect(log).toEqual(['b']);
    s.resume('a');
    await pa;
    expect(log).toEqual(['b', 'a']);
    expect(() => s.resume('a')).toThrow(JobStateError);

    // Demoted to 'background', b waits behind a's normal-class request although it asked first.
    s.reprioritize('b', { priority: 'background' });
    const busy = s.quantum('a', c.work(5, log, 'a-running'));
    const pb = s.quantum('b', c.work(5, log, 'b-bg'));
    const pa2 = s.quantum('a', c.work(5, log, 'a2'));
    await Promise.all([busy, pb, pa2]);
    expect(log.slice(2)).toEqual(['a-running', 'a2', 'b-bg']);
    expect(s.stats('b').priority).toBe('background');

    s.pause('b');
    const doomed = s.quantum('b', c.work(5, log, 'never'));
    s.cancel('b');
    await expect(doomed).rejects.toThrow(JobCancelledError);
    await expect(s.quantum('b', c.work(5))).rejects.toThrow(/job "b" is cancelled/);
    expect(log).not.toContain('never');
    expect(s.stats('b').state).toBe('cancelled');
  });

  it('refuses a job that can never fit, naming the numbers; a job that fits later waits', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    expect(() => s.submit({ id: 'huge', kind: 'full_rl', memoryBytes: 200 * MB })).toThrow(AdmissionError);
    expect(() => s.submit({ id: 'huge2', kind: 'full_rl', memoryBytes: 200 * MB }))
      .toThrow(/job "huge2": needs an estimated 200.0 MiB of GPU memory, more than the 100.0 MiB budget/);
    await s.submit({ id: 'a', kind: 'full_rl', memoryBytes: 70 * MB });
    let admitted = false;
    const pb = s.submit({ id: 'b', kind: 'lora_rl', memoryBytes: 40 * MB }).then(() => (admitted = true));
    const pc = s.submit({ id: 'c', kind: 'lora_rl', memoryBytes: 10 * MB }); // FIFO: waits behind b
    await Promise.resolve();
    expect(admitted).toBe(false);
    expect(s.stats('b').state).toBe('waiting');
    expect(s.stats('c').state).toBe('waiting');
    await expect(s.quantum('b', c.work(1))).rejects.toThrow(/not admitted yet/);
    s.finish('a');
    await pb;
    await pc;
    expect(s.usedBytes).toBe(50 * MB);
    // Cancelling a waiting job rejects its admission.
    await s.submit({ id: 'd', kind: 'sft', memoryBytes: 50 * MB });
    const pe = s.submit({ id: 'e', kind: 'sft', memoryBytes: 60 * MB });
    s.cancel('e');
    await expect(pe).rejects.toThrow(JobCancelledError);
  });

  it('passes a quantum error to its caller and keeps serving', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: 100 * MB, now: c.now });
    await s.submit({ id: 'a', kind: 'sft', memoryBytes: MB });
    const bad = s.quantum('a', async () => {
      throw new Error('NaN loss');
    });
    const good = s.quantum('a', c.work(3));
    await expect(bad).rejects.toThrow('NaN loss');
    await expect(good).resolves.toEqual({ deviceMs: 3 });
    expect(s.stats('a').quanta).toBe(2);
  });

  it('validates job specs', () => {
    const s = new Scheduler({ memoryBudgetBytes: MB });
    expect(() => s.submit({ id: 'w', kind: 'sft', weight: 0, memoryBytes: 1 })).toThrow(/weight must be a positive number/);
    void s.submit({ id: 'x', kind: 'sft', memoryBytes: 1 });
    expect(() => s.submit({ id: 'x', kind: 'sft', memoryBytes: 1 })).toThrow(/already exists/);
    expect(() => new Scheduler({ memoryBudgetBytes: 0 })).toThrow(JobStateError);
  });

  it('a job paused for an error shows it in its stats and state event until resumed', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: MB, now: c.now });
    const states: unknown[] = [];
    s.on((e) => e.type === 'state' && states.push(e));
    await s.submit({ id: 'a', kind: 'lora_rl', memoryBytes: 1 });
    s.pause('a', 'three NaN steps');
    expect(s.stats('a')).toMatchObject({ state: 'paused', error: 'three NaN steps' });
    const held = s.quantum('a', c.work(1));
    s.resume('a');
    await held;
    expect(s.stats('a').error).toBeUndefined();
    expect(states.slice(-2)).toEqual([{ type: 'state', jobId: 'a', state: 'paused', error: 'three NaN steps' }, { type: 'state', jobId: 'a', state: 'active' }]);
  });

  it('reuses the id of an ended job (a job re-created after a device loss), never of a live one', async () => {
    const c = fakeClock();
    const s = new Scheduler({ memoryBudgetBytes: 2, now: c.now });
    await s.submit({ id: 'a', kind: 'sft', memoryBytes: 1 });
    await s.quantum('a', c.work(5));
    s.cancel('a');
    await s.submit({ id: 'a', kind: 'lora_rl', memoryBytes: 2 });
    expect(s.stats('a')).toMatchObject({ kind: 'lora_rl', state: 'active', quanta: 0, memoryBytes: 2 });
    expect(s.usedBytes).toBe(2);
    expect(() => s.submit({ id: 'a', kind: 'sft', memoryBytes: 1 })).toThrow(/already exists \(active\)/);
    s.finish('a');
    await s.submit({ id: 'a', kind: 'sft', memoryBytes: 1 });
    expect(s.jobs().map((j) => j.id)).toEqual(['a']);
  });
});
