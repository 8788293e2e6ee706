/**
 * Supervised fine-tuning datums (pair with `crossEntropyLoss()`): from trajectories — typically
 * replayed demonstrations (env/demos.ts), where the loss mask is the policy mask, so only the
 * demonstrated actions are learned and prompts and observations are context — or from
 * prompt/completion text pairs.
 *
 * Departure from tokenizing `prompt + completion` as one string: the two are tokenized separately
 * so the loss mask boundary is exact; with the byte tokenizer the result is identical anyway.
 */
import type { Trajectory } from '../env/types.ts';
import { InvalidInputError } from '../env/errors.ts';
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { type Datum, datumFromSequence, trajectoryToDatum } from './datum.ts';

/** One datum per trajectory; loss on its policy tokens. */
export function sftDatums(trajs: readonly Trajectory[], firstSequenceId = 0): Datum[] {
  return trajs.map((t, i) => trajectoryToDatum(t, firstSequenceId + i));
}

export interface TextPair {
  readonly prompt: string;
  readonly completion: string;
}

export interface TextEncodeOptions {
  /**
   * Prepend bos. Default: when the tokenizer has one and the prompt does not already start with
   * it (a chat template that renders `bos_token`: Llama 3.x, Gemma 3). Set with such a prompt, it
   * is refused: the sequence would start with two.
   */
  readonly addBos?: boolean;
  /** Append eos to the completion (and learn it). Default true. */
  readonly appendEos?: boolean;
}

/** [L] tokens and [L] mask of prompt · completion (mask 1 on the completion and its eos). */
export function encodePair(tokenizer: Tokenizer, prompt: string, completion: string, options: TextEncodeOptions = {}): { tokensL: number[]; maskL: number[] } {
  const ids = tokenizer.encode(prompt);
  const bos = tokenizer.bosId;
  const hasBos = bos !== undefined && ids[0] === bos;
  if (options.addBos === true && hasBos) throw new InvalidInputError('encodePair', `addBos is set but the prompt already starts with BOS (${bos})`);
  const head = [...((options.addBos ?? (bos !== undefined && !hasBos)) ? [bos as number] : []), ...ids];
  const tail = [...tokenizer.encode(completion), ...((options.appendEos ?? true) ? [tokenizer.eosId] : [])];
  return { tokensL: [...head, ...tail], maskL: [...head.map(() => 0), ...tail.map(() => 1)] };
}

/** One datum per text pair; loss on the completion. */
export function sftDatumsFromPairs(pairs: readonly TextPair[], tokenizer: Tokenizer, options: TextEncodeOptions & { readonly firstSequenceId?: number } = {}): Datum[] {
  return pairs.map((p, i) => {
    const { tokensL, maskL } = encodePair(tokenizer, p.prompt, p.completion, options);
    return datumFromSequence((options.firstSequenceId ?? 0) + i, tokensL, maskL, maskL.map(() => 0));
  });
}
