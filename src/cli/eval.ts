/**
 * `npm run eval -- RUN_DIR [--episodes N] [--seed S] [--json FILE]` — re-measures a trained run:
 * its job from run.json (checked as `npm run train` checks it), its trained weights from the run
 * folder (adapter.safetensors on base/ or on the pretrained checkpoint it names; a full run's
 * model.safetensors), then held-out episodes with the job's agent (tokenizer, format, limits).
 * With the run's own seed and episode count it measures exactly the episodes of the run's final
 * evaluation, so it reproduces summary.json's `successAfter` — a check that the folder holds what
 * was trained; other seeds give fresh held-out episodes.
 */
import { exitCodeOf } from './exit.ts';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { ConfigError } from '../errors.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import { openByteSource } from '../model/bytes.ts';
import { openSafetensors } from '../model/safetensors.ts';
import { importHfWeights } from '../model/weight_names.ts';
import type { CreateModelOptions, HostParams } from '../runtime/clients.ts';
import { evaluate } from '../runtime/evaluate.ts';
import { Policy, type PolicyParts } from '../runtime/policy.ts';
import { openUnlessPreset } from '../runtime/pretrained_job.ts';
import { agentSettingsOf } from '../runtime/rl_job.ts';
import { parseTrainArgs } from './args.ts';
import { jobOptionsFrom } from './job_args.ts';
import { resumedOptions } from './resume.ts';

export const EVAL_HELP = `Usage: npm run eval -- RUN_DIR [--episodes N] [--seed S] [--json FILE]

Re-measures the trained run in RUN_DIR (a folder written by npm run train) on held-out episodes
of its environment: its job from RUN_DIR/run.json, its weights from the folder.
  --episodes N   held-out episodes (default: the run's --eval-episodes, else 128)
  --seed S       seed of the held-out episodes (default: the run's; then the run's final
                 evaluation is measured again and should equal summary.json's successAfter)
  --json FILE    write the result as JSON to FILE
  -h, --help     print this help`;

/** A safetensors file's tensors (f32) and its metadata. */
async function readTensors(file: string): Promise<{ tensors: HostParams; meta: Readonly<Record<string, string>> }> {
  const f = await openSafetensors(await openByteSource(file).catch((e) => {
    throw new ConfigError('RUN_DIR', `${file} cannot be read (${(e as Error).message}): has the run finished?`);
  }));
  try {
    return { tensors: await f.allF32(), meta: f.metadata ?? {} };
  } finally {
    await f.close();
  }
}

export interface EvalResult {
  readonly run: string;
  readonly env: string;
  readonly episodes: number;
  readonly seed: number;
  readonly success: number;
  readonly meanReward: number;
  /** summary.json's successAfter, when the run wrote one. */
  readonly runSuccessAfter: number | null;
}

/** A trained run folder as a policy: its job (run.json), its weights and its agent's settings. */
export async function openRun(dir: string): Promise<{ job: ReturnType<typeof jobOptionsFrom>; parts: PolicyParts; successAfter: number | null }> {
  const settings = await resumedOptions({ ...parseTrainArgs([]), resume: dir, steps: 1 });
  const opened = await openUnlessPreset(settings.model, settings.revision !== undefined ? { revision: settings.revision } : {});
  const job = jobOptionsFrom(settings, opened);
  const summary = await readFile(join(dir, 'summary.json'), 'utf8').then((t) => JSON.parse(t) as { successAfter?: number }, () => null);
  const lora = job.algo === 'sft' && !opened ? null : job.lora;
  const trained = await readTensors(join(dir, lora ? 'adapter.safetensors' : 'model.safetensors'));
  const cfg: ModelConfig = trained.meta['webtinker.model'] ? JSON.parse(trained.meta['webtinker.model']) : job.model;
  let base: CreateModelOptions;
  if (!lora) base = { params: trained.tensors };
  else if (opened) base = { pretrained: opened.serviceRef };
  else base = { params: await readTensorsHf(join(dir, 'base', 'model.safetensors'), cfg) };
  const parts: PolicyParts = { cfg, base, lora: lora as LoraConfig | null, adapter: lora ? trained.tensors : null, agent: agentSettingsOf({ ...job, model: cfg }, opened ?? null) };
  return { job, parts, successAfter: summary?.successAfter ?? null };
}

export async function evalRun(dir: string, opts: { episodes?: number; seed?: number } = {}): Promise<EvalResult> {
  const { job, parts, successAfter } = await openRun(dir);
  const episodes = opts.episodes ?? (job.evalEpisodes > 0 ? job.evalEpisodes : 128);
  const seed = opts.seed ?? job.seed;
  const policy = new Policy(parts);
  try {
    const r = await evaluate(job.env, await policy.sampleFn(), episodes, seed, parts.agent);
    return { run: dir, env: job.env.name, episodes, seed, success: r.success, meanReward: r.meanReward, runSuccessAfter: successAfter };
  } finally {
    await policy.close();
  }
}

/** base/model.safetensors (Hugging Face names) as our canonical parameters. */
async function readTensorsHf(file: string, cfg: ModelConfig): Promise<HostParams> {
  const f = await openSafetensors(await openByteSource(file).catch((e) => {
    throw new ConfigError('RUN_DIR', `${file} cannot be read (${(e as Error).message}): a LoRA run from scratch keeps its base there`);
  }));
  try {
    return await importHfWeights(cfg, f);
  } finally {
    await f.close();
  }
}

async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { episodes: { type: 'string' }, seed: { type: 'string' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
    if (values.help) {
      console.log(EVAL_HELP);
      return 0;
    }
    if (positionals.length !== 1) throw new ConfigError('RUN_DIR', `expected one run folder, got ${positionals.length} (see --help)`);
  } catch (e) {
    console.error(`error: ${e instanceof Error ? e.message : e}`);
    return 2;
  }
  const int = (k: string, min: number) => {
    const v = values[k] as string | undefined;
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > 0xffffffff) throw new ConfigError(`--${k}`, `expected an integer ≥ ${min}, got "${v}"`);
    return Number(v);
  };
  try {
    const episodes = int('episodes', 1);
    const seed = int('seed', 0);
    const r = await evalRun(positionals[0], { ...(episodes !== undefined ? { episodes } : {}), ...(seed !== undefined ? { seed } : {}) });
    const same = r.runSuccessAfter === null ? '' : ` (the run's final evaluation said ${(100 * r.runSuccessAfter).toFixed(1)}%)`;
    console.log(`${r.env}: held-out success (reward > 0) ${(100 * r.success).toFixed(1)}% over ${r.episodes} episodes (seed ${r.seed}), mean reward ${r.meanReward.toFixed(3)}${same}`);
    if (values.json) await writeFile(values.json as string, JSON.stringify(r, null, 2) + '\n');
    return 0;
  } catch (e) {
    return exitCodeOf(e);
  }
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
