/**
 * One training run of a demo page: the library's job runner (`runTraining`: an SFT warm start on
 * the environment's demonstrations, then LoRA RL) over the page's WorkerService, watched through
 * a TapService, with options made by the library's own `jobOptions` (src/runtime/train.ts).
 *
 * The pages' defaults (DEFAULT_SETTINGS) are `npm run train`'s model, LoRA and GRPO, from the warm
 * start it runs first as shipped with the demos (shipped.ts), with a shorter RL phase: held-out
 * success rises within about 3 minutes even on SwiftShader, which compiles every kernel on first use
 * and runs ~4× slower than Deno's llvmpipe. FULL_SETTINGS is `npm run train`'s whole job, warm start
 * in the tab included. Any page takes other settings from its form or the URL
 * (`train.html?base=scratch&model=tiny-gpt2&warmstart=50&steps=10`).
 */
import {
  ConfigError,
  ENV_NAMES,
  type HostParams,
  type EnvName,
  HubError,
  type HubProgress,
  type JobOptions,
  type JobResult,
  jobOptions as trainJobOptions,
  runTraining,
  type StepMetrics,
  TRAIN_DEFAULTS,
  type WorkerService,
} from '../../../src/mod.ts';
import { type OpenedPretrained, openPretrainedJob } from '../../../src/runtime/pretrained_job.ts';
import { PRETRAINED_JOB, pretrainedSeqLen } from './hub_models.ts';
import { hasShipped, shippedList, shippedWeights } from './shipped.ts';
import { TapService } from './tap.ts';

/** The algorithms the pages offer: the RL ones (each trains a LoRA adapter on the warm-started base). */
export const DEMO_ALGOS = ['grpo', 'rloo', 'reinforce', 'ppo', 'dpo'] as const;
export type DemoAlgo = (typeof DEMO_ALGOS)[number];
export const DEMO_MODELS = ['gpt2-100k', 'tiny-gpt2', 'gpt2-1m'] as const;
export type DemoModel = (typeof DEMO_MODELS)[number];

/** A Hub repo id as the train page takes one: `org/name` (letters, digits, "-", "_", "."; no "--" or ".."). */
export function isRepoId(m: string): boolean {
  return /^[\w.-]+\/[\w.-]+$/.test(m) && !m.includes('--') && !m.includes('..') && m.length <= 96;
}

/** Whether settings train a pretrained Hub model rather than a from-scratch preset. */
export const isPretrained = (s: DemoSettings): boolean => !(DEMO_MODELS as readonly string[]).includes(s.model);

/** Where a from-scratch run starts: the warm-started checkpoint shipped with the demos, or the seeded init. */
export const DEMO_BASES = ['shipped', 'scratch'] as const;
export type DemoBase = (typeof DEMO_BASES)[number];
/** How the forms name the bases. */
export const BASE_LABELS: Readonly<Record<DemoBase, string>> = { shipped: 'the shipped warm start', scratch: 'scratch (seeded init)' };

export interface DemoSettings {
  readonly env: EnvName;
  readonly algo: DemoAlgo;
  /** A from-scratch preset, or a Hub repo id (a pretrained model: LoRA RL on it, no warm start unless asked). */
  readonly model: DemoModel | string;
  /** The Hub's origin for a repo id ('' : HF_ENDPOINT's default, https://huggingface.co). */
  readonly hub: string;
  /** RL steps. */
  readonly steps: number;
  /**
   * A from-scratch preset's starting point: 'shipped' — the warm-started checkpoint that ships with
   * the demos for this environment and model (shipped.ts) — or 'scratch', the seeded init.
   */
  readonly base: DemoBase;
  /** SFT warm-start steps in this tab (0: none; on a 'shipped' base they continue its warm start). */
  readonly warmstart: number;
  readonly groups: number;
  readonly groupSize: number;
  readonly seed: number;
  /** Held-out episodes before and after RL (0: none). */
  readonly evalEpisodes: number;
}

/**
 * `npm run train`'s job: gpt2-100k from scratch, its warm start in the tab, then 20 GRPO steps of
 * 16 × 4 — minutes on a GPU, over ten on a software adapter (SwiftShader compiles every kernel and
 * runs ~4× slower than Deno's llvmpipe). The train page offers it as "the full run".
 */
