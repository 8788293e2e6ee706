/**
 * `train(settings)`: one call from an environment to a trained adapter. It fills every setting the
 * caller leaves out with the defaults of `npm run train` (the same values: the CLI builds its job
 * with `jobOptions` too), acquires the WebGPU device unless given a service, and runs the job
 * runner (`runTraining`: SFT warm start on the environment's demonstrations, held-out evaluation,
 * RL, evaluation again) in-process.
 *
 * The environment is a built-in name, a JobEnv, or any single-agent `EnvSpec` (tools and
 * multi-turn dialogue included): a newcomer's environment needs nothing else from the runtime.
 */
import { ConfigError } from '../errors.ts';
import { acquireGpu } from '../gpu/device.ts';
import type { EnvSpec } from '../env/types.ts';
import { specTools } from '../env/demos.ts';
import { plainFormat, type PromptFormat } from '../env/format.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import { type LoraConfig, type LoraTarget, type ModelConfig, validateLora } from '../model/config.ts';
import { loraTargetsByName } from '../model/peft.ts';
import { preset, PRESETS } from '../model/presets.ts';
import type { CreateModelOptions, HostParams, ServiceClient } from './clients.ts';
import { demonstrationTrajectories } from './evaluate.ts';
import { ENV_NAMES, type EnvName, type JobEnv, jobEnv } from './job_envs.ts';
import { withProgress } from './train_progress.ts';
import { checkJobOptions, checkModel, checkTrainSettings, describe, oneOf } from './job_config.ts';
import { LocalService } from './local_service.ts';
import { agentSettingsOf, type Algo, ALGOS, type JobOptions, type JobResult, runTraining } from './rl_job.ts';
import { Policy, type SampleTextOptions } from './policy.ts';
import type { KvStore } from './store/kv.ts';
import { AdapterStore } from './store/adapter_store.ts';
import { storedF32 } from './store/records.ts';
import { type OpenedPretrained, openPretrainedJob, openUnlessPreset, pretrainedLr, type PretrainedJob } from './pretrained_job.ts';
import type { LrSchedule } from './sft_job.ts';

/**
 * The zero-config job (what `npm run train` runs with no flags): gpt2-100k (2 layers, C=64, byte
 * tokens) from scratch on `calculator`, a full-parameter SFT warm start on 4096 generated
 * demonstrations (300 steps of 32, cosine learning rate peaking at 1e-2: a model this small needs
 * the better part of them to learn to copy the expression into the tool call and the tool's result
 * into the answer, and RL can only choose between strategies the warm start can already carry out),
 * then LoRA GRPO (20 steps of 16 tasks × 4 attempts at 5e-3), with 128 held-out episodes evaluated
 * after SFT and after RL. What this run reaches is measured in the README and BENCHMARKS.md.
 */
export const TRAIN_DEFAULTS = Object.freeze({
  env: 'calculator' as EnvName,
  algo: 'grpo' as Algo,
  model: 'gpt2-100k',
  steps: 20,
  seed: 0,
  groups: 16,
  groupSize: 4,
  /** LoRA RL of a from-scratch model. */
  lr: 5e-3,
  /**
   * Full-parameter RL of a from-scratch model: a tenth of the LoRA rate. Every weight moves at
   * once, so the LoRA rate collapsed the policy (held-out success to zero); at a tenth full GRPO
   * learns about as well as LoRA (BENCHMARKS.md, paper part, has both runs' held-out success).
   * Pretrained models take pretrainedLr (pretrained_job.ts).
   */
  fullLr: 5e-4,
  loraRank: 8,
  loraTargets: Object.freeze(['q', 'k', 'v', 'o', 'up', 'down']) as readonly LoraTarget[],
  warmstartSteps: 300,
  warmstartDemos: 4096,
  warmstartBatch: 32,
  warmstartLr: 1e-2,
  evalEpisodes: 128,
  temperature: 1,
  rows: 16,
  maxGradNorm: 1,
  /** Turn limits and per-action token limits of an EnvSpec given without them. */
  maxTurns: 1,
  /** The turn limit of an EnvSpec whose environment has tools: room for three calls and the answer (a call is a turn). */
  maxTurnsWithTools: 4,
  maxNewTokens: 32,
});

