/**
 * Direct Preference Optimization (Rafailov et al. 2023, "Direct Preference Optimization: Your
 * Language Model is Secretly a Reward Model"). For a pair with sequence log-prob sums π_c, π_r
 * under the policy and r_c, r_r under the frozen reference:
 *   z = β·[(π_c − r_c) − (π_r − r_r)],   L = −log σ(z) = softplus(−z),
 *   ∂L/∂π_c = −β·σ(−z),   ∂L/∂π_r = +β·σ(−z).
 * A sequence's sum runs over its loss-masked (policy) tokens, so each of those tokens' log-probs
 * gets the pair's gradient. Pairs come from preference data or online, by ranking a group's
 * sampled attempts by reward. Pair with `dpoLoss({ beta })`.
 *
 * Departure from offline DPO: online pairs are multi-turn trajectories when the environment is;
 * observation tokens are context (mask 0) and do not enter the sums.
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Trajectory, TrajectoryGroup } from '../env/types.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { type Datum, datumFromSequence, trajectoryToDatum } from './datum.ts';
import { encodePair, type TextEncodeOptions } from './sft.ts';

export interface DpoPair {
  readonly chosen: Datum;
  readonly rejected: Datum;
}

/** log σ(x), stable for large |x|. */
function logSigmoid(x: number): number {
  return x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x));
}

function sigmoid(x: number): number {
  return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
}

/** The DPO loss of one pair from sequence log-prob sums, with its gradients and implicit rewards. */
export function dpoPairLoss(
  sums: { readonly policyChosen: number; readonly policyRejected: number; readonly refChosen: number; readonly refRejected: number },
  beta: number,
): { loss: number; dPolicyChosen: number; dPolicyRejected: number; chosenReward: number; rejectedReward: number } {
  const chosenReward = beta * (sums.policyChosen - sums.refChosen);
  const rejectedReward = beta * (sums.policyRejected - sums.refRejected);
  const z = chosenReward - rejectedReward;
  const s = sigmoid(-z);
  return { loss: -logSigmoid(z), dPolicyChosen: -beta * s, dPolicyRejected: beta * s, chosenReward, rejectedReward };
}

/** Σ_t mask_t·logprob_t: a sequence's log-prob over its loss-masked tokens. */
export function sequenceLogprob(logprobsT: readonly number[], maskT: readonly number[]): number {
  if (logprobsT.length !== maskT.length) throw new InvalidInputError('sequenceLogprob', `${logprobsT.length} logprobs, ${maskT.length} mask entries`);
  return logprobsT.reduce((s, lp, t) => s + (maskT[t] ? lp : 0), 0);
}

export interface PreferencePair {
  readonly prompt: string;
  readonly chosen: string;
  readonly rejected: string;
}

/** Pairs from preference data; optional reference log-probs per side ([T] each). */
export function dpoPairsFromPreferences(
  prefs: readonly PreferencePair[],
  tokenizer: Tokenizer,
  options: TextEncodeOptions & { readonly refLogprobs?: (pairIndex: number, role: 'chosen' | 'rejected') => readonly number[] } = {},
): DpoPair[] {
  return prefs.map((p, i) => {
    const side = (role: 'chosen' | 'rejected'): Datum => {
      const { tokensL, maskL } = encodePair(tokenizer, p.prompt, p[role], options);
      const ref = options.refLogprobs?.(i, role);
      return datumFromSequence(2 * i + (role === 'chosen' ? 0 : 1), tokensL, maskL, maskL.map(() => 0), { pair: { id: i, role }, ...(ref ? { refLogprobsT: ref } : {}) });
    };
    return { chosen: side('chosen'), rejected: side('rejected') };
  });
}

export interface OnlinePairOptions {
  /** Keep a pair only when r_chosen − r_rejected > minMargin. Default 0. */
  readonly minMargin?: number;
  readonly refLogprobs?: (t: Trajectory) => readonly number[];
}

/**
 * Online pairs: in each group, attempts ranked by reward (ties by episode id) and paired from the
 * outside in — best with worst, second best with second worst, … — keeping pairs whose rewards
 * differ by more than minMargin. Groups with all-equal rewards give no pairs.
 */
