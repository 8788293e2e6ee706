/**
 * Admission refuses what does not fit the adapter before anything is allocated (issue 20 item 2):
 * a base whose largest tensor, or a training job whose largest buffer, is over the device's
 * maxBufferSize gets an AdmissionError naming the buffer, its bytes and the limit — nothing
 * reserved in the scheduler, nothing live in the worker's pool. The limit is faked small (the
 * GPU client's adapter summary, which admission reads; the device keeps its real limits), so a
 * tiny model stands for Qwen2.5-0.5B's 544 MB embedding on a device with 256 MiB buffers.
 */
import { assert } from 'chai';
import { crossEntropyLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import type { LoraConfig } from '../../../src/model/config.ts';
import { adapterMemoryDevice, estimateTrainingMemory, largestBaseBuffer } from '../../../src/model/memory.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { AdmissionError } from '../../../src/runtime/errors.ts';
import { GpuClient } from '../../../src/runtime/gpu_client.ts';
import { WorkerService } from '../../../src/runtime/worker_service.ts';
import type { PlainCase } from './adapter_store.ts';
import { rejection } from './helpers.ts';

const lora: LoraConfig = { rank: 4, alpha: 8, targets: ['q', 'v', 'up'] };

export const admissionCases: PlainCase[] = [
  {
    name: "admission: a base or a job with a buffer over the adapter's maxBufferSize is refused with the numbers, before anything is allocated",
    async fn() {
      const cfg = preset('tiny-gpt2');
      const tok = new ByteTokenizer();
      const gpu = await GpuClient.start();
      const real = gpu.adapter;
      const withLimit = (maxBufferSize: number) => void (gpu.adapter = { ...real, limits: { ...real.limits, maxBufferSize } });
      const service = await WorkerService.start({ client: gpu, tokenizer: { kind: 'byte' } });
      try {
        const base = largestBaseBuffer(cfg);
        const live0 = (await service.memory()).liveBytes;

        // The base's embedding one word over the limit: the model is refused.
        withLimit(base.bytes - 4);
        const e1 = await rejection(service.createModel(cfg, { seed: 1, id: 'm' }));
        assert.instanceOf(e1, AdmissionError);
        assert.deepEqual((e1 as AdmissionError).numbers, { neededBytes: base.bytes, limitBytes: base.bytes - 4, limit: 'maxBufferSize', buffer: base.name });
        assert.match((e1 as Error).message, new RegExp(`tok_emb\\.weight.*${base.bytes} bytes.*maxBufferSize of ${base.bytes - 4} bytes`));
        assert.strictEqual(service.scheduler.usedBytes, 0);
        assert.strictEqual((await service.memory()).liveBytes, live0);

        // At the limit the base fits; a LoRA job of 3 × 12 tokens makes its logits in one block
        // [36, V], larger than the [V, 24] embedding: refused, naming the block.
        withLimit(base.bytes);
        const modelId = await service.createModel(cfg, { seed: 1, id: 'm' });
        const used = service.scheduler.usedBytes;
        const liveModel = (await service.memory()).liveBytes;
        const big = estimateTrainingMemory(cfg, { batch: 3, seqLen: 12, mode: 'lora', lora, device: adapterMemoryDevice(real) }).largestBuffer;
        assert.match(big.name, /^logits block \[36, /);
        const e2 = await rejection(service.createTrainingClient({ modelId, trainable: 'lora', lora, id: 'wide', schedule: { batch: 3, seqLen: 12 } }));
        assert.instanceOf(e2, AdmissionError);
        assert.deepEqual((e2 as AdmissionError).numbers, { neededBytes: big.bytes, limitBytes: base.bytes, limit: 'maxBufferSize', buffer: big.name });
        assert.strictEqual(service.scheduler.usedBytes, used);
        assert.strictEqual((await service.memory()).liveBytes, liveModel);
        assert.isUndefined((await service.memory()).owners['job:wide']);

        // One row of 12 tokens fits, and trains.
        const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora, id: 'narrow', schedule: { batch: 1, seqLen: 12 } });
        const batch = packDatums(sftDatumsFromPairs([{ prompt: '2+2=', completion: '4' }], tok),
          { rows: 1, seqLen: 12, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
        assert.isTrue(Number.isFinite((await job.forwardBackward(batch, crossEntropyLoss())).loss));
        await job.close();
      } finally {
        await service.close();
        gpu.close();
      }
    },
  },
];