/** What `train` and `jobOptions` take; everything but `env` is optional. */
export interface TrainSettings {
  /** A built-in environment's name, a job environment, or any single-agent EnvSpec. */
  readonly env: EnvName | JobEnv | EnvSpec;
  readonly algo?: Algo;
  /**
   * A preset name or a config (from scratch; its maxSeqLen is raised to what the episodes need), or
   * a pretrained checkpoint: a Hub repo id ("Qwen/Qwen2.5-0.5B-Instruct"), a folder in the Hub's
   * layout (Deno/Node), or one loaded already (loadPretrained's result). A pretrained job uses the
   * model's tokenizer, chat template and stop ids, no warm start unless asked for, and learning
   * rates by the model's width (pretrainedLr).
   */
  readonly model?: string | ModelConfig | LoadedModel;
  /**
   * The from-scratch model's weights to start from instead of its seeded init — an SFT run's
   * `result.trained.tensors`, or a warm-started checkpoint an app ships (checked against the
   * config: every tensor by name and size). Typically with `warmStart: null`.
   */
  readonly weights?: HostParams;
  /** Where a repo id is fetched from: revision (default 'main'), Hub endpoint, cache folder, offline. */
  readonly hub?: { readonly revision?: string; readonly endpoint?: string; readonly cacheDir?: string; readonly offline?: boolean };
  /** RL steps (for 'sft': SFT steps). */
  readonly steps?: number;
  readonly seed?: number;
  readonly groups?: number;
  readonly groupSize?: number;
  /** Default: TRAIN_DEFAULTS.lr for LoRA and .fullLr for full-parameter RL from scratch; pretrainedLr for a pretrained model. */
  readonly lr?: number;
  /**
   * LoRA of the RL job (alpha defaults to 2·rank); null: full-parameter RL. Targets by our names
   * ('q', 'up', …) or the model's module names ('q_proj', 'up_proj'; GPT-2's 'c_attn').
   */
  readonly lora?: { readonly rank?: number; readonly alpha?: number; readonly targets?: readonly (LoraTarget | string)[] } | null;
  /** The SFT warm start; null: none (RL from the from-scratch model). */
  readonly warmStart?: { readonly steps?: number; readonly demos?: number; readonly batchSize?: number; readonly lr?: number; readonly schedule?: LrSchedule } | null;
  readonly evalEpisodes?: number;
  readonly temperature?: number;
  /** Turn limit of an EnvSpec's episodes (built-ins bring their own). */
  readonly maxTurns?: number;
  /** Token limit of one action. */
  readonly maxNewTokens?: number;
  /** Prompt format of an EnvSpec's episodes (default: plain text listing the tools, if any, and how to call them). */
  readonly format?: PromptFormat;
  /**
   * A line on stderr per phase and every tenth of a phase's steps (reward, success, KL, clip
   * fraction, entropy, gradient norm, tokens, dropped and turn-limited episodes), and warnings.
   * Default true; false for silence (onStep / onPhase / onWarning still get everything).
   */
  readonly progress?: boolean;
  readonly onWarning?: JobOptions['onWarning'];
  readonly rows?: number;
  readonly maxGradNorm?: number;
  /** Time limit of each environment call (create + reset, step, a tool) in ms; default 30000. */
  readonly stepTimeoutMs?: number;
  readonly onStep?: JobOptions['onStep'];
  readonly onPhase?: JobOptions['onPhase'];
  readonly checkpoint?: JobOptions['checkpoint'];
  readonly id?: string;
}

/** A pretrained checkpoint already opened: loadPretrained's result, or what the job runner opens (OpenedPretrained). */
export type LoadedModel = { readonly config: ModelConfig; readonly source: { readonly repo: string }; readonly commit?: string } | OpenedPretrained;

/** The job's reference and config of a loaded checkpoint, or null for a from-scratch model. */
function loadedOf(m: TrainSettings['model']): { job: PretrainedJob; config: ModelConfig } | null {
  if (typeof m !== 'object' || m === null || !('config' in m)) return null;
  if ('job' in m) return { job: m.job, config: m.config };
  return { job: { ...m.source, ...(m.commit !== undefined ? { commit: m.commit } : {}) }, config: m.config };
}

function isJobEnv(e: TrainSettings['env']): e is JobEnv {
  return typeof e === 'object' && e !== null && 'kind' in e && 'spec' in e;
}

