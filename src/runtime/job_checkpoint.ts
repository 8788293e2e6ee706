/**
 * Checkpoints of the job runner (rl_job.ts): what a run's state is, and how it is kept in a
 * CheckpointStore (IndexedDB in browsers, files under Deno) so that a resumed run reproduces the
 * metrics of an uninterrupted one bitwise.
 *
 * A checkpoint is the phase's trainer state (trained tensors, AdamW moments, step counters), the
 * RL base when it is not the seeded init (the warm-started weights), and plain progress: curves,
 * the evaluation before RL, REINFORCE's baseline, token and time counters. The generators need no
 * state of their own: every random choice of a run is a counter-based stream of (job seed, step)
 * — stepSeed, the SFT minibatch order, packing seeds — and environments are reset from those
 * seeds every step, so the step counters are the generator states and data cursors.
 *
 * Store layout (one CheckpointStore, run name R): record R holds the trainer tensors
 * (`params/<name>`, `m/<name>`, `v/<name>`) and the progress; record `R.base` holds the RL base,
 * written once (it never changes after the warm start) and referenced by version from R.
 * Non-finite numbers (a skipped step's NaN loss) survive the JSON of the file backend tagged.
 */
import type { MovingBaseline } from '../algorithms/advantages.ts';
import { ConfigError } from '../errors.ts';
import type { HostParams, TrainerState } from './clients.ts';
import type { JobOptions } from './rl_job.ts';
import type { CheckpointStore } from './store/checkpoint_store.ts';
import { storedF32 } from './store/records.ts';

/** Where a run is, as plain data (see the header). */
export interface JobProgress {
  /** The phase the checkpoint was taken in, and its steps done. */
  readonly phase: 'sft' | 'rl';
  readonly step: number;
  readonly sftLossCurve: readonly number[];
  readonly rewardCurve: readonly number[];
  readonly lossCurve: readonly number[];
  /** Held-out evaluation before RL (for 'sft': before SFT), once taken. */
  readonly before: { readonly success: number; readonly meanReward: number } | null;
  /** REINFORCE's moving baseline. */
  readonly baseline: MovingBaseline;
  readonly trainTokens: number;
  readonly trainSeconds: number;
  readonly sampledTokens: number;
  readonly sampleSeconds: number;
  /** Wall time and peak pool bytes of the run so far (earlier resumed segments included). */
  readonly wallSeconds: number;
  readonly peakGpuBytes: number;
}

export interface JobCheckpoint extends JobProgress {
  /** The phase's trainer: the warm start's, or the RL policy's (weights, AdamW moments, step counts). */
  readonly trainer: TrainerState;
  /** The RL job's base — the warm-started weights; null when it is the seeded init (and in the SFT phase). */
  readonly base: HostParams | null;
}

export interface JobCheckpointing {
  /** Save after every `every` steps of a phase, at a phase's last step, and once RL is set up (warm start and evaluation done). */
  readonly every: number;
  readonly save: (c: JobCheckpoint) => Promise<void>;
  /** Resume from this checkpoint instead of starting afresh. */
  readonly from?: JobCheckpoint;
}

/** A checkpoint that does not belong to this job's options, or is ahead of them: a ConfigError naming why. */
export function checkResumable(o: JobOptions, from: JobCheckpoint): void {
  const sftSteps = o.algo === 'sft' ? o.steps : (o.warmStart?.steps ?? 0);
  if (from.phase === 'rl' && o.algo === 'sft') throw new ConfigError('checkpoint.phase', "an RL checkpoint cannot resume an 'sft' job");
  if (from.phase === 'sft' && from.step > sftSteps) {
    throw new ConfigError(o.algo === 'sft' ? 'steps' : 'warmStart.steps', `the checkpoint has ${from.step} SFT steps done, more than the ${sftSteps} asked for`);
  }
  if (from.phase === 'rl' && from.step > o.steps) throw new ConfigError('steps', `the checkpoint has ${from.step} RL steps done, more than the ${o.steps} asked for`);
  const rl = from.phase === 'rl' ? from.step : 0;
  if (from.rewardCurve.length !== rl || from.lossCurve.length !== rl || (from.phase === 'sft' && from.sftLossCurve.length !== from.step)) {
    throw new ConfigError('checkpoint', `its curves (${from.sftLossCurve.length} SFT, ${from.rewardCurve.length} RL) do not match its ${from.phase} step ${from.step}`);
  }
  // A from-scratch warm start trains every parameter; a pretrained model's trains the RL's own trainable.
  const full = (from.phase === 'sft' && !o.pretrained) || !o.lora;
  if (from.trainer.trainable !== (full ? 'all' : 'lora')) {
    throw new ConfigError('checkpoint.trainer', `trains '${from.trainer.trainable}', but this job's ${from.phase} phase is ${full ? 'full-parameter' : 'LoRA'}`);
  }
}

