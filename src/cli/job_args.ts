/**
 * Parsed flags (or a resumed run's run.json settings) → the job runner's options, through the
 * library's jobOptions, so the command line's job is checked like any other (job_config.ts).
 * Pure, no I/O: used by the Deno entry point, by --resume before any work, and by unit tests.
 */
import type { OpenedPretrained } from '../runtime/pretrained_job.ts';
import type { JobOptions } from '../runtime/rl_job.ts';
import { jobOptions } from '../runtime/train.ts';
import { isPreset, type TrainOptions } from './args.ts';

/**
 * The job a parsed command line asks for (train.ts's jobOptions: the library's defaults fill the
 * rest). A pretrained --model must come `opened` (the entry point opens it: that is I/O).
 */
export function jobOptionsFrom(opts: TrainOptions, opened?: OpenedPretrained): Omit<JobOptions, 'onStep' | 'onPhase'> {
  const scratch = isPreset(opts.model);
  const warm = !opts.warmstart || opts.warmstartSteps === 0 ? null : opts.warmstartSteps !== undefined ? { steps: opts.warmstartSteps } : undefined;
  return jobOptions({
    env: opts.env,
    algo: opts.algo,
    model: opened ?? opts.model,
    // A from-scratch SFT job has no LoRA and no warm start of its own (jobOptions refuses them);
    // a pretrained one trains LoRA unless --full.
    ...(opts.algo === 'sft' && scratch ? {} : { lora: opts.full ? null : { rank: opts.loraRank, targets: opts.loraTargets } }),
    steps: opts.steps,
    seed: opts.seed,
    groups: opts.groups,
    groupSize: opts.groupSize,
    ...(opts.lr !== undefined ? { lr: opts.lr } : {}),
    ...(opts.algo === 'sft' || warm === undefined ? {} : { warmStart: warm }),
    evalEpisodes: opts.evalEpisodes,
  });
}
