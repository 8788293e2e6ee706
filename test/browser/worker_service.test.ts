// Chromium suite: the WorkerService — the engine in a module Worker, every GPU call a scheduler quantum.
import { it } from 'vitest';
import { workerServiceCases } from '../shared/cases/worker_service.ts';

for (const c of workerServiceCases) it(c.name, c.fn);
