// A batch remembers the aggregation its token weights were packed for (packDatums), so a loss of
// another aggregation is refused instead of trained with the wrong weights (checked in the Trainer).
import { describe, expect, it } from 'vitest';
import { packDatums } from '../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../src/algorithms/sft.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';

describe('packing aggregation', () => {
  it('is recorded on every batch', () => {
    const tok = new ByteTokenizer();
    const d = sftDatumsFromPairs([{ prompt: 'a', completion: 'bc' }, { prompt: 'd', completion: 'efg' }], tok);
    for (const aggregation of ['token_mean', 'sequence_mean'] as const) {
      const step = packDatums(d, { rows: 1, seqLen: 8, seed: 0, padId: tok.padId, aggregation });
      expect(step.batches.map((b) => b.aggregation)).toEqual([aggregation, aggregation]);
    }
  });
});
