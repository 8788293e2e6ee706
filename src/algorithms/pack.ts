/**
 * Packs datums into fixed-size [B, T] micro-batches for the engine, deterministically from a
 * seed. Legend: B rows per micro-batch, T positions per row (seqLen), one datum per row,
 * right-padded with padId and loss mask 0; rows left over in the last micro-batch are empty
 * (sequence id −1).
 *
 * `tokenScaleBT` holds each token's aggregation weight over the *whole step* (all micro-batches),
 * so Σ scale·ℓ summed over micro-batches is exactly the step's token_mean / sequence_mean loss —
 * gradient accumulation then needs no renormalization (use the kernel's 'sum' aggregation with
 * these as weights). `seqIdBT` (row index, −1 on padding) and `lossMaskBT` serve a kernel that
 * normalizes per micro-batch instead.
 *
 * With `concat`, several datums share a row (first fit in shuffled order), each a segment of its
 * own: `seqIdBT` numbers the datums of a batch, and the engine attends within a segment with
 * positions restarting at 0 — the same loss and gradients as one datum per row, with fewer padded
 * positions to compute. DPO pairs are shuffled as units and always share a micro-batch, in
 * adjacent rows (chosen first); they are not concatenated.
 */
import { InvalidInputError } from '../env/errors.ts';
import { deepFreeze } from '../util/freeze.ts';
import { Rng } from '../util/rng.ts';
import type { Datum } from './datum.ts';
import { aggregationScales } from './losses.ts';
import type { Aggregation } from './loss_spec.ts';

export interface PackOptions {
  /** B: rows per micro-batch. */
  readonly rows: number;
  /** T: positions per row; every datum must fit (targetsT.length <= seqLen). */
  readonly seqLen: number;
  /** Shuffle seed. */
  readonly seed: number;
  readonly padId: number;
  readonly aggregation: Aggregation;
  /** Shuffle datums (pairs as units) before packing. Default true. */
  readonly shuffle?: boolean;
  /**
   * Several datums per row, each its own segment (not with DPO pairs); the last micro-batch then
   * has only the rows it fills. Default false.
   */
  readonly concat?: boolean;
}

export interface PackedBatch {
  readonly rows: number;
  readonly seqLen: number;
  readonly inputsBT: Int32Array;
  readonly targetsBT: Int32Array;
  readonly lossMaskBT: Float32Array;
  readonly tokenScaleBT: Float32Array;
  readonly oldLogprobsBT: Float32Array;
  readonly advantagesBT: Float32Array;
  /** Present when every datum of the step has them. */
  readonly returnsBT: Float32Array | null;
  readonly oldValuesBT: Float32Array | null;
  readonly refLogprobsBT: Float32Array | null;
  /** Segment id at real positions (the row index; with `concat`, the datum's index in the batch), −1 on padding. */
  readonly seqIdBT: Int32Array;
  /** Datum.sequenceId at each real position, −1 on padding. */
  readonly sequenceIdBT: Int32Array;
  /** Datum.sequenceId of each row (with `concat`, of its first datum), −1 for an empty row. */
  readonly sequenceIdB: Int32Array;
  /** Real positions in each row (all its datums). */
  readonly lengthB: Int32Array;
  /** DPO pair id of each row (−1 none) and role (1 chosen, −1 rejected, 0 none). */
  readonly pairIdB: Int32Array;
  readonly pairRoleB: Int8Array;
  /**
   * The aggregation tokenScaleBT was packed for (packDatums sets it): a loss of another
   * aggregation is refused by forwardBackward rather than trained with the wrong token weights.
   * Absent on batches whose weights were set by hand.
   */
  readonly aggregation?: Aggregation;
}

export interface PackedStep {
  readonly batches: readonly PackedBatch[];
  /** Loss-masked tokens over the step. */
  readonly totalTokens: number;
  /** Datums over the step. */
  readonly totalSequences: number;
  readonly numPairs: number;
}

function units(datums: readonly Datum[]): Datum[][] {
  const out: Datum[][] = [];
  const pairs = new Map<number, Datum[]>();
  for (const d of datums) {
    if (d.pair === undefined) {
      out.push([d]);
      continue;
    }
    let unit = pairs.get(d.pair.id);
    if (unit === undefined) {
      unit = [];
      pairs.set(d.pair.id, unit);
      out.push(unit);
    }
    unit.push(d);
  }
  for (const [id, u] of pairs) {
    if (u.length !== 2 || u[0].pair!.role === u[1].pair!.role) throw new InvalidInputError('packDatums', `pair ${id} must have one chosen and one rejected datum, has ${u.length}`);
    const rank = (d: Datum) => (d.pair!.role === 'chosen' ? 0 : 1);
    u.sort((a, b) => rank(a) - rank(b));
  }
  return out;
}

