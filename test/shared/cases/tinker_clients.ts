/**
 * Tinker's names on both services, in both GPU suites: createLoraTrainingClient /
 * createFullTrainingClient front doors, and `sample(prompt, n, params)` beside `sample(requests)`
 * on snapshot and inference clients — the same sequences on the in-process engine and in the GPU
 * worker, reproducible with a seed, sequence i of n being request-form stream i under key `seed`,
 * top-k 1 being greedy, and stop reasons as the engine saw them.
 */
import { assert } from 'chai';
import { crossEntropyLoss } from '../../../src/algorithms/loss_spec.ts';
import { forwardBackwardCustom } from '../../../src/runtime/custom_loss.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import type { SampleRequest } from '../../../src/env/types.ts';
import { ConfigError } from '../../../src/errors.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { type SampledSequence, saveWeightsAndGetSamplingClient, type ServiceClient } from '../../../src/runtime/clients.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { WorkerService } from '../../../src/runtime/worker_service.ts';
import { testGpu } from '../gpu.ts';
import type { PlainCase } from './adapter_store.ts';
import { rejection } from './helpers.ts';

const tok = new ByteTokenizer();
const batchOf = () =>
  packDatums(sftDatumsFromPairs([{ prompt: '2+2=', completion: '4' }, { prompt: '3+4=', completion: '7' }], tok), {
    rows: 2, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false,
  }).batches[0];

/** What one service's clients sample through Tinker's names (compared across services). */
interface Trace {
  seeded: SampledSequence[];
  inference: SampledSequence[];
}

