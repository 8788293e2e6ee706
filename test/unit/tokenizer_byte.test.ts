import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BYTE_BOS_ID, BYTE_EOS_ID, BYTE_PAD_ID, BYTE_VOCAB_SIZE, ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { TokenizerError } from '../../src/model/tokenizer/tokenizer.ts';

const tok = new ByteTokenizer();

describe('ByteTokenizer', () => {
  it('maps text to its UTF-8 bytes and back', () => {
    expect(tok.encode('Hi!')).toEqual([72, 105, 33]);
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
    expect(tok.decode([72, 105, 33])).toBe('Hi!');
  });
  it('round-trips any string (fast-check)', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => tok.decode(tok.encode(s)) === s));
  });
  it('has 256 byte ids plus pad/bos/eos', () => {
    expect([BYTE_PAD_ID, BYTE_BOS_ID, BYTE_EOS_ID, BYTE_VOCAB_SIZE]).toEqual([256, 257, 258, 259]);
    expect(tok.vocabSize).toBe(259);
    expect(tok.bosId).toBe(257);
    expect(tok.eosId).toBe(258);
    expect(tok.padId).toBe(256);
  });
  it('drops specials in decode and shows them in render', () => {
    expect(tok.decode([BYTE_BOS_ID, 97, BYTE_EOS_ID, 98, BYTE_PAD_ID])).toBe('ab');
    expect(tok.render([BYTE_BOS_ID, 97, BYTE_EOS_ID])).toBe('<bos>a<eos>');
  });
  it('decodes a character cut mid-sequence to U+FFFD instead of throwing', () => {
    expect(tok.decode([0xc3])).toBe('\uFFFD');
  });
  it('rejects ids outside the vocabulary with a TokenizerError', () => {
    expect(() => tok.decode([259])).toThrow(TokenizerError);
    expect(() => tok.decode([-1])).toThrow(/outside \[0, 259\)/);
    expect(() => tok.decode([1.5])).toThrow(TokenizerError);
  });
});
