// The sampler's vocabulary mask on the host: the bitmask (src/ops/vocab_mask.ts), its CPU
// reference, and tokenizerVocabMask on the real tokenizers (what a Qwen/Llama/Gemma policy may
// sample). The GPU kernel is checked against the reference in test/shared/cases/vocab_mask.ts.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { tokenizerVocabMask } from '../../src/model/sample_fn.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { allowedBy, vocabBitmask } from '../../src/ops/vocab_mask.ts';
import { vocabMaskRef } from '../../src/ops/vocab_mask.ref.ts';
import { type Family, realTokenizer } from '../shared/real_tokenizers.ts';

beforeAll(() => {
  for (const f of ['qwen3', 'llama3_2', 'gemma3'] as Family[]) realTokenizer(f);
}, 120_000);

describe('vocabBitmask', () => {
  it('allows exactly the ids below the limit that are not masked (any V, limit, list)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 400 }), fc.array(fc.nat(450), { maxLength: 20 }), (V, limit, masked) => {
      const set = new Set(masked);
      const expected = Array.from({ length: V }, (_, j) => j < limit && !set.has(j));
      if (!expected.some((x) => x)) {
        expect(() => vocabBitmask({ limit, masked }, V)).toThrow(ConfigError);
        return;
      }
      const bits = vocabBitmask({ limit, masked }, V);
      expect(bits.length).toBe(Math.ceil(V / 32));
      expect(Array.from({ length: V }, (_, j) => allowedBy(bits, j))).toEqual(expected);
      // Padding bits past V stay 0 (the kernel never reads them, but nothing should claim them).
      for (let j = V; j < bits.length * 32; j++) expect(allowedBy(bits, j)).toBe(false);
    }));
  });
  it('with an allowed list, allows exactly the listed ids that the limit and the masked list allow', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 400 }), fc.array(fc.nat(450), { maxLength: 8 }), fc.array(fc.nat(299), { minLength: 1, maxLength: 12 }),
      (V, limit, masked, allowed0) => {
        const allowed = allowed0.filter((id) => id < V);
        if (allowed.length === 0) return;
        const [m, a] = [new Set(masked), new Set(allowed)];
        const expected = Array.from({ length: V }, (_, j) => j < limit && !m.has(j) && a.has(j));
        if (!expected.some((x) => x)) {
          expect(() => vocabBitmask({ limit, masked, allowed }, V)).toThrow(/masks every id/);
          return;
        }
        const bits = vocabBitmask({ limit, masked, allowed }, V);
        expect(Array.from({ length: V }, (_, j) => allowedBy(bits, j))).toEqual(expected);
      }));
  });
  it('names the field of bad input', () => {
    expect(() => vocabBitmask({ limit: 10, allowed: [3, 10] }, 10, 'generate.vocabMask')).toThrow(/generate\.vocabMask\.allowed: 10 is not a token id in \[0, 10\)/);
    expect(() => vocabBitmask({ limit: 10, allowed: [1.5] }, 10)).toThrow(/vocabMask\.allowed/);
    expect(() => vocabBitmask({ limit: 10, allowed: [] }, 10)).toThrow(/masks every id/);
    expect(() => vocabBitmask({ limit: 0 }, 10, 'generate.vocabMask')).toThrow(/generate\.vocabMask\.limit/);
    expect(() => vocabBitmask({ limit: 5, masked: [-1] }, 10)).toThrow(/vocabMask\.masked/);
    expect(() => vocabBitmask({ limit: 2, masked: [0, 1] }, 10)).toThrow(/masks every id/);
  });
  it('the reference writes −Inf to masked columns of every row and leaves the rest', () => {
    const V = 37;
    const logits = Float32Array.from({ length: 3 * V }, (_, i) => Math.sin(i));
    const bits = vocabBitmask({ limit: 33, masked: [0, 31, 32] }, V);
    const out = vocabMaskRef(logits, 3, V, bits);
    for (let r = 0; r < 3; r++) for (let j = 0; j < V; j++) {
      const masked = j >= 33 || j === 0 || j === 31 || j === 32;
      expect(out[r * V + j]).toBe(masked ? -Infinity : logits[r * V + j]);
    }
  });
});

describe('tokenizerVocabMask on real tokenizers', () => {
  it('Qwen (151936 model rows): ids past the tokenizer\'s 151669 are masked, nothing else', () => {
    const m = tokenizerVocabMask(realTokenizer('qwen3'));
    expect(m).toEqual({ limit: 151669, masked: [] });
    const bits = vocabBitmask(m, 151936);
    expect(allowedBy(bits, 151668)).toBe(true); // </think>
    expect(allowedBy(bits, 151669)).toBe(false);
    expect(allowedBy(bits, 151935)).toBe(false);
  });
  it('Llama 3: the reserved specials are masked, the chat specials are not', () => {
    const tok = realTokenizer('llama3_2');
    const m = tokenizerVocabMask(tok);
    expect(m.limit).toBe(128256);
    for (const id of m.masked ?? []) expect(tok.idToToken(id)).toMatch(/^<\|reserved_special_token_\d+\|>$/);
    expect(m.masked).toContain(tok.tokenToId('<|reserved_special_token_0|>'));
    for (const t of ['<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>']) expect(m.masked).not.toContain(tok.tokenToId(t));
  });
  it('Gemma 3: the <unusedN> placeholders are masked; an id past the model\'s 262144 rows is ignored', () => {
    const tok = realTokenizer('gemma3');
    const m = tokenizerVocabMask(tok);
    expect(m.limit).toBe(262145); // <image_soft_token> 262144 is past a Gemma 3 model's rows
    for (const id of m.masked ?? []) expect(tok.idToToken(id)).toMatch(/^<unused\d+>$/);
    expect(m.masked).toContain(tok.tokenToId('<unused0>'));
    const bits = vocabBitmask(m, 262144);
    expect(allowedBy(bits, 106)).toBe(true); // <end_of_turn>
    expect(allowedBy(bits, tok.tokenToId('<unused0>') as number)).toBe(false);
  });
  it('a tokenizer without unusedIds masks only past its size', () => {
    expect(tokenizerVocabMask(new ByteTokenizer())).toEqual({ limit: new ByteTokenizer().vocabSize, masked: [] });
  });
});