/** Everything the case checks on one service; returns what it sampled. */
async function exercise(service: ServiceClient): Promise<Trace> {
  const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 3, id: 'tinker-base' });
  const prompt = tok.encode('2+2=');

  // Front doors: checked options, typed errors naming the field.
  const bad = await rejection(service.createLoraTrainingClient(modelId, { rank: 0 }));
  assert.instanceOf(bad, ConfigError);
  assert.strictEqual((bad as ConfigError).field, 'rank');
  const lora = await service.createLoraTrainingClient(modelId, { rank: 2, targets: ['q', 'v'], seed: 5, id: 'tinker-lora' });
  assert.deepEqual([lora.id, lora.modelId, lora.trainable], ['tinker-lora', modelId, 'lora']);
  await lora.forwardBackward(batchOf(), crossEntropyLoss());
  assert.isFalse((await lora.optimStep({ lr: 5e-2 })).skipped);
  const full = await service.createFullTrainingClient(modelId, { seed: 1, id: 'tinker-full' });
  assert.strictEqual(full.trainable, 'all');
  // (A ConfigError from the GPU worker arrives through comlink as an Error with its message: "field: why".)
  assert.match(String(await rejection(full.saveWeightsForSampler('x'))), /trainable: .*only a LoRA job publishes/);
  await full.close();

  // Tinker's sample on a snapshot: reproducible with a seed; sequence i does not depend on n.
  const snap = await lora.samplingClient();
  const params = { maxTokens: 5, temperature: 1, seed: 11 };
  const three = await snap.sample(prompt, 3, params);
  assert.lengthOf(three.sequences, 3);
  for (const s of three.sequences) {
    assert.lengthOf(s.tokens, 5);
    assert.lengthOf(s.logprobs, 5);
    assert.strictEqual(s.stopReason, 'length');
    assert.isTrue(s.logprobs.every((l) => Number.isFinite(l) && l <= 0));
  }
  assert.deepEqual((await snap.sample({ tokens: prompt }, 3, params)).sequences, three.sequences, 'same seed, same sequences');
  assert.deepEqual((await snap.sample(prompt, 1, params)).sequences[0], three.sequences[0], 'sequence 0 of 1 = sequence 0 of 3');
  assert.notDeepEqual((await snap.sample(prompt, 3, { ...params, seed: 12 })).sequences.map((s) => s.tokens), three.sequences.map((s) => s.tokens));
  // Faithful to the request form: under key 0, sequence i is the request with stream (seed) i.
  const req = (seed: number): SampleRequest => ({ promptTokens: prompt, maxTokens: 5, stopStrings: [], stopTokens: [], temperature: 1, seed });
  const asRequests = await snap.sample([req(0), req(1)]);
  const keyZero = await snap.sample(prompt, 2, { ...params, seed: 0 });
  assert.deepEqual(keyZero.sequences.map((s) => [s.tokens, s.logprobs]), asRequests.map((r) => [r.tokens, r.logprobs]));
  assert.notProperty(asRequests[0], 'stopReason', 'the request form returns SampleResults as before');
  // top-k 1 at temperature 1 is greedy; a stop token ends the sequence with stopReason 'stop'.
  const greedy = await snap.sample(prompt, 1, { maxTokens: 5, temperature: 0, seed: 1 });
  const topK1 = await snap.sample(prompt, 2, { maxTokens: 5, temperature: 1, topK: 1, seed: 9 });
  for (const s of topK1.sequences) assert.deepEqual(s.tokens, greedy.sequences[0].tokens);
  const first = greedy.sequences[0].tokens[0];
  const stopped = await snap.sample(prompt, 1, { maxTokens: 5, temperature: 0, stop: [first] });
  assert.deepEqual([stopped.sequences[0].tokens, stopped.sequences[0].stopReason], [[first], 'stop']);
  const stopString = await snap.sample(prompt, 1, { maxTokens: 5, temperature: 0, stop: tok.decode([first]) });
  assert.deepEqual([stopString.sequences[0].tokens, stopString.sequences[0].stopReason], [[first], 'stop']);
  const badCall = await rejection(snap.sample(prompt, 2, { maxTokens: 5, topP: 2 }));
  assert.strictEqual((badCall as ConfigError).field, 'params.topP');
  // Streaming: each sequence's tokens arrive a decode chunk at a time, in order, the last call
  // marked done; together they are the returned sequences, bitwise.
  if (service instanceof LocalService) {
    const streamed: number[][] = [[], [], []];
    const done = [0, 0, 0];
    const whole = await snap.sample(prompt, 3, { ...params, onTokens: (i, t, d) => (streamed[i].push(...t), d && done[i]++) });
    assert.deepEqual(streamed, whole.sequences.map((s) => [...s.tokens]));
    assert.deepEqual(done, [1, 1, 1]);
    assert.deepEqual(whole.sequences, three.sequences, 'streaming changes nothing');
  } else {
    const refused = await rejection(snap.sample(prompt, 1, { ...params, onTokens: () => {} }));
    assert.strictEqual((refused as ConfigError).field, 'params.onTokens');
  }
  await snap.close();

  // An inference client names the published adapter in params; the sequences say which version.
  assert.deepInclude(await lora.saveWeightsForSampler('tinker-alpha'), { name: 'tinker-alpha', version: 1, modelId });
  const inf = await service.createInferenceClient(modelId);
  const published = await inf.sample(prompt, 2, { ...params, adapter: 'tinker-alpha' });
  for (const s of published.sequences) assert.deepEqual(s.adapter, { name: 'tinker-alpha', version: 1 });
  assert.deepEqual(published.sequences.map((s) => s.tokens), three.sequences.slice(0, 2).map((s) => s.tokens), 'the published version is the snapshot\'s weights');
  const base = await inf.sample(prompt, 1, params);
  assert.isUndefined(base.sequences[0].adapter);
  await inf.close();
  // The one-liner: publish the next version and get a sampling client over exactly those weights.
  const { published: v2, sampler } = await saveWeightsAndGetSamplingClient(lora, 'tinker-alpha');
  assert.deepInclude(v2, { name: 'tinker-alpha', version: 2, modelId });
  assert.deepEqual((await sampler.sample(prompt, 2, params)).sequences.map((s) => s.tokens), three.sequences.slice(0, 2).map((s) => s.tokens));
  await sampler.close();
  await lora.close();
  return { seeded: [...three.sequences], inference: [...published.sequences] };
}

