/**
 * The per-job metrics stream: each step's metrics (loss, reward mean and spread, KL, clip fraction,
 * entropy, tokens/s, device-time share) go to listeners as they happen — progress bars, charts —
 * and to a sink that keeps them as JSONL with the run: a file under Deno (the CLI's metrics.jsonl),
 * or a key-value store (IndexedDB in browsers) through kvMetricsSink.
 *
 * Also the reductions the job runner uses to fill those fields: token-weighted means of the
 * per-micro-batch loss statistics, and the spread of a rollout's rewards.
 */
import type { ForwardBackwardResult } from '../model/trainer.ts';
import type { KvStore } from './store/kv.ts';

/** Token-weighted means over a step's micro-batches of the loss kernel's statistics (each a mean over its unmasked tokens). */
export interface StepLossStats {
  readonly clipFraction: number;
  /** mean(old − new log-prob): the k1 estimate of KL(old ‖ new). */
  readonly approxKl: number;
  /** k3 KL to the reference policy (GRPO with a reference; else 0). */
  readonly refKl: number;
  readonly entropy: number;
}

export function stepLossStats(results: readonly Pick<ForwardBackwardResult, 'tokens' | 'stats'>[]): StepLossStats {
  let n = 0, clip = 0, kl = 0, ref = 0, ent = 0;
  for (const r of results) {
    n += r.tokens;
    clip += r.tokens * r.stats.clipFraction;
    kl += r.tokens * r.stats.approxKl;
    ref += r.tokens * r.stats.refKl;
    ent += r.tokens * r.stats.entropy;
  }
  if (n === 0) return { clipFraction: 0, approxKl: 0, refKl: 0, entropy: 0 };
  return { clipFraction: clip / n, approxKl: kl / n, refKl: ref / n, entropy: ent / n };
}

/** Population standard deviation (0 for fewer than two values). */
export function spread(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = xs.reduce((s, x) => s + x, 0) / xs.length;
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) * (x - m), 0) / xs.length);
}

/** A JSONL line (non-finite numbers as strings, so a skipped step's NaN loss survives). */
export function jsonLine(m: unknown): string {
  return JSON.stringify(m, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
}

/** Where the lines of a run go; awaited in order. */
export type MetricsSink = (line: string) => Promise<void>;

/**
 * One job's stream: `push` hands a step's metrics to every listener at once, and its JSONL line to
 * the sink in order (`flushed()` resolves when every line so far is written).
 */
export class MetricsStream<M extends object> {
  #listeners = new Set<(m: M) => void>();
  #all: M[] = [];
  #written: Promise<void> = Promise.resolve();
  readonly sink: MetricsSink | undefined;

  constructor(sink?: MetricsSink) {
    this.sink = sink;
  }

  on(f: (m: M) => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  push(m: M): void {
    this.#all.push(m);
    for (const f of this.#listeners) f(m);
    const sink = this.sink;
    if (sink) this.#written = this.#written.then(() => sink(jsonLine(m)));
  }

  /** Every step pushed so far. */
  all(): readonly M[] {
    return this.#all;
  }

  /** Resolves when the sink has every line pushed so far (rejects with its first failure). */
  flushed(): Promise<void> {
    return this.#written;
  }
}

/** Keeps a run's lines in a key-value store: `metrics/<run>/<n>` (n zero-padded, in order). */
export function kvMetricsSink(kv: KvStore, run: string): MetricsSink {
  let n = 0;
  let started: Promise<void> | null = null;
  return async (line) => {
    // Continue after lines an earlier session of the run left.
    started ??= kv.keys(`metrics/${run}/`).then((ks) => void (n = ks.length));
    await started;
    await kv.setMany([[`metrics/${run}/${String(n++).padStart(8, '0')}`, line]]);
  };
}

/** The lines of a run kept by kvMetricsSink, parsed, in order. */
export async function readKvMetrics<M>(kv: KvStore, run: string): Promise<M[]> {
  const out: M[] = [];
  for (const k of await kv.keys(`metrics/${run}/`)) {
    const line = await kv.get<string>(k);
    if (line !== undefined) out.push(JSON.parse(line) as M);
  }
  return out;
}
