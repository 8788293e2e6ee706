/**
 * Registers shared GPU cases with the runner at hand: Deno.test under Deno, vitest's `it` in the
 * browser suite. Every GPU test file of either suite is one call of this.
 */
import type { GpuContext } from '../../src/gpu/device.ts';
import { testGpu } from './gpu.ts';

export interface GpuCase {
  name: string;
  fn: (ctx: GpuContext) => Promise<void>;
}

type ItLike = (name: string, fn: () => Promise<void>) => void;

/** Deno: `registerCases(cases)`; vitest: `registerCases(cases, it)`. */
export function registerCases(cases: readonly GpuCase[], it?: ItLike): void {
  const deno = (globalThis as { Deno?: { test: (o: object) => void } }).Deno;
  for (const c of cases) {
    const run = async () => c.fn(await testGpu());
    if (it) it(c.name, run);
    else if (deno) deno.test({ name: c.name, sanitizeOps: false, sanitizeResources: false, fn: run });
    else throw new Error('registerCases: no test runner (pass vitest `it`, or run under Deno)');
  }
}
