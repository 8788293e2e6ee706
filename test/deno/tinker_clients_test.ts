// Deno suite: Tinker's names (front doors, sample(prompt, n, params)) on the LocalService and the WorkerService.
import { tinkerClientCases } from '../shared/cases/tinker_clients.ts';

for (const c of tinkerClientCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
