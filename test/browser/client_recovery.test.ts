// Chromium suite: sampling and inference clients come back after the GPU worker's device is destroyed.
import { it } from 'vitest';
import { clientRecoveryCases } from '../shared/cases/client_recovery.ts';

for (const c of clientRecoveryCases) it(c.name, c.fn);