export const FULL_SETTINGS: DemoSettings = {
  env: TRAIN_DEFAULTS.env, algo: 'grpo', model: 'gpt2-100k', hub: '', base: 'scratch', steps: TRAIN_DEFAULTS.steps, warmstart: TRAIN_DEFAULTS.warmstartSteps,
  groups: TRAIN_DEFAULTS.groups, groupSize: TRAIN_DEFAULTS.groupSize, seed: TRAIN_DEFAULTS.seed, evalEpisodes: TRAIN_DEFAULTS.evalEpisodes,
};

/**
 * The pages' defaults: the same model and RL as the full run, from its warm start as shipped
 * (shipped.ts), with fewer and smaller RL steps and held-out evaluations — sized so that held-out
 * success visibly rises within about 3 minutes on SwiftShader (measured by the e2e suite).
 */
export const DEFAULT_SETTINGS: DemoSettings = {
  ...FULL_SETTINGS, base: 'shipped', warmstart: 0, steps: 10, groups: 8, groupSize: 4, evalEpisodes: 64, seed: 1,
};

/** The widget's and the chat page's defaults: the pages' run, with its evaluations left out where the page shows none. */
export const QUICK_SETTINGS: DemoSettings = { ...DEFAULT_SETTINGS };

const INT_FIELDS = ['steps', 'warmstart', 'groups', 'groupSize', 'seed', 'evalEpisodes'] as const;

/**
 * Settings from a form or a URL query: unknown names are ConfigErrors naming what was wrong.
 * `pretrained`: the model may be a Hub repo id (the train page); elsewhere presets only.
 */
export function parseSettings(get: (name: string) => string | null | undefined, defaults: DemoSettings = DEFAULT_SETTINGS, opts: { readonly pretrained?: boolean } = {}): DemoSettings {
  const pick = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const v = get(name);
    if (v === null || v === undefined || v === '') return fallback;
    if (!(allowed as readonly string[]).includes(v)) throw new ConfigError(name, `unknown ${name} "${v}" (known: ${allowed.join(', ')})`);
    return v as T;
  };
  const env = pick('env', ENV_NAMES, defaults.env);
  const model = pickModel(get('model'), defaults.model, opts.pretrained ?? false);
  // The shipped warm start where one exists for this environment and model (unless asked otherwise).
  const shippable = (DEMO_MODELS as readonly string[]).includes(model) && hasShipped(env, model);
  const base = pick('base', DEMO_BASES, shippable ? defaults.base : 'scratch');
  if (base === 'shipped' && !shippable) {
    throw new ConfigError('base', `no warm-started ${model} for ${env} ships with the demos (shipped: ${shippedList()}): base "scratch" warm-starts in this tab`);
  }
  const out: Record<string, unknown> = { env, algo: pick('algo', DEMO_ALGOS, defaults.algo), model, hub: pickHub(get('hub'), defaults.hub), base };
  for (const k of INT_FIELDS) {
    const v = get(k);
    if (v === null || v === undefined || v === '') {
      // A base other than the defaults' brings its own warm start: none on a shipped one, `npm run train`'s from scratch.
      out[k] = k !== 'warmstart' || base === defaults.base ? defaults[k] : base === 'shipped' ? 0 : TRAIN_DEFAULTS.warmstartSteps;
      continue;
    }
    const n = Number(v);
    const min = k === 'steps' || k === 'groups' || k === 'groupSize' ? 1 : 0;
    if (!Number.isInteger(n) || n < min || n > 100_000) throw new ConfigError(k, `${k} must be an integer ≥ ${min}, got "${v}"`);
    out[k] = n;
  }
  return out as unknown as DemoSettings;
}

/** A preset, or (where the page trains pretrained models: the train page) a Hub repo id. */
function pickModel(v: string | null | undefined, fallback: string, pretrained: boolean): string {
  if (v === null || v === undefined || v === '') return fallback;
  if ((DEMO_MODELS as readonly string[]).includes(v) || (pretrained && isRepoId(v))) return v;
  throw new ConfigError('model', `unknown model "${v}" (a preset: ${DEMO_MODELS.join(', ')}${pretrained ? '; or a Hub repo id, org/name' : ''})`);
}

