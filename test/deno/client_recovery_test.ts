// Deno suite: sampling and inference clients come back after the GPU worker's device is destroyed.
import { clientRecoveryCases } from '../shared/cases/client_recovery.ts';

for (const c of clientRecoveryCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
