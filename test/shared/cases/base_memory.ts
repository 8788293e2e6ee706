/**
 * A base's kept weight texture copies (kept_texels.ts; where the matmul reads textures: llvmpipe)
 * are one set per base, bounded by baseKeptTexelBytes, and admission reserves them with the base
 * (issue 22 item 8: they were live but unreserved, and counted against the multi-LoRA bound).
 * Where the adapter reads no textures (SwiftShader) both are 0, and the case checks just that.
 */
import { assert } from 'chai';
import { crossEntropyLoss } from '../../../src/algorithms/loss_spec.ts';
import { packDatums } from '../../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../../src/algorithms/sft.ts';
import { KEPT_TEXELS_OWNER } from '../../../src/gpu/kept_texels.ts';
import { adapterMemoryDevice, baseKeptTexelBytes } from '../../../src/model/memory.ts';
import { countParameters } from '../../../src/model/params.ts';
import { preset } from '../../../src/model/presets.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import { WorkerService } from '../../../src/runtime/worker_service.ts';
import type { PlainCase } from './adapter_store.ts';

export const baseMemoryCases: PlainCase[] = [
  {
    name: 'base memory: kept weight texture copies are one set per base, within baseKeptTexelBytes, reserved with the base',
    async fn() {
      const tok = new ByteTokenizer();
      // gpt2-100k: C = 64, so its MLP weights (64 × 256) and head (259 × 64) are large enough to be kept.
      const cfg = preset('gpt2-100k');
      const batch = packDatums(sftDatumsFromPairs([{ prompt: '1+2=', completion: '3' }, { prompt: '4+4=', completion: '8' }], tok),
        { rows: 2, seqLen: 8, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
      const service = await WorkerService.start({ tokenizer: { kind: 'byte' } });
      try {
        const device = adapterMemoryDevice(service.adapter);
        const bound = baseKeptTexelBytes(cfg, device);
        assert.strictEqual(bound > 0, device.textureReads === true);
        const modelId = await service.createModel(cfg, { seed: 1 });
        assert.strictEqual(service.scheduler.stats(`model:${modelId}`).memoryBytes, 4 * countParameters(cfg) + bound);
        const kept: number[] = [];
        for (let i = 0; i < 2; i++) {
          const job = await service.createTrainingClient({ modelId, trainable: 'lora', lora: { rank: 2, alpha: 4, targets: ['q', 'up'] }, seed: i, schedule: { batch: 2, seqLen: 8 } });
          await job.forwardBackward(batch, crossEntropyLoss());
          await job.optimStep({ lr: 1e-2 });
          kept.push((await service.memory()).owners[KEPT_TEXELS_OWNER]?.currentBytes ?? 0);
        }
        const sampler = await service.createSamplingClient(modelId);
        await sampler.sample([{ promptTokens: tok.encode('1+2='), maxTokens: 2, stopStrings: [], stopTokens: [], temperature: 1, seed: 3 }]);
        kept.push((await service.memory()).owners[KEPT_TEXELS_OWNER]?.currentBytes ?? 0);
        // One set whatever the number of jobs and samplers on the base, never past its bound.
        assert.deepEqual(kept, [kept[0], kept[0], kept[0]]);
        assert.isAtMost(kept[0], bound);
        assert.strictEqual(kept[0] > 0, device.textureReads === true);
      } finally {
        await service.close();
      }
    },
  },
];