function pickHub(v: string | null | undefined, fallback: string): string {
  if (v === null || v === undefined) return fallback;
  if (v === '') return '';
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError('hub', `the Hub endpoint must be an http(s) URL, got "${v}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('hub', `the Hub endpoint must be an http(s) URL, got "${v}"`);
  return url.origin + url.pathname.replace(/\/+$/, '');
}

/**
 * Hyperparameters per model beyond the settings: gpt2-100k takes `npm run train`'s (TRAIN_DEFAULTS);
 * the tiny demo models a short, hot warm start on few demonstrations — they need ~50 steps at
 * 2e-2 before their calculator answers start to score (SFT loss ~0.35 per action token, a few easy
 * tasks right; llvmpipe, 2 cores) — and games (a whole Nim game, ~400 byte tokens) half the batch.
 */
function tuning(s: DemoSettings): { warmStart: { demos?: number; batchSize?: number; lr?: number }; lora: { rank: number }; rows?: number } {
  // A pretrained model: the picker's job (its memory estimate is this job's), learning rates by width (pretrainedLr).
  if (isPretrained(s)) return { warmStart: { demos: 64, batchSize: 4 }, lora: { rank: PRETRAINED_JOB.lora.rank }, rows: PRETRAINED_JOB.rows };
  if (s.model === 'gpt2-100k') return { warmStart: {}, lora: { rank: TRAIN_DEFAULTS.loraRank } };
  return { warmStart: { demos: 256, batchSize: s.env === 'nim' ? 8 : 16, lr: 2e-2 }, lora: { rank: 4 }, rows: 8 };
}

/**
 * The job runner's options for demo settings, through the library's jobOptions: a pretrained model
 * once opened; a shipped base with its weights (without them: the options that tell their config).
 */
export function jobOptions(s: DemoSettings, opened?: OpenedPretrained, weights?: HostParams): JobOptions {
  const t = tuning(s);
  if (isPretrained(s) && !opened) throw new ConfigError('model', `"${s.model}" is a Hub repo id: its job options need the opened checkpoint`);
  return trainJobOptions({
    env: s.env, algo: s.algo, model: opened ?? s.model, ...(weights ? { weights } : {}), steps: s.steps, seed: s.seed, groups: s.groups, groupSize: s.groupSize,
    evalEpisodes: s.evalEpisodes, lora: t.lora, warmStart: s.warmstart > 0 ? { steps: s.warmstart, ...t.warmStart } : null,
    ...(t.rows === undefined ? {} : { rows: t.rows }),
  });
}

export type JobPhase = 'starting' | 'download' | 'warmstart' | 'eval-before' | 'rl' | 'eval-after' | 'done' | 'failed' | 'stopped';

export type JobEvent =
  | { readonly type: 'phase'; readonly phase: JobPhase }
  | { readonly type: 'download'; readonly progress: DownloadProgress }
  | { readonly type: 'step'; readonly metrics: StepMetrics; readonly done: number; readonly total: number }
  | { readonly type: 'done'; readonly result: JobResult }
  | { readonly type: 'failed'; readonly error: unknown };

/** A pretrained model's download: per file (as loadPretrained reports it), and all files together. */
export interface DownloadProgress {
  readonly file: string;
  readonly loaded: number;
  readonly total: number;
  /** Bytes held of every file seen so far, and their total. */
  readonly allLoaded: number;
  readonly allTotal: number;
  /** Whether the files came from this browser's cache alone (no request to the Hub). */
  readonly fromCache: boolean;
}

/**
 * A run on the page's service; `start()` once, `stop()` to cancel its scheduler jobs. A pretrained
 * model (settings.model a repo id) is opened first — from this origin's Cache Storage alone when
 * it holds the files, else downloaded from settings.hub — and its options are made then.
 */
export class DemoJob {
  readonly settings: DemoSettings;
  readonly tap: TapService;
  readonly label: string;
  phase: JobPhase = 'starting';
  /** Steps finished (warm-start and RL together) and their total. */
  done = 0;
  readonly total: number;
  readonly startedAt = performance.now();
  result: JobResult | null = null;
  error: unknown = null;
  /** The download of a pretrained model (null: none yet, or a from-scratch model). */
  download: DownloadProgress | null = null;
  /** The opened checkpoint of a pretrained model, once opened. */
  opened: OpenedPretrained | null = null;
  #options: JobOptions | null;
  #listeners = new Set<(e: JobEvent) => void>();
  #stopped = false;
  #abort = new AbortController();

  constructor(service: WorkerService, settings: DemoSettings, label = `${settings.env}/${settings.algo}`) {
    this.settings = settings;
    this.#options = isPretrained(settings) || settings.base === 'shipped' ? null : jobOptions(settings);
    this.tap = new TapService(service);
    this.label = label;
    this.total = settings.warmstart + settings.steps;
  }

  /** The job runner's options (a pretrained model's only once it is opened). */
  get options(): JobOptions {
    if (!this.#options) throw new ConfigError('model', `"${this.settings.model}" is not ${isPretrained(this.settings) ? 'opened' : 'fetched'} yet: its options come with its ${isPretrained(this.settings) ? 'config' : 'weights'}`);
    return this.#options;
  }

  /** Whether the options are made (a pretrained model opened, a shipped base fetched). */
  get hasOptions(): boolean {
    return this.#options !== null;
  }

  on(f: (e: JobEvent) => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  #emit(e: JobEvent): void {
    for (const f of this.#listeners) f(e);
  }

  #setPhase(p: JobPhase): void {
    this.phase = p;
    this.#emit({ type: 'phase', phase: p });
  }

  get running(): boolean {
    return !['done', 'failed', 'stopped'].includes(this.phase);
  }

  /** Seconds since the job started. */
  get elapsed(): number {
    return (performance.now() - this.startedAt) / 1000;
  }

  /**
   * Opens the pretrained checkpoint: from the cache alone first (no request to the Hub when it
   * holds every file of the revision), else online, downloading what it lacks, with progress.
   */
  async #open(): Promise<OpenedPretrained> {
    this.#setPhase('download');
    const endpoint = this.settings.hub === '' ? {} : { endpoint: this.settings.hub };
    const sizes = new Map<string, { loaded: number; total: number }>();
    let fromCache = true;
    const onProgress = (p: HubProgress) => {
      sizes.set(p.file, { loaded: p.loaded, total: p.total });
      let allLoaded = 0, allTotal = 0;
      for (const v of sizes.values()) [allLoaded, allTotal] = [allLoaded + v.loaded, allTotal + v.total];
      this.download = { file: p.file, loaded: p.loaded, total: p.total, allLoaded, allTotal, fromCache };
      this.#emit({ type: 'download', progress: this.download });
    };
    const opts = { onProgress, signal: this.#abort.signal };
    try {
      return await openPretrainedJob({ repo: this.settings.model, ...endpoint, offline: true }, opts);
    } catch (e) {
      if (!(e instanceof HubError) || e.kind !== 'offline-not-cached') throw e;
    }
    fromCache = false;
    sizes.clear();
    return await openPretrainedJob({ repo: this.settings.model, ...endpoint }, opts);
  }

  async start(): Promise<JobResult | null> {
    this.#setPhase('starting');
    try {
      if (!this.#options && isPretrained(this.settings)) {
        const opened = await this.#open();
        this.opened = opened;
        this.#options = jobOptions(this.settings, opened);
        // Admission's estimate of the training job at the rows and sequence bound it trains at
        // (the picker's estimate), not at the model's full context.
        this.tap.schedule = { batch: this.#options.rows, seqLen: pretrainedSeqLen(opened.config) };
        this.#setPhase('starting');
      } else if (!this.#options) {
        // The shipped warm start: fetched, checked against the config the job trains, and trained on.
        const cfg = jobOptions(this.settings).model;
        this.#options = jobOptions(this.settings, undefined, await shippedWeights(this.settings.env, this.settings.model, cfg, this.#abort.signal));
      }
      const r = await runTraining(this.tap, {
        ...this.options,
        onPhase: (p) => this.#setPhase(p),
        onStep: (m) => {
          this.done++;
          this.#emit({ type: 'step', metrics: m, done: this.done, total: this.total });
        },
      }, this.opened ?? undefined);
      this.result = r;
      this.#setPhase('done');
      this.#emit({ type: 'done', result: r });
      return r;
    } catch (e) {
      this.error = e;
      this.#setPhase(this.#stopped ? 'stopped' : 'failed');
      if (!this.#stopped) this.#emit({ type: 'failed', error: e });
      return null;
    }
  }

  /** Cancel the job's scheduler jobs (and a download in progress): its queued quanta reject and the runner unwinds. */
  stop(): void {
    if (!this.running) return;
    this.#stopped = true;
    this.#abort.abort();
    this.tap.stop();
  }
}
