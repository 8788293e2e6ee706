// Tinker-style front doors without a GPU: the sample callable's two forms over a recording engine
// (how Tinker's arguments map onto SampleRequests and sampler settings), and the checked options
// of createLoraTrainingClient / createFullTrainingClient.
import { configError } from './config_error.ts';
import { describe, expect, it } from 'vitest';
import type { SampleRequest } from '../../src/env/types.ts';
import { ConfigError } from '../../src/errors.ts';
import { preset } from '../../src/model/presets.ts';
import { fullTrainingOptions, loraTrainingOptions } from '../../src/runtime/clients.ts';
import { type EngineSampleResult, makeSampleCall, type SamplerSettings } from '../../src/runtime/sample_call.ts';

/** An engine that records its calls; sequence i gets tokens [key, stream, ...prompt] and a stop reason by stream parity. */
function recording() {
  const calls: { requests: readonly SampleRequest[]; settings: SamplerSettings }[] = [];
  const engine = (requests: readonly SampleRequest[], settings: SamplerSettings): Promise<readonly EngineSampleResult[]> => {
    calls.push({ requests, settings });
    return Promise.resolve(requests.map((r) => ({
      tokens: [settings.seed ?? 0, r.seed, ...r.promptTokens],
      logprobs: [-1, -2, ...r.promptTokens.map(() => -0.5)],
      ...(settings.stopReasons ? { stopReason: r.seed % 2 === 0 ? 'stop' as const : 'length' as const } : {}),
      ...(r.adapterId ? { adapter: { name: r.adapterId, version: 3 } } : {}),
    })));
  };
  return { calls, sample: makeSampleCall(engine) };
}

function configErrorOn(f: () => unknown, field: string): void {
  expect(configError(f).field).toBe(field);
}

async function rejectsConfig(p: Promise<unknown>, field: string): Promise<void> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).field).toBe(field);
}

describe('sample(requests): the agent layer\'s SampleFn, unchanged', () => {
  it('passes the requests through with default settings and returns the results as they are', async () => {
    const { calls, sample } = recording();
    const req: SampleRequest = { promptTokens: [5, 6], maxTokens: 4, stopStrings: ['\n'], stopTokens: [], temperature: 0.5, seed: 9, adapterId: 'a' };
    const out = await sample([req]);
    expect(calls).toEqual([{ requests: [req], settings: {} }]);
    expect(out).toEqual([{ tokens: [0, 9, 5, 6], logprobs: [-1, -2, -0.5, -0.5], adapter: { name: 'a', version: 3 } }]);
    expect(await sample([])).toEqual([]);
  });

  it('refuses a bare prompt without n and params (a ConfigError naming requests)', async () => {
    const { calls, sample } = recording();
    await rejectsConfig((sample as (a: unknown) => Promise<unknown>)([1, 2, 3]), 'requests');
    expect(calls).toEqual([]);
  });
});

