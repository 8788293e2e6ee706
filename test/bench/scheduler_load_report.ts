/**
 * Figures of the scheduler under load (scheduler_load.ts) and their markdown — pure, unit-tested.
 * Latency percentiles are reported only; the verdicts are the correctness conditions.
 */
import { fmtBytes, fmtNum } from './harness.ts';
import { markdownTable } from './markdown.ts';
import { ownerGrowth, type LoadRaw } from './scheduler_load.ts';

/** Nearest-rank percentile (p in (0, 1]). */
function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new RangeError('percentile of no values');
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length, Math.max(1, Math.ceil(p * s.length))) - 1];
}

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface LoadFigures {
  model: string;
  callers: number;
  requests: number;
  /** Over how long the callers spread their requests (the window may run longer). */
  spread_s: number;
  window_s: number;
  answered_once: number;
  lost: number;
  answered_twice_or_more: number;
  /** Answers that differ from the same request's answer alone (given to the wrong caller). */
  mismatched: number;
  first_token_ms_under_load: Percentiles;
  first_token_ms_alone: Percentiles;
  training_steps: { a: number; b: number };
  pool: { warm_live_bytes: number; peak_sampled_live_bytes: number; after_live_bytes: number; after_cached_bytes: number; grown_owners: string[] };
  admission: { what: string; error: string }[];
  device_losses: number;
  targets: { exactly_once: boolean; pool_bounded: boolean; admission: boolean };
}

export function loadFigures(raw: LoadRaw, o: { model: string; callers: number; durationMs: number }): LoadFigures {
  const counts = raw.requestIds.map((id) => raw.answers[id] ?? 0);
  const perc = (xs: readonly number[]): Percentiles => ({ p50: pct(xs, 0.5), p95: pct(xs, 0.95), p99: pct(xs, 0.99) });
  const grown = Object.keys(ownerGrowth(raw.warm, raw.after));
  const f = {
    model: o.model,
    callers: o.callers,
    requests: raw.requestIds.length,
    spread_s: o.durationMs / 1000,
    window_s: raw.windowMs / 1000,
    answered_once: counts.filter((n) => n === 1).length,
    lost: counts.filter((n) => n === 0).length,
    answered_twice_or_more: counts.filter((n) => n > 1).length,
    mismatched: raw.mismatched.length,
    first_token_ms_under_load: perc(raw.latenciesMs),
    first_token_ms_alone: perc(raw.aloneMs),
    training_steps: raw.trainingSteps,
    pool: {
      warm_live_bytes: raw.warm.liveBytes,
      peak_sampled_live_bytes: Math.max(raw.warm.liveBytes, ...raw.samples.map((s) => s.liveBytes)),
      after_live_bytes: raw.after.liveBytes,
      after_cached_bytes: raw.after.cachedBytes,
      grown_owners: grown,
    },
    admission: raw.admission.map((a) => ({ what: a.what, error: a.error })),
    device_losses: raw.deviceLosses,
  };
  return {
    ...f,
    targets: {
      exactly_once: f.lost === 0 && f.answered_twice_or_more === 0 && f.mismatched === 0 && new Set(raw.requestIds).size === raw.requestIds.length,
      pool_bounded: grown.length === 0 && raw.after.liveBytes <= raw.warm.liveBytes,
      admission: raw.admission.length > 0 && raw.admission.every((a) => a.error === 'AdmissionError' && a.ownersAfter.length === 0) && raw.deviceLosses === 0,
    },
  };
}

export function loadMarkdown(f: LoadFigures): string {
  const yes = (ok: boolean) => (ok ? 'yes' : '**no**');
  const ms = (p: Percentiles) => `${fmtNum(p.p50)} / ${fmtNum(p.p95)} / ${fmtNum(p.p99)}`;
  return [
    '### Under load (issue 22 item 7)',
    '',
    `${f.model}: two LoRA training jobs (weights 2:1) loop forward/backward and optimizer steps while ${f.callers} concurrent callers send ${f.requests} interactive 1-token requests, spread over ${f.spread_s} s (the window ran ${f.window_s.toFixed(1)} s), through the GPU worker. Each answer is checked against the same request's answer alone. Partway, a full training job and a base model past the memory budget ask to be admitted.`,
    '',
    markdownTable(['figure', 'value', 'condition', 'met'], [
      ['requests answered exactly once', `${f.answered_once} of ${f.requests} (lost ${f.lost}, twice or more ${f.answered_twice_or_more}, not its own ${f.mismatched})`, 'all', yes(f.targets.exactly_once)],
      ['first-token ms under load, p50 / p95 / p99', ms(f.first_token_ms_under_load), 'reported', ''],
      ['first-token ms alone, p50 / p95 / p99', ms(f.first_token_ms_alone), 'reported', ''],
      ['training steps in the window (A / B)', `${f.training_steps.a} / ${f.training_steps.b}`, '', ''],
      ['pool live bytes after warm-up / sampled peak / after', `${fmtBytes(f.pool.warm_live_bytes)} / ${fmtBytes(f.pool.peak_sampled_live_bytes)} / ${fmtBytes(f.pool.after_live_bytes)} (cached free ${fmtBytes(f.pool.after_cached_bytes)})`,
        'after ≤ warm, no owner grown', yes(f.targets.pool_bounded) + (f.pool.grown_owners.length ? ` (${f.pool.grown_owners.join(', ')})` : '')],
      ['admission past the budget', f.admission.map((a) => `${a.what}: ${a.error}`).join('; '), `AdmissionError, nothing allocated, no device loss (${f.device_losses})`, yes(f.targets.admission)],
    ]),
    '',
  ].join('\n');
}
