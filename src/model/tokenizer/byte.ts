/**
 * Byte-level tokenizer: ids 0..255 are the UTF-8 bytes of the text, then a few specials.
 *
 * Legend: ids 0..255 bytes · 256 <pad> · 257 <bos> · 258 <eos> · vocabSize 259.
 * Departures: no merges (every byte is a token, so sequences are long but any text round-trips
 * exactly); invalid UTF-8 in `decode` (a byte sequence cut mid-character) becomes U+FFFD instead
 * of an error, because sampled tokens can end anywhere.
 */
import { type Tokenizer, TokenizerError } from './tokenizer.ts';

export const BYTE_PAD_ID = 256;
export const BYTE_BOS_ID = 257;
export const BYTE_EOS_ID = 258;
export const BYTE_VOCAB_SIZE = 259;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The byte-level tokenizer of the from-scratch presets (ids 0..255 bytes, then pad, bos, eos). */
export class ByteTokenizer implements Tokenizer {
  readonly vocabSize = BYTE_VOCAB_SIZE;
  readonly bosId = BYTE_BOS_ID;
  readonly eosId = BYTE_EOS_ID;
  readonly padId = BYTE_PAD_ID;

  encode(text: string): number[] {
    return Array.from(encoder.encode(text));
  }

  decode(ids: readonly number[]): string {
    const bytes: number[] = [];
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= BYTE_VOCAB_SIZE) {
        throw new TokenizerError(`ByteTokenizer.decode: id ${id} is outside [0, ${BYTE_VOCAB_SIZE})`);
      }
      if (id < 256) bytes.push(id);
    }
    return decoder.decode(Uint8Array.from(bytes));
  }

  /** Human-readable rendering with specials shown as <pad>/<bos>/<eos> (for logs, not for envs). */
  render(ids: readonly number[]): string {
    const names: Record<number, string> = { [BYTE_PAD_ID]: '<pad>', [BYTE_BOS_ID]: '<bos>', [BYTE_EOS_ID]: '<eos>' };
    let out = '';
    let run: number[] = [];
    for (const id of ids) {
      if (id in names) {
        out += this.decode(run) + names[id];
        run = [];
      } else run.push(id);
    }
    return out + this.decode(run);
  }
}
