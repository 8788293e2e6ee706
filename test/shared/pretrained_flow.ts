/**
 * The pretrained job of issue 20's "Done when", shared by its Deno test and the PEFT interop
 * script: the Qwen3 tool twin (hub_twin.ts) from a Hub (the tests' fake one) → train() with the
 * model given as a repo id → calculator with Qwen3's native `<tool_call>` syntax: a short LoRA SFT
 * warm start on the environment's demonstrations (rewritten in the native syntax), then 2 LoRA
 * GRPO steps. Sized to run in seconds on a software adapter.
 */
import type { GpuContext } from '../../src/gpu/device.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import type { JobResult, StepMetrics } from '../../src/runtime/rl_job.ts';
import { train } from '../../src/runtime/train.ts';

export const TOOL_REPO = 'tiny-org/qwen3-tools';

export interface FlowRun {
  readonly result: JobResult;
  readonly steps: StepMetrics[];
}

export async function trainToolTwin(ctx: GpuContext, hub: { endpoint?: string; cacheDir: string; offline?: boolean }, seed = 0, service = new LocalService(ctx, { maxSkippedInARow: 5 })): Promise<FlowRun> {
  const steps: StepMetrics[] = [];
  try {
    const result = await train({
      env: 'calculator',
      model: TOOL_REPO,
      hub,
      service,
      seed,
      steps: 2,
      groups: 2,
      groupSize: 4,
      rows: 8,
      // Module names as PEFT takes them.
      lora: { rank: 4, targets: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] },
      warmStart: { steps: 12, demos: 48, batchSize: 4, lr: 2e-2 },
      evalEpisodes: 0,
      onStep: (m) => steps.push(m),
    });
    return { result, steps };
  } finally {
    await service.close();
  }
}
