import { describe, expect, it } from 'vitest';
import { datumFromSequence, type Datum } from '../../src/algorithms/datum.ts';
import { dpoDatums, dpoPairsFromPreferences } from '../../src/algorithms/dpo.ts';
import { packDatums, type PackOptions } from '../../src/algorithms/pack.ts';
import { tok } from './env_fakes.ts';

// Datum i: i + 2 tokens [100+i, 1, 2, …], mask 1 after the first target, advantage i on masked targets.
const datum = (i: number, extras = false): Datum => {
  const L = i + 2;
  const tokens = [100 + i, ...Array.from({ length: L - 1 }, (_, k) => k + 1)];
  const mask = tokens.map((_, k) => (k >= 2 ? 1 : 0));
  const T = L - 1;
  return datumFromSequence(i, tokens, mask, mask.map((m) => -0.5 * m), {
    advantagesT: mask.slice(1).map((m) => m * i),
    ...(extras ? { returnsT: new Array(T).fill(1), oldValuesT: new Array(T).fill(0.5), refLogprobsT: new Array(T).fill(-1) } : {}),
  });
};
const opts: PackOptions = { rows: 2, seqLen: 6, seed: 1, padId: 256, aggregation: 'token_mean' };

describe('packDatums', () => {
  it('lays datums into [B, T] rows, right-padded with mask 0 (no shuffle)', () => {
    // datum 1: tokens [101, 1, 2] → inputs [101, 1], targets [1, 2], mask [0, 1]
    // datum 3: tokens [103, 1, 2, 3, 4] → inputs [103, 1, 2, 3], targets [1, 2, 3, 4], mask [0, 1, 1, 1]
    const step = packDatums([datum(1), datum(3), datum(2)], { ...opts, shuffle: false });
    expect(step.batches.length).toBe(2);
    const [b0, b1] = step.batches;
    const pad = 256;
    expect([...b0.inputsBT]).toEqual([101, 1, pad, pad, pad, pad, 103, 1, 2, 3, pad, pad]);
    expect([...b0.targetsBT]).toEqual([1, 2, pad, pad, pad, pad, 1, 2, 3, 4, pad, pad]);
    expect([...b0.lossMaskBT]).toEqual([0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0]);
    expect([...b0.advantagesBT]).toEqual([0, 1, 0, 0, 0, 0, 0, 3, 3, 3, 0, 0]);
    expect([...b0.oldLogprobsBT]).toEqual([0, -0.5, 0, 0, 0, 0, 0, -0.5, -0.5, -0.5, 0, 0]);
    expect([...b0.seqIdBT]).toEqual([0, 0, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1]);
    expect([...b0.sequenceIdB, ...b0.lengthB]).toEqual([1, 3, 2, 4]);
    // the last micro-batch has one empty row
    expect([...b1.sequenceIdB, ...b1.lengthB]).toEqual([2, -1, 3, 0]);
    expect([...b1.lossMaskBT.slice(6)]).toEqual([0, 0, 0, 0, 0, 0]);
    expect([b0.returnsBT, b0.refLogprobsBT]).toEqual([null, null]);
    expect(step).toMatchObject({ totalTokens: 6, totalSequences: 3, numPairs: 0 });
  });

  it('concat: first fit of several datums per row, each its own segment', () => {
    // lengths 2 (datum 1), 4 (datum 3), 3 (datum 2), 1 (datum 0) into rows of 6, in this order:
    // row 0 = datum 1 + datum 3, row 1 = datum 2 + datum 0
    const step = packDatums([datum(1), datum(3), datum(2), datum(0)], { ...opts, shuffle: false, concat: true });
    expect(step.batches.length).toBe(1);
    const [b] = step.batches;
    const pad = 256;
    expect([...b.inputsBT]).toEqual([101, 1, 103, 1, 2, 3, 102, 1, 2, 100, pad, pad]);
    expect([...b.targetsBT]).toEqual([1, 2, 1, 2, 3, 4, 1, 2, 3, 1, pad, pad]);
    expect([...b.lossMaskBT]).toEqual([0, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0]);
    expect([...b.seqIdBT]).toEqual([0, 0, 1, 1, 1, 1, 2, 2, 2, 3, -1, -1]);
    expect([...b.sequenceIdBT]).toEqual([1, 1, 3, 3, 3, 3, 2, 2, 2, 0, -1, -1]);
    expect([...b.sequenceIdB, ...b.lengthB]).toEqual([1, 2, 6, 4]);
    // the last micro-batch has only the rows it fills
    expect(packDatums([datum(1), datum(3), datum(2), datum(0)], { ...opts, rows: 4, shuffle: false, concat: true }).batches[0].rows).toBe(2);
    // the step's weights do not depend on the layout
    const rowWise = packDatums([datum(1), datum(3), datum(2), datum(0)], { ...opts, shuffle: false });
    const total = (st: typeof step) => st.batches.reduce((s, x) => s + x.tokenScaleBT.reduce((a, v) => a + v, 0), 0);
    expect(total(step)).toBeCloseTo(total(rowWise), 6);
    expect(step.totalTokens).toBe(rowWise.totalTokens);
    // DPO pairs fill rows of their own
    const pairs = dpoDatums(dpoPairsFromPreferences([{ prompt: 'q', chosen: 'a', rejected: 'b' }], tok));
    expect(() => packDatums(pairs, { ...opts, concat: true })).toThrow(/concat does not apply to DPO pairs/);
  });

  it('writes step-wide aggregation weights: Σ scale·ℓ over all micro-batches is the step loss', () => {
    const ds = [datum(1), datum(3), datum(2)]; // masked tokens 1, 3, 2
    const tokenMean = packDatums(ds, opts);
    const sum = (k: 'tokenScaleBT') => tokenMean.batches.reduce((s, b) => s + b[k].reduce((a, x) => a + x, 0), 0);
    expect(sum('tokenScaleBT')).toBeCloseTo(1, 6); // 6 tokens × 1/6
    const seqMean = packDatums(ds, { ...opts, aggregation: 'sequence_mean', shuffle: false });
    // datum 1's one token weighs 1/(1·3); datum 3's three tokens 1/(3·3) each
    expect(seqMean.batches[0].tokenScaleBT[1]).toBeCloseTo(1 / 3, 6);
    expect(seqMean.batches[0].tokenScaleBT[7]).toBeCloseTo(1 / 9, 6);
    expect(seqMean.batches.reduce((s, b) => s + b.tokenScaleBT.reduce((a, x) => a + x, 0), 0)).toBeCloseTo(1, 6);
  });

  it('shuffles deterministically from the seed', () => {
    const ds = Array.from({ length: 9 }, (_, i) => datum(i % 4));
    const order = (seed: number) => packDatums(ds.map((d, i) => ({ ...d, sequenceId: i })), { ...opts, seed }).batches.flatMap((b) => [...b.sequenceIdB]);
    expect(order(5)).toEqual(order(5));
    expect(order(5)).not.toEqual(order(6));
    expect(order(5).filter((x) => x >= 0).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('carries optional arrays only when every datum has them', () => {
    const all = packDatums([datum(1, true), datum(2, true)], { ...opts, shuffle: false }).batches[0];
    expect([...all.returnsBT!.slice(0, 3)]).toEqual([1, 1, 0]);
    expect([...all.refLogprobsBT!.slice(0, 2)]).toEqual([-1, -1]);
    expect(all.oldValuesBT![0]).toBe(0.5);
    expect(packDatums([datum(1, true), datum(2)], opts).batches[0].returnsBT).toBeNull();
  });

  it('keeps DPO pairs adjacent, chosen first, in one micro-batch', () => {
    const pairs = dpoPairsFromPreferences(Array.from({ length: 5 }, (_, i) => ({ prompt: `q${i}`, chosen: 'good', rejected: 'bad' })), tok);
    // reversed order and an odd row count: pairs must still land together
    const step = packDatums(dpoDatums(pairs).reverse(), { ...opts, rows: 3, seqLen: 12, seed: 3 });
    expect(step.numPairs).toBe(5);
    for (const b of step.batches) {
      for (let r = 0; r < b.rows; r++) {
        if (b.pairRoleB[r] === 1) {
          expect(b.pairRoleB[r + 1]).toBe(-1);
          expect(b.pairIdB[r + 1]).toBe(b.pairIdB[r]);
        }
      }
    }
    expect(step.batches.flatMap((b) => [...b.pairIdB]).filter((x) => x >= 0).sort()).toEqual([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
  });

  it('rejects datums longer than seqLen, broken pairs and pairs with one row', () => {
    expect(() => packDatums([datum(9)], opts)).toThrow(/10 positions, over seqLen 6/);
    const [p] = dpoPairsFromPreferences([{ prompt: 'q', chosen: 'a', rejected: 'b' }], tok);
    expect(() => packDatums([p.chosen], { ...opts, seqLen: 8 })).toThrow(/pair 0 must have one chosen and one rejected/);
    expect(() => packDatums([p.chosen, p.rejected], { ...opts, rows: 1, seqLen: 8 })).toThrow(/rows >= 2/);
    expect(() => packDatums([], { ...opts, rows: 0 })).toThrow(/positive integers/);
  });

  it('is frozen and structured-clone safe', () => {
    const step = packDatums([datum(1), datum(2)], opts);
    expect(Object.isFrozen(step) && Object.isFrozen(step.batches[0])).toBe(true);
    const copy = structuredClone(step);
    expect([...copy.batches[0].inputsBT]).toEqual([...step.batches[0].inputsBT]);
    expect(copy.batches[0].inputsBT).toBeInstanceOf(Int32Array);
  });
});
