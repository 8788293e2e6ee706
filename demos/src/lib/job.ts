/**
 * One training run of a demo page: the library's job runner (`runTraining`: an SFT warm start on
 * the environment's demonstrations, then LoRA RL) over the page's WorkerService, watched through
 * a TapService. Sizes are the pages' defaults, small enough to be usable on a software adapter
 * (SwiftShader: the first step of a run compiles the kernels and takes tens of seconds, later
 * steps of the tiny model a few seconds each); a real GPU takes bigger settings from the form or
 * the URL (`?model=gpt2-1m&steps=40&warmstart=40`).
 */
import {
  ConfigError,
  ENV_NAMES,
  type EnvName,
  type JobOptions,
  type JobResult,
  jobEnv,
  type LoraConfig,
  type ModelConfig,
  preset,
  runTraining,
  type StepMetrics,
  type WorkerService,
} from '../../../src/mod.ts';
import { TapService } from './tap.ts';

/** The algorithms the pages offer: the RL ones (each trains a LoRA adapter on the warm-started base). */
export const DEMO_ALGOS = ['grpo', 'rloo', 'reinforce', 'ppo', 'dpo'] as const;
export type DemoAlgo = (typeof DEMO_ALGOS)[number];
export const DEMO_MODELS = ['tiny-gpt2', 'gpt2-1m'] as const;
export type DemoModel = (typeof DEMO_MODELS)[number];

/** Context each environment's episodes need (prompt, every turn, byte tokens). */
const CONTEXT: Record<EnvName, number> = { calculator: 256, 'guess-number': 384, nim: 512 };

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

export const DEFAULT_SETTINGS: DemoSettings = {
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

export function modelFor(s: Pick<DemoSettings, 'model' | 'env'>): ModelConfig {
  return { ...preset(s.model), maxSeqLen: CONTEXT[s.env] };
}

export function loraFor(cfg: ModelConfig): LoraConfig {
  return { rank: 4, alpha: 8, targets: cfg.family === 'gpt2' ? ['q', 'k', 'v', 'o', 'up', 'down'] : ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] };
}

/** The job runner's options for demo settings (hyperparameters for a from-scratch model this small). */
export function jobOptions(s: DemoSettings): JobOptions {
  const env = jobEnv(s.env);
  const model = modelFor(s);
  return {
    env, algo: s.algo, model, lora: loraFor(model), steps: s.steps, seed: s.seed, groups: s.groups, groupSize: s.groupSize,
    lr: 5e-3,
    // The tiny model needs ~50 warm-start steps at this rate before its answers start to score
    // (calculator: SFT loss ~0.35 per action token, a few easy tasks right; llvmpipe, 2 cores).
    // Games are long sequences (a whole Nim game, ~400 byte tokens): half the batch.
    warmStart: s.warmstart > 0 ? { steps: s.warmstart, demos: 256, batchSize: s.env === 'nim' ? 8 : 16, lr: 2e-2 } : null,
    evalEpisodes: s.evalEpisodes, temperature: 1, maxNewTokens: env.maxNewTokens, rows: 8, maxGradNorm: 1,
  };
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
