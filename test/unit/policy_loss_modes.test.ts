// The policy loss kernel's mode and aggregation ids, read back from its WGSL source: the host
// writes POLICY_LOSS_MODES[kind].id and POLICY_LOSS_AGGREGATIONS[agg].id into the uniform the
// kernel compares with its `const MODE_*` / `const AGG_*`, so the two tables and the WGSL must
// name the same constants with the same values. Also: every kind has its per-token term.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { POLICY_TERMS } from '../../src/algorithms/loss_terms.ts';
import { bundledKernel } from '../../src/gpu/pipelines.ts';
import { POLICY_LOSS_AGGREGATIONS, POLICY_LOSS_MODES } from '../../src/ops/policy_loss.ts';

/** `const NAME: u32 = 3u;` declarations with the given prefix, as name → value. */
function u32Consts(src: string, prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of src.matchAll(/^\s*const\s+([A-Z_][A-Z0-9_]*)\s*:\s*u32\s*=\s*(\d+)u?\s*;/gm)) {
    if (!m[1].startsWith(prefix)) continue;
    expect(out.has(m[1]), `${m[1]} declared twice`).toBe(false);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

const FILE = readFileSync(join(import.meta.dirname, '..', '..', 'kernels', 'policy_loss.wgsl'), 'utf8');

describe('policy_loss ids against kernels/policy_loss.wgsl', () => {
  for (const [what, src] of [['kernels/policy_loss.wgsl', FILE], ['the bundled kernel', bundledKernel('policy_loss') ?? '']] as const) {
    it(`POLICY_LOSS_MODES names every MODE_* of ${what}, with its value`, () => {
      const wgsl = u32Consts(src, 'MODE_');
      expect(wgsl.size).toBeGreaterThanOrEqual(4);
      const table = new Map(Object.values(POLICY_LOSS_MODES).map((m) => [m.wgsl, m.id]));
      expect(table).toEqual(wgsl);
      expect(new Set(table.values()).size, 'distinct ids').toBe(table.size);
    });

    it(`POLICY_LOSS_AGGREGATIONS names every AGG_* of ${what}, with its value`, () => {
      const wgsl = u32Consts(src, 'AGG_');
      expect(wgsl.size).toBe(3);
      expect(new Map(Object.values(POLICY_LOSS_AGGREGATIONS).map((a) => [a.wgsl, a.id]))).toEqual(wgsl);
    });
  }

  it('the kernel table and the per-token math cover the same kinds', () => {
    expect(Object.keys(POLICY_LOSS_MODES).sort()).toEqual(Object.keys(POLICY_TERMS).sort());
  });
});
