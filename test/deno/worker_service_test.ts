// Deno suite: the WorkerService — the engine in a Deno Worker, every GPU call a scheduler quantum.
import { workerServiceCases } from '../shared/cases/worker_service.ts';

for (const c of workerServiceCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
