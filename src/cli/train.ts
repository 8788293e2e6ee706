/**
 * `npm run train` — the main job's entry point, run by Deno (`deno task train`).
 *
 * Acquires the WebGPU device (a real GPU, or the software adapter), runs the job of
 * src/runtime/rl_job.ts through the in-process service (LocalService: the Tinker-style clients
 * over the engine on this thread), shows progress on stderr, prints a summary table, and writes
 * the run folder: metrics.jsonl (one line per step, as it happens), summary.json, the trained
 * tensors (adapter.safetensors; for LoRA runs a PEFT export under peft/ and the base it belongs to
 * as a Hugging Face folder under base/) and curve.svg — and, for
 * `--resume DIR --steps N` (resume.ts), run.json and checkpoints/. A device lost mid-run is replaced
 * and the job resumes from its last checkpoint (runtime/recovery.ts).
 * `--self-check` keeps the old device check (one kernel against its CPU reference) and nothing else.
 */
import { exitCodeOf } from './exit.ts';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { WebtinkerError } from '../errors.ts';
import { acquireGpu, type GpuContext } from '../gpu/device.ts';
import { loraSpecs, parameterSpecs } from '../model/params.ts';
import { exportPeftAdapter } from '../model/peft.ts';
import { writeSafetensors } from '../model/safetensors_write.ts';
import { configToHf } from '../model/hf_config.ts';
import { exportHfWeights } from '../model/weight_names.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import { LocalService } from '../runtime/local_service.ts';
import { LocalServiceSource, runTrainingRecovering } from '../runtime/recovery.ts';
import { selfCheck } from '../runtime/self_check.ts';
import { type JobOptions, type JobResult, summaryOf } from '../runtime/rl_job.ts';
import { jobOptionsFrom } from './job_args.ts';
import { DEFAULTS, defaultOutDir, isPreset, parseTrainArgs, type TrainOptions, trainHelp } from './args.ts';
import { type OpenedPretrained, openUnlessPreset } from '../runtime/pretrained_job.ts';
import { progressBar, quietProgress } from './progress.ts';
import { metricsLine, summaryTable } from './report.ts';
import { runCurvesSvg } from './plot.ts';
import { metricsBefore, prepareRunFolder, resumedOptions } from './resume.ts';

/** The job a parsed command line asks for (job_args.ts). */
export { jobOptionsFrom };

/** Writes the trained tensors: ours as safetensors, plus PEFT's files for LoRA runs. */
async function writeWeights(dir: string, r: JobResult): Promise<string[]> {
  const { cfg, lora, tensors } = r.trained;
  const specs = lora ? loraSpecs(cfg, lora) : parameterSpecs(cfg);
  const meta: Record<string, string> = { format: 'pt', 'webtinker.model': JSON.stringify(cfg), ...(lora ? { 'webtinker.lora_config': JSON.stringify(lora) } : {}) };
  const file = join(dir, lora ? 'adapter.safetensors' : 'model.safetensors');
  await writeFile(file, writeSafetensors(specs.map((s) => ({ name: s.name, shape: s.shape, dtype: 'F32' as const, data: tensors[s.name] })), { metadata: meta }));
  const files = [file];
  if (lora) {
    // base_model_name_or_path must be something PEFT can load: the Hub repo id (with its commit as
    // the revision) or the folder of a pretrained base, else the base folder written beside the
    // adapter (a warm-started or seeded from-scratch base).
    const pre = r.trained.pretrained;
    const baseRef = pre ? (pre.job.commit === undefined ? resolve(pre.job.repo) : pre.job.repo) : r.trained.base ? resolve(join(dir, 'base')) : (cfg.name ?? cfg.family);
    const peft = exportPeftAdapter(cfg, lora, tensors, baseRef, pre?.job.commit ?? null);
    const pdir = join(dir, 'peft');
    await mkdir(pdir, { recursive: true });
    await writeFile(join(pdir, 'adapter_config.json'), JSON.stringify(peft.adapterConfig, null, 2) + '\n');
    await writeFile(join(pdir, 'adapter_model.safetensors'), writeSafetensors(peft.tensors, { metadata: peft.metadata }));
    // The base's tokenizer files beside the adapter: PeftModel users and vLLM load the tokenizer from it.
    for (const [name, bytes] of Object.entries(pre?.tokenizerFiles ?? {})) await writeFile(join(pdir, name), bytes);
    files.push(`${pdir}/`);
    if (r.trained.base) {
      // The base the adapter belongs to, as a Hugging Face folder: PEFT loads peft/ on top of it.
      const bdir = join(dir, 'base');
      await mkdir(bdir, { recursive: true });
      await writeFile(join(bdir, 'config.json'), JSON.stringify(configToHf(cfg), null, 2) + '\n');
      await writeFile(join(bdir, 'model.safetensors'), writeSafetensors(exportHfWeights(cfg, r.trained.base), { metadata: { format: 'pt' } }));
      files.push(`${bdir}/`);
    }
  }
  return files;
}

