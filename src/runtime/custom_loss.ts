/**
 * A loss over per-token log-probs computed on the host — Tinker's `forward_backward_custom`. The
 * engine reduces its losses per token on the GPU; a loss that couples tokens (DPO's per-pair
 * sigmoid, a sequence-level objective) is taken in two passes instead:
 *   1. the policy's log-probs of every datum's targets (computeLogprobs);
 *   2. the user's function → the loss and ∂loss/∂logπ per token;
 *   3. a forward-backward with the importance-sampling loss whose ratio is 1 (old = current
 *      log-probs) and whose advantage is −∂loss/∂logπ, with weight 1 per trained token: its
 *      gradient is then exactly ∂loss/∂θ = Σ_t ∂loss/∂logπ_t · ∂logπ_t/∂θ.
 */
import type { Datum } from '../algorithms/datum.ts';
import { importanceSamplingLoss } from '../algorithms/loss_spec.ts';
import { type PackedBatch, packDatums } from '../algorithms/pack.ts';
import { ConfigError } from '../errors.ts';
import type { ForwardBackwardResult, TrainingClient } from './clients.ts';
import { type PackSettings, seqLenFor } from './train_step.ts';

/** One datum with the policy's log-probs of its targets ([T], 0 where the loss mask is 0 is fine). */
export interface SequenceLogprobs {
  readonly datum: Datum;
  readonly logprobsT: readonly number[];
}

/** The user's loss: its value and ∂loss/∂logπ per token of each sequence (in the order given). */
export type CustomLossFn = (sequences: readonly SequenceLogprobs[]) => { loss: number; dlogprobsST: readonly (readonly number[])[] };

/** Steps 1–2 and the batches of step 3 (see the header); `seed` orders the packing. */
export async function customLossBatches(client: TrainingClient, datums: readonly Datum[], pack: PackSettings, seed: number, lossFn: CustomLossFn): Promise<{ batches: PackedBatch[]; loss: number }> {
  if (datums.length === 0) return { batches: [], loss: 0 };
  const step = packDatums(datums, { rows: pack.rows, seqLen: seqLenFor(datums, pack.maxSeqLen), seed, padId: pack.padId, aggregation: 'token_mean' });
  const byId = new Map(datums.map((d, i) => [d.sequenceId, i] as const));
  const logprobsST: number[][] = datums.map(() => []);
  const lpBT: Float32Array[] = [];
  for (const b of step.batches) {
    const lp = (await client.computeLogprobs(b)).logprobsBT;
    lpBT.push(lp);
    for (let r = 0; r < b.rows; r++) {
      const s = byId.get(b.sequenceIdB[r]);
      if (s !== undefined) logprobsST[s] = Array.from(lp.subarray(r * b.seqLen, r * b.seqLen + datums[s].targetsT.length));
    }
  }
  const d = lossFn(datums.map((datum, s) => ({ datum, logprobsT: logprobsST[s] })));
  if (!Array.isArray(d.dlogprobsST) || d.dlogprobsST.length !== datums.length) {
    throw new ConfigError('lossFn', `must return dlogprobsST with one row per sequence (${datums.length}), got ${Array.isArray(d.dlogprobsST) ? d.dlogprobsST.length : typeof d.dlogprobsST}`);
  }
  const batches = step.batches.map((b, k): PackedBatch => {
    const advantagesBT = new Float32Array(b.rows * b.seqLen);
    for (let r = 0; r < b.rows; r++) {
      const s = byId.get(b.sequenceIdB[r]);
      if (s === undefined) continue;
      d.dlogprobsST[s].forEach((g, t) => (advantagesBT[r * b.seqLen + t] = -g));
    }
    // ρ = 1 (old = current log-probs) and weight 1 per token: the IS loss's gradient is then −A = ∂L/∂logπ.
    // The weights are set here, not by an aggregation: the batch says none.
    const { aggregation: _packed, ...rest } = b;
    return { ...rest, advantagesBT, oldLogprobsBT: lpBT[k], tokenScaleBT: b.lossMaskBT };
  });
  return { batches, loss: d.loss };
}

/**
 * Tinker's forward_backward_custom: accumulates the gradient of `lossFn` (over the policy's
 * per-token log-probs of `datums`) into `client`, ready for optimStep. Returns the user's loss and
 * the forward-backward results of the micro-batches.
 */
export async function forwardBackwardCustom(client: TrainingClient, datums: readonly Datum[], lossFn: CustomLossFn, pack: PackSettings & { readonly seed?: number }): Promise<{ loss: number; results: ForwardBackwardResult[] }> {
  const { batches, loss } = await customLossBatches(client, datums, pack, pack.seed ?? 0, lossFn);
  const results: ForwardBackwardResult[] = [];
  for (const b of batches) results.push(await client.forwardBackward(b, importanceSamplingLoss()));
  return { loss, results };
}