describe('sample(prompt, n, params): Tinker\'s form', () => {
  it('maps n samples onto requests with streams 0..n-1 under the call\'s key, and answers { sequences }', async () => {
    const { calls, sample } = recording();
    const res = await sample([7, 8], 3, { maxTokens: 5, temperature: 0.7, topK: 10, topP: 0.9, stop: ['\n', 'END'], seed: 42, adapter: 'alpha@3' });
    expect(calls).toHaveLength(1);
    expect(calls[0].settings).toEqual({ topK: 10, topP: 0.9, stopReasons: true, seed: 42 });
    expect(calls[0].requests).toEqual([0, 1, 2].map((i) => ({
      promptTokens: [7, 8], maxTokens: 5, stopStrings: ['\n', 'END'], stopTokens: [], temperature: 0.7, seed: i, adapterId: 'alpha@3',
    })));
    expect(res.sequences).toEqual([0, 1, 2].map((i) => ({
      tokens: [42, i, 7, 8], logprobs: [-1, -2, -0.5, -0.5], stopReason: i % 2 === 0 ? 'stop' : 'length', adapter: { name: 'alpha@3', version: 3 },
    })));
  });

  it('takes { tokens }, stop token ids or one stop string; temperature defaults to 1', async () => {
    const { calls, sample } = recording();
    await sample({ tokens: [1] }, 1, { maxTokens: 2, stop: [0, 3], seed: 1 });
    await sample([1], 1, { maxTokens: 2, stop: 'x', seed: 1 });
    expect(calls.map((c) => [c.requests[0].stopTokens, c.requests[0].stopStrings, c.requests[0].temperature])).toEqual([[[0, 3], [], 1], [[], ['x'], 1]]);
    expect(calls[0].requests[0].adapterId).toBeUndefined();
  });

  it('without a seed, the k-th unseeded call of a client uses key k; a seeded call does not count', async () => {
    const { calls, sample } = recording();
    await sample([1], 1, { maxTokens: 1 });
    await sample([1], 1, { maxTokens: 1, seed: 77 });
    await sample([1], 1, { maxTokens: 1 });
    expect(calls.map((c) => c.settings.seed)).toEqual([0, 77, 1]);
    const other = recording();
    await other.sample([1], 1, { maxTokens: 1 });
    expect(other.calls[0].settings.seed).toBe(0); // a fresh client repeats its sequence of calls
  });

  it('checks its arguments: a ConfigError naming the field, before the engine is called', async () => {
    const { calls, sample } = recording();
    const ok = { maxTokens: 2 };
    const cases: [unknown[], string][] = [
      [[[], 1, ok], 'prompt'],
      [[{ ids: [1] }, 1, ok], 'prompt'],
      [[[1, -2], 1, ok], 'prompt[1]'],
      [[[1, 2.5], 1, ok], 'prompt[1]'],
      [[[1], 0, ok], 'n'],
      [[[1], 1.5, ok], 'n'],
      [[[1], 1, { maxTokens: 0 }], 'params.maxTokens'],
      [[[1], 1, {}], 'params.maxTokens'],
      [[[1], 1, { maxTokens: 2, temperature: -1 }], 'params.temperature'],
      [[[1], 1, { maxTokens: 2, topK: -1 }], 'params.topK'],
      [[[1], 1, { maxTokens: 2, topP: 0 }], 'params.topP'],
      [[[1], 1, { maxTokens: 2, topP: 1.5 }], 'params.topP'],
      [[[1], 1, { maxTokens: 2, seed: 2 ** 32 }], 'params.seed'],
      [[[1], 1, { maxTokens: 2, stop: ['a', 1] }], 'params.stop'],
      [[[1], 1, { maxTokens: 2, stop: 5 }], 'params.stop'],
      [[[1], 1, { maxTokens: 2, adapter: '' }], 'params.adapter'],
      [[[1], 1, { maxTokens: 2, max_tokens: 3 }], 'params.max_tokens'],
      [[[1], 1, null], 'params'],
    ];
    for (const [args, field] of cases) await rejectsConfig((sample as (...a: unknown[]) => Promise<unknown>)(...args), field);
    expect(calls).toEqual([]);
    // A failed call does not use up an unseeded key.
    await sample([1], 1, ok);
    expect(calls[0].settings.seed).toBe(0);
  });

  it('refuses an engine result without a stop reason', async () => {
    const sample = makeSampleCall((reqs) => Promise.resolve(reqs.map(() => ({ tokens: [1], logprobs: [-1] }))));
    await expect(sample([1], 1, { maxTokens: 1 })).rejects.toThrow(/no stopReason/);
  });
});

describe('createLoraTrainingClient / createFullTrainingClient options', () => {
  const gpt2 = preset('tiny-gpt2');

  it('fills Tinker\'s defaults: alpha 2·rank, every block linear of the family', () => {
    expect(loraTrainingOptions('m', gpt2, { rank: 4 })).toEqual({ modelId: 'm', trainable: 'lora', lora: { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'up', 'down'] } });
    const llama = preset('tiny-llama');
    expect(loraTrainingOptions('m', llama, { rank: 2, alpha: 3, targets: ['q', 'v'], seed: 5, id: 'j' }))
      .toEqual({ modelId: 'm', trainable: 'lora', lora: { rank: 2, alpha: 3, targets: ['q', 'v'] }, seed: 5, id: 'j' });
    expect(loraTrainingOptions('m', llama, { rank: 1 }).lora!.targets).toEqual(['q', 'k', 'v', 'o', 'gate', 'up', 'down']);
    expect(fullTrainingOptions('m')).toEqual({ modelId: 'm', trainable: 'all' });
    expect(fullTrainingOptions('m', { seed: 1, id: 'f', valueHead: true })).toEqual({ modelId: 'm', trainable: 'all', seed: 1, id: 'f', valueHead: true });
  });

  it('names the field at fault', () => {
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 0 }), 'rank');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2.5 }), 'rank');
    configErrorOn(() => loraTrainingOptions('m', gpt2, {} as never), 'rank');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, alpha: 0 }), 'alpha');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, targets: [] }), 'targets');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, targets: ['qq' as never] }), 'targets');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, seed: -1 }), 'seed');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, id: '' }), 'id');
    configErrorOn(() => loraTrainingOptions('', gpt2, { rank: 2 }), 'modelId');
    configErrorOn(() => loraTrainingOptions('m', gpt2, { rank: 2, rnak: 3 } as never), 'rnak');
    configErrorOn(() => fullTrainingOptions('m', { valueHead: 1 as never }), 'valueHead');
    configErrorOn(() => fullTrainingOptions('m', { seed: 1.5 }), 'seed');
    configErrorOn(() => fullTrainingOptions('m', { rank: 4 } as never), 'rank');
  });
});
