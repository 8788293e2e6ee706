// A fleet host's jobs on its scheduler (src/fleet/scheduled_service.ts): each job's GPU calls are
// quanta of the job its FleetJob's priority class and weight describe, so with several jobs on a
// host the higher class takes the device first and a class shares it by weight. Fake services on
// a fake clock: the order of quanta and the device time per job are exact, nothing is timed.
import { describe, expect, it } from 'vitest';
import { jobSpecOf, scheduledService } from '../../src/fleet/scheduled_service.ts';
import { makeJob, trainOptionsOf } from '../../src/fleet/jobs.ts';
import type { ServiceClient, TrainingClient } from '../../src/runtime/clients.ts';
import { Scheduler } from '../../src/runtime/scheduler.ts';

/** A service whose forwardBackward and optimStep each take `ms` on `clock` and are logged as `tag`. */
function fakeService(tag: string, ms: number, clock: { t: number }, log: string[]): ServiceClient {
  const work = async <T>(v: T) => {
    clock.t += ms;
    log.push(tag);
    return v;
  };
  const client = {
    id: tag, modelId: 'm', trainable: 'lora',
    forwardBackward: () => work({ loss: 0 }),
    optimStep: () => work({ gradNorm: 0, skipped: false, step: 1 }),
    close: () => Promise.resolve(),
  } as unknown as TrainingClient;
  return { createTrainingClient: () => work(client) } as unknown as ServiceClient;
}

/** A job's steps: `steps` forwardBackward + optimStep pairs, each awaited, as runTraining does. */
async function train(service: ServiceClient, steps: number): Promise<void> {
  const c = await service.createTrainingClient({ modelId: 'm', trainable: 'lora' });
  for (let i = 0; i < steps; i++) {
    await c.forwardBackward({} as never, {} as never);
    await c.optimStep({ lr: 1e-3 });
  }
}

const train1 = trainOptionsOf({ model: 'tiny-gpt2', steps: 1 });

describe('fleet jobs on a host scheduler', () => {
  it('a job is scheduled with its FleetJob kind, priority class and weight', async () => {
    const s = new Scheduler({ memoryBudgetBytes: Infinity });
    const job = makeJob(train1, { id: 'j', priority: 'background', weight: 2.5 });
    await s.submit(jobSpecOf(job, 'j#1'));
    expect(s.stats('j#1')).toMatchObject({ kind: 'lora_rl', priority: 'background', weight: 2.5 });
  });

  it('an interactive job takes the device before a background one, quantum by quantum', async () => {
    const clock = { t: 0 };
    const s = new Scheduler({ memoryBudgetBytes: Infinity, now: () => clock.t });
    const log: string[] = [];
    await s.submit(jobSpecOf(makeJob(train1, { id: 'bg', priority: 'background' }), 'bg'));
    await s.submit(jobSpecOf(makeJob(train1, { id: 'ia', priority: 'interactive' }), 'ia'));
    // The background job asks first and gets the idle device; from then on the interactive one goes first.
    await Promise.all([train(scheduledService(fakeService('bg', 5, clock, log), s, 'bg'), 3), train(scheduledService(fakeService('ia', 5, clock, log), s, 'ia'), 3)]);
    expect(log).toEqual(['bg', ...Array(7).fill('ia'), ...Array(6).fill('bg')]);
    expect(s.stats('ia').deviceMs).toBe(35);
    expect(s.stats('bg').deviceMs).toBe(35);
  });

  it('within a class, device time goes by weight while both jobs want it', async () => {
    const clock = { t: 0 };
    const s = new Scheduler({ memoryBudgetBytes: Infinity, now: () => clock.t });
    const log: string[] = [];
    await s.submit(jobSpecOf(makeJob(train1, { id: 'w1', weight: 1 }), 'w1'));
    await s.submit(jobSpecOf(makeJob(train1, { id: 'w3', weight: 3 }), 'w3'));
    await Promise.all([train(scheduledService(fakeService('w1', 2, clock, log), s, 'w1'), 40), train(scheduledService(fakeService('w3', 2, clock, log), s, 'w3'), 40)]);
    // While both were backlogged (until the heavier one's last quantum), it had three quanta for each of the other's.
    const end = log.lastIndexOf('w3') + 1;
    const w1 = log.slice(0, end).filter((x) => x === 'w1').length;
    expect(end - w1).toBe(81);
    expect((end - w1) / w1).toBeGreaterThan(2.5);
    expect((end - w1) / w1).toBeLessThan(3.5);
  });
});