export function dpoPairsFromGroups(groups: readonly TrajectoryGroup[], options: OnlinePairOptions = {}): DpoPair[] {
  const minMargin = options.minMargin ?? 0;
  const pairs: DpoPair[] = [];
  for (const g of groups) {
    const ranked = [...g.trajectories].sort((a, b) => b.reward - a.reward || a.episodeId - b.episodeId || a.player - b.player);
    for (let i = 0; i < Math.floor(ranked.length / 2); i++) {
      const hi = ranked[i];
      const lo = ranked[ranked.length - 1 - i];
      if (!(hi.reward - lo.reward > minMargin)) break; // inner pairs are closer still
      const id = pairs.length;
      const side = (t: Trajectory, role: 'chosen' | 'rejected', seq: number) => {
        const ref = options.refLogprobs?.(t);
        return trajectoryToDatum(t, seq, { pair: { id, role }, ...(ref ? { refLogprobsT: ref } : {}) });
      };
      pairs.push({ chosen: side(hi, 'chosen', 2 * id), rejected: side(lo, 'rejected', 2 * id + 1) });
    }
  }
  return pairs;
}

/** Pairs flattened as [chosen₀, rejected₀, chosen₁, …] for packing (pack.ts keeps pairs together). */
export function dpoDatums(pairs: readonly DpoPair[]): Datum[] {
  return pairs.flatMap((p) => [p.chosen, p.rejected]);
}

/**
 * The mean DPO loss over pairs given each sequence's current [T] log-probs (reference log-probs
 * from the datums), with [S][T] d(loss)/d(logprob) in the order of `inputs`.
 */
export function dpoReference(
  beta: number,
  inputs: readonly { readonly datum: Datum; readonly logprobsT: readonly number[] }[],
): { loss: number; dlogprobsST: number[][]; accuracy: number; meanMargin: number } {
  const byPair = new Map<number, { chosen?: number; rejected?: number }>();
  inputs.forEach(({ datum }, s) => {
    if (datum.pair === undefined) throw new InvalidInputError('dpoReference', `sequence ${datum.sequenceId} is not part of a pair`);
    if (datum.refLogprobsT === undefined) throw new InvalidInputError('dpoReference', `sequence ${datum.sequenceId} has no refLogprobsT`);
    const entry = byPair.get(datum.pair.id) ?? {};
    if (entry[datum.pair.role] !== undefined) throw new InvalidInputError('dpoReference', `pair ${datum.pair.id} has two ${datum.pair.role} sequences`);
    entry[datum.pair.role] = s;
    byPair.set(datum.pair.id, entry);
  });
  const dlogprobsST = inputs.map(({ datum }) => new Array<number>(datum.targetsT.length).fill(0));
  const P = byPair.size;
  let loss = 0, correct = 0, margin = 0;
  for (const [id, { chosen, rejected }] of byPair) {
    if (chosen === undefined || rejected === undefined) throw new InvalidInputError('dpoReference', `pair ${id} is missing a side`);
    const sum = (s: number, ref: boolean) => sequenceLogprob(ref ? (inputs[s].datum.refLogprobsT as number[]) : inputs[s].logprobsT, inputs[s].datum.lossMaskT);
    const x = dpoPairLoss({ policyChosen: sum(chosen, false), policyRejected: sum(rejected, false), refChosen: sum(chosen, true), refRejected: sum(rejected, true) }, beta);
    loss += x.loss / P;
    correct += x.chosenReward > x.rejectedReward ? 1 : 0;
    margin += (x.chosenReward - x.rejectedReward) / P;
    for (const [s, d] of [[chosen, x.dPolicyChosen], [rejected, x.dPolicyRejected]] as const) {
      inputs[s].datum.lossMaskT.forEach((m, t) => {
        if (m) dlogprobsST[s][t] = d / P;
      });
    }
  }
  return { loss, dlogprobsST, accuracy: P === 0 ? 0 : correct / P, meanMargin: margin };
}
