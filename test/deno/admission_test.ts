// Deno suite: admission refuses a base or a job over the adapter's maxBufferSize before anything is allocated.
import { admissionCases } from '../shared/cases/admission.ts';

for (const c of admissionCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
