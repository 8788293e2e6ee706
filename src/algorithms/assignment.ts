/**
 * The best assignment of rows to columns: each row gets one column, no column two rows (while there
 * are columns enough; with more rows than columns each column serves ⌈rows / columns⌉ rows at most),
 * maximising the summed scores — the Hungarian method (Kuhn–Munkres with potentials, O(n²·m)).
 * trainAgents' `bestResponse` assigns a seat's situations (e.g. the signalling speaker's targets)
 * to its alternative actions (its letters) by how likely its partners are to play their winning
 * plays after each: its best response under mutual exclusivity, so two situations never share an
 * action while another goes unused.
 */
import { InvalidInputError } from '../env/errors.ts';

/**
 * `scores[r][c]`: how good column c is for row r (finite; higher is better). Returns, per row, its
 * column. Ties go to the lower column index the method meets first; the result is deterministic.
 */
export function bestAssignment(scores: readonly (readonly number[])[]): number[] {
  const n = scores.length;
  if (n === 0) return [];
  const m = scores[0].length;
  if (m === 0) throw new InvalidInputError('scores', 'rows have no columns to be assigned to');
  scores.forEach((row, r) => {
    if (row.length !== m) throw new InvalidInputError(`scores[${r}]`, `expected ${m} columns like row 0, got ${row.length}`);
    row.forEach((x, c) => {
      if (!Number.isFinite(x)) throw new InvalidInputError(`scores[${r}][${c}]`, `expected a finite number, got ${x}`);
    });
  });
  // More rows than columns: each column repeated, so every row finds one (copy c·m + j is column j).
  const copies = Math.ceil(n / m);
  const cols = m * copies;
  const cost = (r: number, c: number) => -scores[r][c % m];
  // 1-based potentials u (rows), v (columns); p[c]: the row on column c (0: none); way: the path back.
  const u = new Float64Array(n + 1), v = new Float64Array(cols + 1);
  const p = new Int32Array(cols + 1), way = new Int32Array(cols + 1);
  for (let r = 1; r <= n; r++) {
    p[0] = r;
    let c0 = 0;
    const minv = new Float64Array(cols + 1).fill(Infinity);
    const used = new Uint8Array(cols + 1);
    do {
      used[c0] = 1;
      const r0 = p[c0];
      let delta = Infinity, c1 = 0;
      for (let c = 1; c <= cols; c++) {
        if (used[c]) continue;
        const cur = cost(r0 - 1, c - 1) - u[r0] - v[c];
        if (cur < minv[c]) {
          minv[c] = cur;
          way[c] = c0;
        }
        if (minv[c] < delta) {
          delta = minv[c];
          c1 = c;
        }
      }
      for (let c = 0; c <= cols; c++) {
        if (used[c]) {
          u[p[c]] += delta;
          v[c] -= delta;
        } else minv[c] -= delta;
      }
      c0 = c1;
    } while (p[c0] !== 0);
    do {
      const c1 = way[c0];
      p[c0] = p[c1];
      c0 = c1;
    } while (c0 !== 0);
  }
  const out = new Array<number>(n).fill(-1);
  for (let c = 1; c <= cols; c++) if (p[c] !== 0) out[p[c] - 1] = (c - 1) % m;
  return out;
}
