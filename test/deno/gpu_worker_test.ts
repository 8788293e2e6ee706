// Deno suite: the GPU worker in a Deno Worker, with device-loss and crash recovery.
import { gpuWorkerCases } from '../shared/cases/gpu_worker.ts';

for (const c of gpuWorkerCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
