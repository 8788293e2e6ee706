// Chromium suite: admission refuses a base or a job over the adapter's maxBufferSize before anything is allocated.
import { it } from 'vitest';
import { admissionCases } from '../shared/cases/admission.ts';

for (const c of admissionCases) it(c.name, c.fn);