export function packDatums(datums: readonly Datum[], options: PackOptions): PackedStep {
  const { rows: B, seqLen: T } = options;
  if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1) throw new InvalidInputError('packDatums', `rows and seqLen must be positive integers, got ${B}, ${T}`);
  datums.forEach((d) => {
    if (d.targetsT.length > T) throw new InvalidInputError('packDatums', `datum ${d.sequenceId} has ${d.targetsT.length} positions, over seqLen ${T}`);
  });
  const grouped = units(datums);
  if (B < 2 && grouped.some((u) => u.length === 2)) throw new InvalidInputError('packDatums', 'DPO pairs need rows >= 2');
  if (options.concat && grouped.some((u) => u.length === 2)) throw new InvalidInputError('packDatums', 'concat does not apply to DPO pairs (they must fill rows of their own)');
  if (options.shuffle ?? true) new Rng(options.seed, 0xba7c).shuffle(grouped);
  const scales = aggregationScales(datums.map((d) => d.lossMaskT), options.aggregation);
  const scaleOf = new Map(datums.map((d, i) => [d, scales[i]] as const));
  const has = (k: 'returnsT' | 'oldValuesT' | 'refLogprobsT') => datums.length > 0 && datums.every((d) => d[k] !== undefined);

  // Units of rows: a datum's or a pair's rows; with concat, rows filled first fit in shuffled order.
  let rowUnits: Datum[][][];
  if (options.concat) {
    const rows: Datum[][] = [];
    const free: number[] = [];
    for (const [d] of grouped) {
      const n = d.targetsT.length;
      const r = free.findIndex((f) => f >= n);
      if (r < 0) {
        rows.push([d]);
        free.push(T - n);
      } else {
        rows[r].push(d);
        free[r] -= n;
      }
    }
    rowUnits = rows.map((row) => [row]);
  } else {
    rowUnits = grouped.map((u) => u.map((d) => [d]));
  }
  // Greedy fill of batches; a pair that does not fit the rest of a batch starts the next one.
  const layout: Datum[][][] = [];
  let current: Datum[][] = [];
  for (const unit of rowUnits) {
    if (current.length + unit.length > B) {
      layout.push(current);
      current = [];
    }
    current.push(...unit);
  }
  if (current.length > 0) layout.push(current);

  const batches = layout.map((rowsD, bi): PackedBatch => {
    const B = options.concat && bi === layout.length - 1 ? rowsD.length : options.rows;
    const f32 = () => new Float32Array(B * T);
    const opt = (k: 'returnsT' | 'oldValuesT' | 'refLogprobsT') => (has(k) ? f32() : null);
    const b = {
      rows: B, seqLen: T,
      inputsBT: new Int32Array(B * T).fill(options.padId), targetsBT: new Int32Array(B * T).fill(options.padId),
      lossMaskBT: f32(), tokenScaleBT: f32(), oldLogprobsBT: f32(), advantagesBT: f32(),
      returnsBT: opt('returnsT'), oldValuesBT: opt('oldValuesT'), refLogprobsBT: opt('refLogprobsT'),
      seqIdBT: new Int32Array(B * T).fill(-1), sequenceIdBT: new Int32Array(B * T).fill(-1), sequenceIdB: new Int32Array(B).fill(-1), lengthB: new Int32Array(B),
      pairIdB: new Int32Array(B).fill(-1), pairRoleB: new Int8Array(B), aggregation: options.aggregation,
    };
    let segment = 0;
    rowsD.forEach((row, r) => {
      let o = r * T;
      b.sequenceIdB[r] = row[0].sequenceId;
      for (const d of row) {
        b.inputsBT.set(d.inputsT, o);
        b.targetsBT.set(d.targetsT, o);
        b.lossMaskBT.set(d.lossMaskT, o);
        b.tokenScaleBT.set(scaleOf.get(d)!, o);
        b.oldLogprobsBT.set(d.oldLogprobsT, o);
        b.advantagesBT.set(d.advantagesT, o);
        if (b.returnsBT) b.returnsBT.set(d.returnsT!, o);
        if (b.oldValuesBT) b.oldValuesBT.set(d.oldValuesT!, o);
        if (b.refLogprobsBT) b.refLogprobsBT.set(d.refLogprobsT!, o);
        b.seqIdBT.fill(options.concat ? segment++ : r, o, o + d.targetsT.length);
        b.sequenceIdBT.fill(d.sequenceId, o, o + d.targetsT.length);
        b.lengthB[r] += d.targetsT.length;
        if (d.pair) {
          b.pairIdB[r] = d.pair.id;
          b.pairRoleB[r] = d.pair.role === 'chosen' ? 1 : -1;
        }
        o += d.targetsT.length;
      }
    });
    return b;
  });
  return deepFreeze({
    batches,
    totalTokens: datums.reduce((s, d) => s + d.lossMaskT.reduce((a, m) => a + m, 0), 0),
    totalSequences: datums.length,
    numPairs: grouped.filter((u) => u.length === 2).length,
  });
}
