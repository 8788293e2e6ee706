/**
 * One training run of a demo page: the library's job runner (`runTraining`: an SFT warm start on
 * the environment's demonstrations, then LoRA RL) over the page's WorkerService, watched through
 * a TapService, with options made by the library's own `jobOptions` (src/runtime/train.ts).
 *
 * The train page's defaults are `npm run train`'s (TRAIN_DEFAULTS: gpt2-100k from scratch on
 * calculator, 300 warm-start steps, 20 GRPO steps of 16 × 4): the run that measurably improves
 * the agent, so the page shows the same learning the CLI does (minutes on a real GPU; on a
 * software adapter much longer — SwiftShader compiles every kernel on first use). The chat, arena
 * and embed pages default to the tiny models and the short schedules below, to show something
 * within a minute or two anywhere; any page takes other settings from its form or the URL
 * (`train.html?model=tiny-gpt2&warmstart=50&steps=10`).
 */
import {
  ConfigError,
  ENV_NAMES,
  type EnvName,
  type JobOptions,
  type JobResult,
  jobOptions as trainJobOptions,
  runTraining,
  type StepMetrics,
  TRAIN_DEFAULTS,
  type WorkerService,
} from '../../../src/mod.ts';
import { TapService } from './tap.ts';

/** The algorithms the pages offer: the RL ones (each trains a LoRA adapter on the warm-started base). */
export const DEMO_ALGOS = ['grpo', 'rloo', 'reinforce', 'ppo', 'dpo'] as const;
export type DemoAlgo = (typeof DEMO_ALGOS)[number];
export const DEMO_MODELS = ['gpt2-100k', 'tiny-gpt2', 'gpt2-1m'] as const;
export type DemoModel = (typeof DEMO_MODELS)[number];

export interface DemoSettings {
  readonly env: EnvName;
  readonly algo: DemoAlgo;
  readonly model: DemoModel;
  /** RL steps. */
  readonly steps: number;
  /** SFT warm-start steps (0: RL from the from-scratch model). */
  readonly warmstart: number;
  readonly groups: number;
  readonly groupSize: number;
  readonly seed: number;
  /** Held-out episodes before and after RL (0: none). */
  readonly evalEpisodes: number;
}

/** The train page's defaults: `npm run train`'s job. */
export const DEFAULT_SETTINGS: DemoSettings = {
  env: TRAIN_DEFAULTS.env, algo: 'grpo', model: 'gpt2-100k', steps: TRAIN_DEFAULTS.steps, warmstart: TRAIN_DEFAULTS.warmstartSteps,
  groups: TRAIN_DEFAULTS.groups, groupSize: TRAIN_DEFAULTS.groupSize, seed: TRAIN_DEFAULTS.seed, evalEpisodes: TRAIN_DEFAULTS.evalEpisodes,
};

/** The quick settings of the chat, arena and embed pages: a tiny model that shows something within a minute or two. */
export const QUICK_SETTINGS: DemoSettings = {
  env: 'calculator', algo: 'grpo', model: 'tiny-gpt2', steps: 10, warmstart: 50, groups: 2, groupSize: 4, seed: 1, evalEpisodes: 8,
};

const INT_FIELDS = ['steps', 'warmstart', 'groups', 'groupSize', 'seed', 'evalEpisodes'] as const;

/** Settings from a form or a URL query: unknown names are ConfigErrors naming what was wrong. */
export function parseSettings(get: (name: string) => string | null | undefined, defaults: DemoSettings = DEFAULT_SETTINGS): DemoSettings {
  const pick = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const v = get(name);
    if (v === null || v === undefined || v === '') return fallback;
    if (!(allowed as readonly string[]).includes(v)) throw new ConfigError(name, `unknown ${name} "${v}" (known: ${allowed.join(', ')})`);
    return v as T;
  };
  const out: Record<string, unknown> = {
    env: pick('env', ENV_NAMES, defaults.env),
    algo: pick('algo', DEMO_ALGOS, defaults.algo),
    model: pick('model', DEMO_MODELS, defaults.model),
  };
  for (const k of INT_FIELDS) {
    const v = get(k);
    if (v === null || v === undefined || v === '') {
      out[k] = defaults[k];
      continue;
    }
    const n = Number(v);
    const min = k === 'steps' || k === 'groups' || k === 'groupSize' ? 1 : 0;
    if (!Number.isInteger(n) || n < min || n > 100_000) throw new ConfigError(k, `${k} must be an integer ≥ ${min}, got "${v}"`);
    out[k] = n;
  }
  return out as unknown as DemoSettings;
}