/**
 * forwardBackwardCustom with the loss −(1/N) Σ logπ over the N trained tokens (∂/∂logπ = −1/N)
 * trains exactly as the engine's token-mean cross-entropy: the same loss and the same weights
 * after an AdamW step, within f32 rounding.
 */
async function customLossMatchesCrossEntropy(service: ServiceClient): Promise<void> {
  const modelId = await service.createModel(preset('tiny-gpt2'), { seed: 4 });
  const datums = sftDatumsFromPairs([{ prompt: '2+2=', completion: '4' }, { prompt: '13+4=', completion: '17' }, { prompt: 'hi', completion: ' there' }], tok);
  const lora = { rank: 2, alpha: 4, targets: ['q', 'v', 'up'] as const };
  const a = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { ...lora, targets: [...lora.targets] }, seed: 1 });
  const b = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { ...lora, targets: [...lora.targets] }, seed: 1 });
  try {
    // B starts at 0: one step first so the adapter's gradients are all non-zero.
    for (const c of [a, b]) {
      await c.forwardBackward(packDatums(datums, { rows: 3, seqLen: 16, seed: 0, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0], crossEntropyLoss());
      await c.optimStep({ lr: 1e-2 });
    }
    const n = datums.reduce((s, d) => s + d.lossMaskT.reduce((x, m) => x + m, 0), 0);
    const r = await forwardBackwardCustom(a, datums, (seqs) => ({
      loss: -seqs.reduce((s, q) => s + q.logprobsT.reduce((x, lp, t) => x + lp * q.datum.lossMaskT[t], 0), 0) / n,
      dlogprobsST: seqs.map((q) => q.datum.lossMaskT.map((m) => -m / n)),
    }), { rows: 3, maxSeqLen: 64, padId: tok.padId });
    const ce = await b.forwardBackward(packDatums(datums, { rows: 3, seqLen: 16, seed: 0, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0], crossEntropyLoss());
    assert.approximately(r.loss, ce.loss, 1e-4 * Math.abs(ce.loss));
    await a.optimStep({ lr: 1e-2 });
    await b.optimStep({ lr: 1e-2 });
    const [wa, wb] = [await a.weights(), await b.weights()];
    for (const k of Object.keys(wb)) {
      const d = Math.max(...wa[k].map((x, i) => Math.abs(x - wb[k][i])));
      assert.isAtMost(d, 1e-5, `${k}: |Δ| ${d}`);
    }
    assert.isTrue(Object.keys(wb).some((k) => k.endsWith('lora_b') && wb[k].some((x) => x !== 0)), 'the steps moved B off its zero init');
    // A batch packed for sequence_mean is refused with a token_mean loss (its weights would be the wrong ones).
    const seqMean = packDatums(datums, { rows: 3, seqLen: 16, seed: 0, padId: tok.padId, aggregation: 'sequence_mean', shuffle: false }).batches[0];
    const refused = await rejection(a.forwardBackward(seqMean, crossEntropyLoss()));
    assert.match((refused as Error).message, /loss\.aggregation: is token_mean, but the batch was packed for sequence_mean/);
  } finally {
    await a.close();
    await b.close();
    await service.releaseModel(modelId);
  }
}

export const tinkerClientCases: PlainCase[] = [
  {
    name: 'tinker names: front doors and sample(prompt, n, params) on the in-process engine and in the GPU worker, the same sequences on both',
    async fn() {
      const local = new LocalService(await testGpu(), { decode: (ids) => tok.decode(ids) });
      let here: Trace;
      try {
        here = await exercise(local);
        await customLossMatchesCrossEntropy(local);
      } finally {
        await local.close();
      }
      const worker = await WorkerService.start({ tokenizer: { kind: 'byte' } });
      try {
        const there = await exercise(worker);
        assert.deepEqual(there, here, 'the GPU worker samples what the in-process engine samples');
        await customLossMatchesCrossEntropy(worker);
      } finally {
        await worker.close();
      }
    },
  },
];
