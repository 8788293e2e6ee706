/**
 * Parsed flags (or a resumed run's run.json settings) → the job runner's options, through the
 * library's jobOptions, so the command line's job is checked like any other (job_config.ts).
 * Pure, no I/O: used by the Deno entry point, by --resume before any work, and by unit tests.
 */
import type { JobOptions } from '../runtime/rl_job.ts';
import { jobOptions } from '../runtime/train.ts';
import type { TrainOptions } from './args.ts';

/** The job a parsed command line asks for (train.ts's jobOptions: the library's defaults fill the rest). */
export function jobOptionsFrom(opts: TrainOptions): Omit<JobOptions, 'onStep' | 'onPhase'> {
  return jobOptions({
    env: opts.env,
    algo: opts.algo,
    model: opts.model,
    // An SFT job has no LoRA and no warm start of its own (jobOptions refuses them).
    ...(opts.algo === 'sft' ? {} : { lora: opts.full ? null : { rank: opts.loraRank, targets: opts.loraTargets } }),
    steps: opts.steps,
    seed: opts.seed,
    groups: opts.groups,
    groupSize: opts.groupSize,
    lr: opts.lr,
    ...(opts.algo === 'sft' ? {} : { warmStart: opts.warmstart && opts.warmstartSteps > 0 ? { steps: opts.warmstartSteps } : null }),
    evalEpisodes: opts.evalEpisodes,
  });
}
