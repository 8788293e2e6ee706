// Deno suite: a base's kept weight texture copies — one set per base, bounded, reserved with it.
import { baseMemoryCases } from '../shared/cases/base_memory.ts';

for (const c of baseMemoryCases) Deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: c.fn });
