// Admission against the adapter's limits, from the estimate alone: the largest buffer a base or a
// job asks for against maxBufferSize (src/runtime/admission.ts), and the numbers an AdmissionError
// carries (that one, and the scheduler's budget) — on Qwen2.5-0.5B's real shape, nothing allocated.
import { describe, expect, it } from 'vitest';
import type { LoraConfig } from '../../src/model/config.ts';
import { configFromHf } from '../../src/model/hf_config.ts';
import { estimateTrainingMemory, largestBaseBuffer } from '../../src/model/memory.ts';
import { checkBufferFits } from '../../src/runtime/admission.ts';
import { AdmissionError } from '../../src/runtime/errors.ts';
import { Scheduler } from '../../src/runtime/scheduler.ts';
import { QWEN25_05B_CONFIG } from '../shared/pretrained_configs.ts';

const qwen = configFromHf(QWEN25_05B_CONFIG);
const V = 151936, C = 896;
const lora: LoraConfig = { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o', 'up', 'down'] };
const device = { maxStorageBufferBindingSize: 2 ** 27, textureReads: true, loopBudget: 65535 }; // llvmpipe's
const MiB = 2 ** 20;

function refusal(f: () => void): AdmissionError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(AdmissionError);
    return e as AdmissionError;
  }
  throw new Error('expected an AdmissionError');
}

describe('largest buffers', () => {
  it("a Qwen2.5-0.5B base's is its f32 tied embedding, also with an f16 base", () => {
    for (const bytes of [2, 4] as const) expect(largestBaseBuffer(qwen, bytes)).toEqual({ name: `tok_emb.weight [${V}, ${C}] f32`, bytes: 4 * V * C });
  });

  it("a full job's is its f32 copy of the embedding; a LoRA job's is a logits block of the rows one binding holds", () => {
    const full = estimateTrainingMemory(qwen, { batch: 1, seqLen: 256, mode: 'full', device });
    expect(full.largestBuffer.bytes).toBe(4 * V * C);
    expect(full.largestBuffer.name).toMatch(/^tok_emb\.weight .*job's copy/);
    const l = estimateTrainingMemory(qwen, { batch: 1, seqLen: 256, mode: 'lora', lora, device });
    const rows = Math.floor((2 ** 27 - 16) / (4 * V));
    expect(rows).toBe(220);
    expect(l.largestBuffer).toEqual({ name: `logits block [${rows}, ${V}] f32`, bytes: 4 * rows * V });
    // At B·T = 8·4096 the [N, F] activations outgrow the logits block.
    const long = estimateTrainingMemory(qwen, { batch: 8, seqLen: 4096, mode: 'lora', lora, device });
    expect(long.largestBuffer).toEqual({ name: 'activations [32768, 4864] f32', bytes: 4 * 32768 * 4864 });
  });
});

describe('checkBufferFits', () => {
  const limits = (maxBufferSize?: number): { limits: Record<string, number> } => ({ limits: maxBufferSize === undefined ? {} : { maxBufferSize } });

  it('refuses a buffer over maxBufferSize with the buffer and both numbers; admits one at the limit', () => {
    const need = estimateTrainingMemory(qwen, { batch: 1, seqLen: 256, mode: 'full', device }).largestBuffer;
    const e = refusal(() => checkBufferFits('big', need, limits(256 * MiB), 'LoRA instead'));
    expect(e.jobId).toBe('big');
    expect(e.numbers).toEqual({ neededBytes: 4 * V * C, limitBytes: 256 * MiB, limit: 'maxBufferSize', buffer: need.name });
    expect(e.message).toContain(`${4 * V * C} bytes`);
    expect(e.message).toContain(`maxBufferSize of ${256 * MiB} bytes`);
    expect(e.message).toContain('tok_emb.weight');
    expect(() => checkBufferFits('fits', need, limits(need.bytes), '')).not.toThrow();
    expect(() => checkBufferFits('unknown', need, limits(undefined), '')).not.toThrow();
  });

  it('a LoRA job on the same base fits where the full job does not', () => {
    const need = estimateTrainingMemory(qwen, { batch: 1, seqLen: 256, mode: 'lora', lora, device }).largestBuffer;
    expect(() => checkBufferFits('lora', need, limits(256 * MiB), '')).not.toThrow();
  });
});

describe('budget refusals carry their numbers', () => {
  it('the scheduler names the job, its estimate and the budget', () => {
    const s = new Scheduler({ memoryBudgetBytes: 100 });
    const e = refusal(() => void s.submit({ id: 'huge', kind: 'full_rl', memoryBytes: 101 }));
    expect(e.numbers).toEqual({ neededBytes: 101, limitBytes: 100, limit: 'memoryBudgetBytes' });
  });
});