/** A finished run's outputs besides metrics.jsonl (summary.json, the weights, curve.svg); returns their paths. Also used by `npm run fleet -- fetch`. */
export async function writeRunOutputs(dir: string, result: JobResult): Promise<string[]> {
  const summary = summaryOf(result);
  const files = [join(dir, 'summary.json'), ...(await writeWeights(dir, result)), join(dir, 'curve.svg')];
  await writeFile(join(dir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  const sftJob = summary.algo === 'sft';
  await writeFile(join(dir, 'curve.svg'), runCurvesSvg({
    title: `${summary.env} · ${summary.algo} · ${summary.model} · seed ${summary.seed}`,
    subtitle: `held-out success (reward > 0) ${(100 * summary.successBefore).toFixed(1)}% → ${(100 * summary.successAfter).toFixed(1)}%`,
    reward: summary.rewardCurve,
    loss: sftJob ? [] : summary.lossCurve,
    sftLoss: summary.sftLossCurve,
    ...(summary.evalEpisodes > 0 ? { evaluation: { before: summary.successBefore, after: summary.successAfter, episodes: summary.evalEpisodes } } : {}),
  }));
  return files;
}

async function runSelfCheck(ctx: GpuContext, seed: number, log: (s: string) => void): Promise<number> {
  const r = await selfCheck(ctx, 1 << 20, seed);
  log(`self-check: residual add on ${r.elements} elements, ${r.mismatches} mismatches against the CPU reference`);
  return r.mismatches === 0 ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  let opts: TrainOptions;
  let job: Omit<JobOptions, 'onStep' | 'onPhase'>;
  let opened: OpenedPretrained | undefined;
  try {
    opts = parseTrainArgs(argv);
    if (opts.help) {
      console.log(trainHelp());
      return 0;
    }
    if (opts.resume) opts = await resumedOptions(opts);
    if (!isPreset(opts.model)) {
      // Config, tokenizer and chat template now (downloading what the cache lacks; the weights too,
      // so a run never stops half-way for the network); the run pins the commit in run.json.
      if (!opts.quiet) console.error(`loading ${opts.model}${opts.revision ? `@${opts.revision}` : ''}…`);
      opened = await openUnlessPreset(opts.model, opts.revision !== undefined ? { revision: opts.revision } : {});
      if (opened?.job.commit !== undefined) opts = { ...opts, revision: opened.job.commit };
    }
    job = jobOptionsFrom(opts, opened);
  } catch (e) {
    return exitCodeOf(e);
  }
  const log = opts.quiet ? () => {} : (s: string) => console.error(s);
  const ctx = await acquireGpu({ label: 'train' });
  try {
    const a = ctx.adapter;
    log(`device: ${a.description || a.vendor || 'unknown'}${a.isFallbackAdapter ? ' (software)' : ''} on ${a.host}`);
    if (opts.selfCheck) return await runSelfCheck(ctx, opts.seed, log);

    const dir = opts.out ?? defaultOutDir(opts);
    await mkdir(dir, { recursive: true });
    const metrics = join(dir, 'metrics.jsonl');
    const { checkpoints, from } = await prepareRunFolder(dir, opts);
    if (from) log(`resuming ${dir}/ from its checkpoint after ${from.phase === 'sft' ? 'SFT' : 'RL'} step ${from.step}`);
    const progress = opts.quiet ? quietProgress() : progressBar(process.stderr);
    let pending = Promise.resolve();
    const tok = new ByteTokenizer();
    // After a device loss the source brings a new device and service, and the job resumes from its last checkpoint.
    const source = new LocalServiceSource(ctx, (c) => new LocalService(c, { decode: (ids) => tok.decode(ids), maxSkippedInARow: 5 }), { label: 'train' });
    log(`job: ${job.env.name}, ${job.algo}, ${job.model.name}, ${job.lora ? `LoRA r=${job.lora.rank}` : 'full'}, ${job.steps} steps of ${job.groups}×${job.groupSize} episodes, seed ${job.seed} → ${dir}/`);
    let result: JobResult;
    try {
      result = await runTrainingRecovering(source, {
        ...job,
        // A checkpoint waits for the metrics lines before it, so metrics.jsonl always covers it.
        checkpoint: { ...checkpoints.checkpointing(opts.checkpointEvery ?? DEFAULTS.checkpointEvery, from), save: async (c) => (await pending, await checkpoints.save(c)) },
        onPhase: (phase, d) => {
          if (phase === 'warmstart') progress.phase('sft', d.steps ?? 0);
          else if (phase === 'rl') progress.phase(job.algo, d.steps ?? 0);
          else progress.note(phase === 'eval-before' ? `evaluating on ${job.evalEpisodes} held-out episodes (before RL)…` : `evaluating on ${job.evalEpisodes} held-out episodes…`);
        },
        onWarning: (message) => progress.note(`warning: ${message}`),
        onStep: (m) => {
          progress.step(m);
          pending = pending.then(() => appendFile(metrics, metricsLine(m) + '\n'));
        },
      }, {
        ...(opened ? { pretrained: opened } : {}),
        latest: () => checkpoints.latest(),
        onRecover: (r) => {
          log(`\nGPU lost (${r.error instanceof Error ? r.error.message : String(r.error)}); resuming on a new device from ${r.from ? `the checkpoint after ${r.from.phase === 'sft' ? 'SFT' : 'RL'} step ${r.from.step}` : 'the start'}`);
          // The steps after that checkpoint run again: their metrics lines go.
          pending = pending.then(async () => writeFile(metrics, r.from ? metricsBefore(await readFile(metrics, 'utf8'), r.from) : ''));
        },
      });
    } finally {
      progress.stop();
      await pending;
      await source.close();
    }
    const summary = summaryOf(result);
    const files = [metrics, ...(await writeRunOutputs(dir, result))];
    if (opts.json) await writeFile(opts.json, JSON.stringify(summary, null, 2) + '\n');
    if (!opts.quiet) console.log(summaryTable(summary, files));
    return 0;
  } finally {
    ctx.destroy();
  }
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  const argv = (globalThis as unknown as { Deno: { args: string[]; exit(c: number): never } }).Deno;
  main(argv.args).then((code) => argv.exit(code), (e) => {
    console.error(e instanceof WebtinkerError ? `error: ${e.message}` : e);
    argv.exit(1);
  });
}


