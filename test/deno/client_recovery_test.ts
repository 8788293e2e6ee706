// Deno suite: sampling and inference clients come back after the GPU worker's device is destroyed,
// and after the worker crashes (published versions from a file adapter store).
import { clientRecoveryCases, clientRecoveryDenoCases } from '../shared/cases/client_recovery.ts';

const store = async () => ({ kind: 'files' as const, dir: await Deno.makeTempDir({ prefix: 'wt-crash-store-' }) });
for (const c of [...clientRecoveryCases, ...clientRecoveryDenoCases(store)]) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