function jobEnvOf(s: TrainSettings): JobEnv {
  const e = s.env;
  if (typeof e === 'string') {
    if (!(ENV_NAMES as readonly string[]).includes(e)) throw new ConfigError('env', `unknown environment "${e}" (known: ${ENV_NAMES.join(', ')})`);
    if (s.format !== undefined) throw new ConfigError('format', `the built-in environment "${e}" brings its own prompt format: leave format out`);
    const env = jobEnv(e);
    return s.maxNewTokens !== undefined || s.maxTurns !== undefined ? { ...env, maxTurns: s.maxTurns ?? env.maxTurns, maxNewTokens: s.maxNewTokens ?? env.maxNewTokens } : env;
  }
  if (isJobEnv(e)) {
    // A JobEnv states its own limits and format: settings beside it would be ignored.
    for (const k of ['maxTurns', 'maxNewTokens', 'format'] as const) {
      if (s[k] !== undefined) throw new ConfigError(k, `a JobEnv carries its own ${k} (env.${k}): set it there`);
    }
    return e;
  }
  if (typeof e !== 'object' || e === null || typeof e.create !== 'function' || typeof e.name !== 'string') {
    throw new ConfigError('env', 'expected an environment name, a JobEnv or an EnvSpec ({ name, create() })');
  }
  // Tools need turns: each call is one, the answer another. One instance tells (created, closed).
  const maxTurns = s.maxTurns ?? (specTools(e).length > 0 ? TRAIN_DEFAULTS.maxTurnsWithTools : TRAIN_DEFAULTS.maxTurns);
  const maxNewTokens = s.maxNewTokens ?? TRAIN_DEFAULTS.maxNewTokens;
  // A newcomer's environment is met by a model that must learn its tools: list them and the syntax.
  return { name: e.name, kind: 'single', spec: e, maxTurns, maxNewTokens, format: s.format ?? plainFormat() };
}

/** `v` when it is an integer ≥ min, else a ConfigError naming `field`. */
export function int(field: string, v: number, min: number): number {
  if (!Number.isInteger(v) || v < min) throw new ConfigError(field, `expected an integer ≥ ${min}, got ${v}`);
  return v;
}

/** `v` when it is a finite positive number, else a ConfigError naming `field`. */
export function pos(field: string, v: number): number {
  if (!Number.isFinite(v) || v <= 0) throw new ConfigError(field, `expected a positive number, got ${v}`);
  return v;
}

/**
 * The job runner's options for `settings`, defaults filled in. A from-scratch model's context is
 * raised to what the environment's episodes need (`JobEnv.context`: guess-number and nim episodes
 * run longer than gpt2-100k's 128 positions). Settings are checked before anything is built, and
 * the resolved job again as a whole (job_config.ts): unknown keys, types, ranges and combinations
 * are ConfigErrors naming the field, before any GPU work. An 'sft' job has no LoRA (lora: null).
 */