/** The plain part of a stored checkpoint. */
export interface StoredJobState {
  readonly progress: unknown;
  readonly trainer: { readonly trainable: TrainerState['trainable']; readonly step: number; readonly skipped: number };
  /** Version of record `<run>.base`, or null when the base is the seeded init. */
  readonly baseVersion: number | null;
}

const PARTS = ['params', 'm', 'v'] as const;

/** Saves and loads a run's checkpoints in a CheckpointStore under one run name. */
export class JobCheckpointer {
  readonly store: CheckpointStore<StoredJobState>;
  readonly run: string;
  #base: { params: HostParams; version: number } | null = null;

  constructor(store: CheckpointStore<StoredJobState>, run = 'run') {
    this.store = store;
    this.run = run;
  }

  /** The hook for JobOptions.checkpoint. */
  checkpointing(every: number, from?: JobCheckpoint): JobCheckpointing {
    if (!Number.isInteger(every) || every < 1) throw new ConfigError('checkpoint.every', `must be a positive integer, got ${every}`);
    return { every, save: (c) => this.save(c), ...(from ? { from } : {}) };
  }

  /** Resolves once the checkpoint is durable (a failed save leaves the previous one loadable). */
  async save(c: JobCheckpoint): Promise<void> {
    let baseVersion: number | null = null;
    if (c.base) {
      if (this.#base?.params !== c.base) {
        const meta = await this.store.save(`${this.run}.base`, storedF32(c.base), { step: 0, state: { progress: null, trainer: { trainable: 'all', step: 0, skipped: 0 }, baseVersion: null } });
        this.#base = { params: c.base, version: meta.version };
      }
      baseVersion = this.#base!.version;
    }
    const { trainer, base: _base, ...progress } = c;
    const tensors = PARTS.flatMap((p) => storedF32(trainer[p], `${p}/`));
    await this.store.save(this.run, tensors, {
      step: c.step,
      state: { progress: encodeNonFinite(progress), trainer: { trainable: trainer.trainable, step: trainer.step, skipped: trainer.skipped }, baseVersion },
    });
  }

  /** The latest checkpoint, or undefined when the run has none. */
  async latest(): Promise<JobCheckpoint | undefined> {
    if (!(await this.store.latest(this.run))) return undefined;
    const { meta, tensors } = await this.store.load(this.run);
    const { progress, trainer, baseVersion } = meta.state;
    const parts: Record<(typeof PARTS)[number], HostParams> = { params: {}, m: {}, v: {} };
    for (const t of tensors) {
      const slash = t.name.indexOf('/');
      const part = t.name.slice(0, slash) as (typeof PARTS)[number];
      if (!(PARTS as readonly string[]).includes(part) || !(t.data instanceof Float32Array)) throw new ConfigError('checkpoint', `unexpected tensor "${t.name}" in checkpoint "${this.run}"`);
      parts[part][t.name.slice(slash + 1)] = t.data;
    }
    let base: HostParams | null = null;
    if (baseVersion !== null) {
      const b = await this.store.load(`${this.run}.base`, baseVersion);
      base = Object.fromEntries(b.tensors.map((t) => [t.name, t.data as Float32Array]));
      this.#base = { params: base, version: baseVersion };
    }
    return { ...(decodeNonFinite(progress) as JobProgress), trainer: { ...trainer, ...parts }, base };
  }

  /** Delete every checkpoint of the run (a fresh start in an old folder). */
  async clear(): Promise<void> {
    for (const name of [this.run, `${this.run}.base`]) {
      if ((await this.store.versions(name)).length > 0) await this.store.delete(name);
    }
    this.#base = null;
  }
}

/** Numbers that JSON cannot carry (NaN, ±Infinity) as `{ nonFinite: "NaN" }`. */
export function encodeNonFinite(v: unknown): unknown {
  if (typeof v === 'number') return Number.isFinite(v) ? v : { nonFinite: String(v) };
  if (Array.isArray(v)) return v.map(encodeNonFinite);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encodeNonFinite(x)]));
  return v;
}

export function decodeNonFinite(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decodeNonFinite);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    const tag = (v as { nonFinite?: unknown }).nonFinite;
    if (keys.length === 1 && typeof tag === 'string' && ['NaN', 'Infinity', '-Infinity'].includes(tag)) return Number(tag);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decodeNonFinite(x)]));
  }
  return v;
}
