/**
 * The Chromium side of the paper part's cross-adapter figure: `npm run bench -- --only paper`
 * starts vitest's browser mode with test/bench/chromium/vitest.config.ts (headless Chromium on
 * SwiftShader, the browser suite's flags), and this page runs the table's LoRA jobs — the same
 * jobOptions, resumed from the same warm-start checkpoints the Deno side trained (handed over in a
 * file) — and writes what they reached to the JSON file the bench named, through vitest's server
 * commands. Not a test: a runner that vitest serves.
 */
import { inject, it } from 'vitest';
import { commands } from 'vitest/browser';
import { acquireGpu } from '../../../src/gpu/device.ts';
import { ByteTokenizer } from '../../../src/model/tokenizer/byte.ts';
import type { JobCheckpoint } from '../../../src/runtime/job_checkpoint.ts';
import { LocalService } from '../../../src/runtime/local_service.ts';
import { runTraining } from '../../../src/runtime/rl_job.ts';
import { jobOptions } from '../../../src/runtime/train.ts';
import { paperJob, type CrossRequest, type CrossResult, type CrossSeed, fromTransferJson, transferJson } from '../paper_settings.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    paperCross: string;
  }
}

it('paper: the LoRA jobs on this adapter', async () => {
  const req = JSON.parse(inject('paperCross')) as CrossRequest;
  const warm = fromTransferJson(await commands.readFile(req.warmStarts)) as JobCheckpoint[];
  const ctx = await acquireGpu({ label: 'bench-paper-chromium' });
  const tok = new ByteTokenizer();
  const seeds: CrossSeed[] = [];
  try {
    for (const [i, seed] of req.settings.seeds.entries()) {
      const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids) });
      const t0 = performance.now();
      try {
        const r = await runTraining(service, jobOptions({ ...paperJob(req.settings, seed, 'lora'), checkpoint: { every: Number.MAX_SAFE_INTEGER, save: async () => {}, from: warm[i] } }));
        const seconds = (performance.now() - t0) / 1000;
        seeds.push({ seed, successBefore: r.successBefore, successAfter: r.successAfter, rewardCurve: r.rewardCurve, lossCurve: r.lossCurve, seconds });
        console.log(`chromium: seed ${seed}: held-out success ${r.successBefore} → ${r.successAfter} (${seconds.toFixed(0)} s)`);
      } finally {
        await service.close();
      }
    }
    const a = ctx.adapter;
    const out: CrossResult = {
      adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description, isFallbackAdapter: a.isFallbackAdapter },
      userAgent: navigator.userAgent,
      seeds,
    };
    await commands.writeFile(req.out, transferJson(out));
  } finally {
    ctx.destroy();
  }
});
