/**
 * The tokenizer contract every layer depends on (agents, SFT, DPO, demos). The byte-level
 * tokenizer (byte.ts) implements it now; the Hugging Face tokenizer comes later behind the same
 * interface.
 *
 * Departure from Hugging Face's API: `decode` always drops special ids (HF's
 * `skip_special_tokens=true`), because every caller here wants text an environment can read.
 */
import { WebtinkerError } from '../../errors.ts';

/** What the agent, SFT and DPO need of a tokenizer: encode, decode (specials dropped), special ids. */
export interface Tokenizer {
  /** Number of ids, specials included; every id is in [0, vocabSize). */
  readonly vocabSize: number;
  /** Beginning-of-sequence id, if the model uses one. */
  readonly bosId?: number;
  /** End-of-sequence id: sampling stops on it. */
  readonly eosId: number;
  /** Padding id for packed batches (never a training target: its loss mask is 0). */
  readonly padId: number;
  /** Text to ids, without specials. */
  encode(text: string): number[];
  /** Ids to text; special ids are dropped. */
  decode(ids: readonly number[]): string;
}

/** An id outside the vocabulary, or text a tokenizer cannot encode. */
export class TokenizerError extends WebtinkerError {
  constructor(message: string) {
    super('tokenizer', message);
  }
}