export function jobOptions(s: TrainSettings): JobOptions {
  checkTrainSettings(s);
  const env = jobEnvOf(s);
  const algo = oneOf('algo', s.algo ?? TRAIN_DEFAULTS.algo, ALGOS);
  const m = s.model ?? TRAIN_DEFAULTS.model;
  const loaded = loadedOf(m);
  if (typeof m === 'string' && !Object.hasOwn(PRESETS, m)) {
    throw new ConfigError('model', `"${m}" is no preset (known: ${Object.keys(PRESETS).join(', ')}); a Hub repo id or folder is loaded by train() and the CLI (or pass loadPretrained's result)`);
  }
  if (!loaded && s.hub !== undefined) throw new ConfigError('hub', 'goes with a pretrained model (a Hub repo id), not a from-scratch one');
  const base = loaded ? loaded.config : typeof m === 'string' ? preset(m) : checkModel(m as ModelConfig);
  // A pretrained model's positions are its own (PRETRAINED_CONTEXT bounds what a job uses).
  const model: ModelConfig = !loaded && (env.context ?? 0) > base.maxSeqLen ? { ...base, maxSeqLen: env.context! } : base;
  // A pretrained 'sft' job trains a LoRA adapter too (unless lora: null); from scratch, every weight.
  let lora: LoraConfig | null = null;
  if (s.lora !== null && (algo !== 'sft' || loaded)) {
    const rank = s.lora?.rank ?? TRAIN_DEFAULTS.loraRank;
    const targets = s.lora?.targets ? loraTargetsByName(model, s.lora.targets as readonly string[]) : TRAIN_DEFAULTS.loraTargets;
    lora = { rank, alpha: s.lora?.alpha ?? 2 * rank, targets };
  }
  const lr = s.lr ?? (loaded ? pretrainedLr(model, lora !== null) : lora ? TRAIN_DEFAULTS.lr : TRAIN_DEFAULTS.fullLr);
  const w = s.warmStart;
  // From scratch a warm start is the default; a pretrained model gets one only when asked (at its RL rate).
  const warmSteps = w === null ? 0 : (w?.steps ?? (loaded ? 0 : TRAIN_DEFAULTS.warmstartSteps));
  const warmStart = warmSteps === 0 ? null : {
    steps: warmSteps,
    demos: w?.demos ?? TRAIN_DEFAULTS.warmstartDemos,
    batchSize: w?.batchSize ?? TRAIN_DEFAULTS.warmstartBatch,
    lr: w?.lr ?? (loaded ? lr : TRAIN_DEFAULTS.warmstartLr),
    ...(w?.schedule ? { schedule: w.schedule } : {}),
  };
  const o = checkJobOptions({
    env,
    algo,
    model,
    ...(loaded ? { pretrained: loaded.job } : {}),
    ...(s.weights !== undefined ? { weights: s.weights } : {}),
    lora,
    steps: s.steps ?? TRAIN_DEFAULTS.steps,
    seed: s.seed ?? TRAIN_DEFAULTS.seed,
    groups: s.groups ?? TRAIN_DEFAULTS.groups,
    groupSize: s.groupSize ?? TRAIN_DEFAULTS.groupSize,
    lr,
    warmStart,
    evalEpisodes: s.evalEpisodes ?? TRAIN_DEFAULTS.evalEpisodes,
    temperature: s.temperature ?? TRAIN_DEFAULTS.temperature,
    maxNewTokens: env.maxNewTokens,
    rows: s.rows ?? TRAIN_DEFAULTS.rows,
    maxGradNorm: s.maxGradNorm ?? TRAIN_DEFAULTS.maxGradNorm,
    ...(s.stepTimeoutMs !== undefined ? { stepTimeoutMs: s.stepTimeoutMs } : {}),
    ...(s.onStep ? { onStep: s.onStep } : {}),
    ...(s.onPhase ? { onPhase: s.onPhase } : {}),
    ...(s.onWarning ? { onWarning: s.onWarning } : {}),
    ...(s.checkpoint ? { checkpoint: s.checkpoint } : {}),
    ...(s.id ? { id: s.id } : {}),
  });
  // The targets in canonical order, frozen (validateLora, which checkJobOptions has already passed).
  return o.lora ? { ...o, lora: validateLora(o.model, o.lora) } : o;
}

/**
 * Trains an agent on `settings.env` and returns the result (curves, held-out success before and
 * after RL, the trained tensors). Without `service` it acquires the WebGPU device, runs an
 * in-process LocalService on it and releases both at the end; with one (a LocalService, or a
 * WorkerService's client in a page) the job runs there, beside its other jobs.
 */
export async function train(settings: TrainSettings & { readonly service?: ServiceClient }): Promise<TrainResult> {
  if (typeof settings !== 'object' || settings === null) throw new ConfigError('settings', `expected an object, got ${describe(settings)}`);
  const { service: given, ...rest } = settings;
  if (given !== undefined && (typeof given !== 'object' || given === null || typeof given.createModel !== 'function')) {
    throw new ConfigError('service', 'expected a ServiceClient (a LocalService, or a WorkerService client)');
  }
  checkTrainSettings(rest);
  const { progress, ...job } = rest;
  // A repo id or folder: opened here (config, tokenizer; the weights stay in the files) so the job
  // is checked against the real config before the device is acquired; the runner reuses it.
  const opened = await openModel(job);
  const fitted = opened ? job : await withFittedContext(job);
  const options = withProgress(jobOptions(opened ? { ...job, model: opened } : fitted), progress !== false);
  if (given) return withPolicy(await runTraining(given, options, opened), options, opened, given);
  const ctx = await acquireGpu({ label: 'train' });
  const tok = new ByteTokenizer();
  const service = new LocalService(ctx, { decode: (ids) => tok.decode(ids), maxSkippedInARow: 5 });
  let result: JobResult;
  try {
    result = await runTraining(service, options, opened);
  } finally {
    await service.close();
    ctx.destroy();
  }
  return withPolicy(result, options, opened);
}

/**
 * What train() returns: the job's result (curves, held-out success, the trained tensors) plus the
 * trained policy to talk to and ways to keep it. The methods are not enumerable: `{ ...result }`,
 * summaryOf and JSON see the data alone.
 */