/**
 * Hyperparameters per model beyond the settings: gpt2-100k takes `npm run train`'s (TRAIN_DEFAULTS);
 * the tiny demo models a short, hot warm start on few demonstrations — they need ~50 steps at
 * 2e-2 before their calculator answers start to score (SFT loss ~0.35 per action token, a few easy
 * tasks right; llvmpipe, 2 cores) — and games (a whole Nim game, ~400 byte tokens) half the batch.
 */
function tuning(s: DemoSettings): { warmStart: { demos?: number; batchSize?: number; lr?: number }; lora: { rank: number }; rows?: number } {
  if (s.model === 'gpt2-100k') return { warmStart: {}, lora: { rank: TRAIN_DEFAULTS.loraRank } };
  return { warmStart: { demos: 256, batchSize: s.env === 'nim' ? 8 : 16, lr: 2e-2 }, lora: { rank: 4 }, rows: 8 };
}

/** The job runner's options for demo settings, through the library's jobOptions. */
export function jobOptions(s: DemoSettings): JobOptions {
  const t = tuning(s);
  return trainJobOptions({
    env: s.env, algo: s.algo, model: s.model, steps: s.steps, seed: s.seed, groups: s.groups, groupSize: s.groupSize,
    evalEpisodes: s.evalEpisodes, lora: t.lora, warmStart: s.warmstart > 0 ? { steps: s.warmstart, ...t.warmStart } : null,
    ...(t.rows === undefined ? {} : { rows: t.rows }),
  });
}

export type JobPhase = 'starting' | 'warmstart' | 'eval-before' | 'rl' | 'eval-after' | 'done' | 'failed' | 'stopped';

export type JobEvent =
  | { readonly type: 'phase'; readonly phase: JobPhase }
  | { readonly type: 'step'; readonly metrics: StepMetrics; readonly done: number; readonly total: number }
  | { readonly type: 'done'; readonly result: JobResult }
  | { readonly type: 'failed'; readonly error: unknown };

/** A run on the page's service; `start()` once, `stop()` to cancel its scheduler jobs. */
export class DemoJob {
  readonly settings: DemoSettings;
  readonly options: JobOptions;
  readonly tap: TapService;
  readonly label: string;
  phase: JobPhase = 'starting';
  /** Steps finished (warm-start and RL together) and their total. */
  done = 0;
  readonly total: number;
  readonly startedAt = performance.now();
  result: JobResult | null = null;
  error: unknown = null;
  #listeners = new Set<(e: JobEvent) => void>();
  #stopped = false;

  constructor(service: WorkerService, settings: DemoSettings, label = `${settings.env}/${settings.algo}`) {
    this.settings = settings;
    this.options = jobOptions(settings);
    this.tap = new TapService(service);
    this.label = label;
    this.total = (this.options.warmStart?.steps ?? 0) + settings.steps;
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

  async start(): Promise<JobResult | null> {
    this.#setPhase('starting');
    try {
      const r = await runTraining(this.tap, {
        ...this.options,
        onPhase: (p) => this.#setPhase(p),
        onStep: (m) => {
          this.done++;
          this.#emit({ type: 'step', metrics: m, done: this.done, total: this.total });
        },
      });
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

  /** Cancel the job's scheduler jobs: its queued quanta reject and the runner unwinds. */
  stop(): void {
    if (!this.running) return;
    this.#stopped = true;
    this.tap.stop();
  }
}
