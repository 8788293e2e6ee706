// Deno suite: whole jobs recover from a lost device or a crashed GPU worker, resuming from their last checkpoints.
import { jobRecoveryCases, jobRecoveryDenoCases } from '../shared/cases/job_recovery.ts';

for (const c of [...jobRecoveryCases, ...jobRecoveryDenoCases]) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
