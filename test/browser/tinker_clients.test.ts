// Chromium suite: Tinker's names (front doors, sample(prompt, n, params)) on the LocalService and the WorkerService.
import { it } from 'vitest';
import { tinkerClientCases } from '../shared/cases/tinker_clients.ts';

for (const c of tinkerClientCases) it(c.name, c.fn);
