import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { bestAssignment } from '../../src/algorithms/assignment.ts';
import { InvalidInputError } from '../../src/env/errors.ts';

/** The oracle: every assignment of rows to columns (each column ⌈n/m⌉ times at most), tried in turn. */
function bruteBest(scores: number[][]): number {
  const n = scores.length, m = scores[0].length, cap = Math.ceil(n / m);
  const load = new Array<number>(m).fill(0);
  let best = -Infinity;
  const go = (r: number, sum: number) => {
    if (r === n) {
      best = Math.max(best, sum);
      return;
    }
    for (let c = 0; c < m; c++) {
      if (load[c] >= cap) continue;
      load[c]++;
      go(r + 1, sum + scores[r][c]);
      load[c]--;
    }
  };
  go(0, 0);
  return best;
}

const total = (scores: number[][], a: number[]) => a.reduce((s, c, r) => s + scores[r][c], 0);

describe('bestAssignment (Hungarian method)', () => {
  it('finds the best total of every assignment (oracle: all of them), each column used at most ⌈rows/columns⌉ times', () => {
    const matrix = fc.integer({ min: 1, max: 6 }).chain((n) => fc.integer({ min: 1, max: 6 }).chain((m) =>
      fc.array(fc.array(fc.double({ min: -30, max: 5, noNaN: true }), { minLength: m, maxLength: m }), { minLength: n, maxLength: n })));
    fc.assert(fc.property(matrix, (scores) => {
      const a = bestAssignment(scores);
      const m = scores[0].length, cap = Math.ceil(scores.length / m);
      expect(a).toHaveLength(scores.length);
      for (const c of a) expect(c >= 0 && c < m).toBe(true);
      for (let c = 0; c < m; c++) expect(a.filter((x) => x === c).length).toBeLessThanOrEqual(cap);
      expect(total(scores, a)).toBeCloseTo(bruteBest(scores), 9);
    }), { numRuns: 300, seed: 25 });
  });

  it('splits two rows that prefer one column: the one that loses less moves (a pooled pair of targets, one free letter)', () => {
    // Rows: ring, box, star; columns: letters a, e, i. ring and star both read best on a.
    const logp = [[-0.7, -3, -2.5], [-3, -0.1, -3], [-0.69, -3, -1.2]];
    expect(bestAssignment(logp)).toEqual([0, 1, 2]);
    // A greedy choice per row would put ring and star on a.
    expect(logp.map((row) => row.indexOf(Math.max(...row)))).toEqual([0, 1, 0]);
  });

  it('no rows: nothing; bad matrices: a typed error naming the entry', () => {
    expect(bestAssignment([])).toEqual([]);
    expect(() => bestAssignment([[]])).toThrow(InvalidInputError);
    expect(() => bestAssignment([[1, 2], [3]])).toThrow(/scores\[1\]: expected 2 columns/);
    expect(() => bestAssignment([[1, Number.NEGATIVE_INFINITY]])).toThrow(/scores\[0\]\[1\]: expected a finite number/);
  });
});