export interface TrainResult extends JobResult {
  /** The trained agent's reply to `prompt` (one action, in the job's format); acquires a device on first use. */
  sample(prompt: string, opts?: SampleTextOptions): Promise<string>;
  /**
   * Keeps the result: a folder (Deno/Node) gets the run folder `npm run train` writes (summary,
   * adapter, PEFT export, curve.svg); a KvStore (IndexedDB, files, NATS) gets the trained tensors
   * as AdapterStore record `name` (default `<env>-<algo>-s<seed>`) and a from-scratch LoRA run's
   * base as `<name>.base`. Returns the files or records written.
   */
  save(target: string | KvStore, name?: string): Promise<string[]>;
  /** Releases the device sample() acquired. */
  close(): Promise<void>;
}

/** `service`: the caller's, which sample() then uses too (else it acquires a device of its own). */
function withPolicy(result: JobResult, o: JobOptions, opened: OpenedPretrained | undefined, service?: ServiceClient): TrainResult {
  let policy: Promise<Policy> | null = null;
  const get = () => (policy ??= (async () => {
    const t = result.trained;
    const pre = t.pretrained ? (opened && opened.job.commit === t.pretrained.job.commit ? opened : await openPretrainedJob(t.pretrained.job)) : null;
    const base: CreateModelOptions = t.base ? { params: t.base } : pre ? { pretrained: pre.serviceRef } : { params: t.tensors };
    const lora = t.lora && (t.base || pre) ? t.lora : null;
    return new Policy({ cfg: t.cfg, base, lora, adapter: lora ? t.tensors : null, agent: agentSettingsOf({ ...o, model: t.cfg }, pre) }, service);
  })());
  const methods: Pick<TrainResult, 'sample' | 'save' | 'close'> = {
    sample: async (prompt, opts) => (await get()).sample(prompt, opts),
    save: async (target, name) => {
      if (typeof target === 'string') return (await import('../cli/train.ts')).writeRunOutputs(target, result);
      // A store: the trained tensors as an adapter record, and a from-scratch LoRA run's base beside it.
      const id = name ?? `${result.env}-${result.algo}-s${result.seed}`;
      const store = new AdapterStore(target);
      const t = result.trained;
      const info = (rank: number, alpha: number, targets: readonly string[]) => ({
        baseModel: t.pretrained?.job.repo ?? t.cfg.name ?? t.cfg.family, rank, alpha, targetModules: [...targets], step: result.steps,
        metrics: { successBefore: result.successBefore, successAfter: result.successAfter },
      });
      const written = [`${id}@${(await store.save(id, storedF32(t.tensors), info(t.lora?.rank ?? 0, t.lora?.alpha ?? 0, t.lora?.targets ?? []))).version}`];
      if (t.base) written.push(`${id}.base@${(await store.save(`${id}.base`, storedF32(t.base), info(0, 0, []))).version}`);
      return written;
    },
    close: async () => {
      const p = policy;
      policy = null;
      await (await p)?.close();
    },
  };
  for (const [k, v] of Object.entries(methods)) Object.defineProperty(result, k, { value: v, enumerable: false });
  return result as TrainResult;
}

/** The opened checkpoint when `settings.model` is a Hub repo id or a folder (not a preset), else undefined. */
function openModel(s: TrainSettings): Promise<OpenedPretrained | undefined> {
  return typeof s.model === 'string' ? openUnlessPreset(s.model, s.hub) : Promise.resolve(undefined);
}

/**
 * A newcomer's EnvSpec on a from-scratch model: the context raised to what its episodes need, as
 * the built-in environments state theirs (JobEnv.context) — the longest of 64 demonstrations,
 * replayed with the job's tokenizer and format, plus an action's tokens, rounded up to 32. Without
 * it a tool call and its result could push an episode past gpt2-100k's 128 positions, silently.
 */
async function withFittedContext(s: TrainSettings): Promise<TrainSettings> {
  const e = s.env;
  if (typeof e !== 'object' || e === null || isJobEnv(e) || typeof e.demonstrations !== 'function') return s;
  const env = jobEnvOf(s);
  const tokenizer = new ByteTokenizer();
  const probe = 4096;
  const demos = await demonstrationTrajectories(env, 64, s.seed ?? TRAIN_DEFAULTS.seed, { tokenizer, maxNewTokens: env.maxNewTokens, maxSequenceTokens: probe, temperature: 1 });
  const longest = Math.max(0, ...demos.map((t) => t.tokensT.length));
  const { maxTurns: _t, maxNewTokens: _n, format: _f, ...rest } = s;
  return { ...rest, env: { ...env, context: Math.ceil((longest + env.maxNewTokens) / 32) * 32 } };
}
