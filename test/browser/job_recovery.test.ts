// Chromium suite: two jobs in the GPU worker (a module Worker) survive a device loss, resuming from their last checkpoints.
import { it } from 'vitest';
import { jobRecoveryCases } from '../shared/cases/job_recovery.ts';

for (const c of jobRecoveryCases) it(c.name, c.fn);
