// Chromium suite: the GPU worker in a module Worker, with device-loss and crash recovery.
import { it } from 'vitest';
import { gpuWorkerCases } from '../shared/cases/gpu_worker.ts';

for (const c of gpuWorkerCases) it(c.name, c.fn);
