/**
 * Settings of the `paper` part (issue 8) and the job each figure runs — plain data and jobOptions
 * inputs only, so the Deno bench and the Chromium page (test/bench/chromium/) build the very same
 * jobs from them.
 *
 * The table: `npm run train`'s calculator job (TRAIN_DEFAULTS: gpt2-100k from scratch, a 300-step
 * full-parameter SFT warm start, 20 GRPO steps of 16 tasks × 4 attempts, 128 held-out episodes),
 * its RL either LoRA (r = 8 on q,k,v,o,up,down at TRAIN_DEFAULTS' 5e-3) or full-parameter at 5e-4:
 * a tenth of LoRA's rate, as "LoRA Without Regret" (Schulman et al., Thinking Machines, 2025)
 * finds LoRA's best learning rate about ten times full fine-tuning's; the warm start itself peaked
 * at 1e-2 and decayed to 0, so 5e-4 continues it gently rather than restarting it.
 */
import { TRAIN_DEFAULTS, type TrainSettings } from '../../src/runtime/train.ts';
import { vowelsJobEnv } from '../shared/vowels_env.ts';

export interface WarmStart {
  readonly steps: number;
  readonly demos: number;
  readonly batchSize: number;
  readonly lr: number;
}

export interface PaperSettings {
  /** The table's environment: calculator; `--quick` runs the test suites' graded-reward env, where a tiny model's RL steps train (calculator's rewards are all 0 for it). */
  readonly env: 'calculator' | 'vowels';
  readonly model: string;
  readonly seeds: readonly number[];
  /** RL steps of each mode. */
  readonly steps: number;
  readonly groups: number;
  readonly groupSize: number;
  readonly warmStart: WarmStart;
  readonly loraRank: number;
  readonly loraLr: number;
  readonly fullLr: number;
  readonly evalEpisodes: number;
  /** The reproducibility job: LoRA RL from the first seed's warm start; `resumeAt` is where the interrupted run stops. */
  readonly repro: { readonly steps: number; readonly resumeAt: number; readonly evalEpisodes: number };
}

/**
 * Issue 8's run: on two llvmpipe cores (measured 2026-12-04 at 178dbe7) warm starts 92–111 s per
 * seed, a table job's RL phase 25–44 s, reproducibility ~2 min, the three Chromium jobs on
 * SwiftShader 621 s (then 2786 s with the nim arena, since moved to the agents part).
 */
export const PAPER_RUN: PaperSettings = Object.freeze({
  env: 'calculator',
  model: TRAIN_DEFAULTS.model,
  seeds: [0, 1, 2],
  steps: TRAIN_DEFAULTS.steps,
  groups: TRAIN_DEFAULTS.groups,
  groupSize: TRAIN_DEFAULTS.groupSize,
  warmStart: { steps: TRAIN_DEFAULTS.warmstartSteps, demos: TRAIN_DEFAULTS.warmstartDemos, batchSize: TRAIN_DEFAULTS.warmstartBatch, lr: TRAIN_DEFAULTS.warmstartLr },
  loraRank: TRAIN_DEFAULTS.loraRank,
  loraLr: TRAIN_DEFAULTS.lr,
  fullLr: TRAIN_DEFAULTS.lr / 10,
  evalEpisodes: TRAIN_DEFAULTS.evalEpisodes,
  repro: { steps: 6, resumeAt: 3, evalEpisodes: 32 },
});

/**
 * `--quick`: the same code on tiny-gpt2, a few steps, one seed — a smoke test, not a measurement.
 * On the graded-reward `vowels` env, so its RL steps train: tiny-gpt2 answers no calculator task
 * right after 200 warm-start steps (measured), and GRPO then skips every group.
 */
export const PAPER_QUICK: PaperSettings = Object.freeze({
  ...PAPER_RUN,
  env: 'vowels',
  model: 'tiny-gpt2',
  seeds: [0],
  steps: 3,
  groups: 4,
  groupSize: 4,
  warmStart: { steps: 4, demos: 64, batchSize: 8, lr: 1e-2 },
  evalEpisodes: 16,
  repro: { steps: 2, resumeAt: 1, evalEpisodes: 4 },
});

export type Mode = 'lora' | 'full';

/** The table's job of one seed: LoRA or full-parameter RL (jobOptions fills the rest from TRAIN_DEFAULTS). */
export function paperJob(s: PaperSettings, seed: number, mode: Mode): TrainSettings {
  return {
    env: s.env === 'vowels' ? vowelsJobEnv() : s.env, model: s.model, seed, steps: s.steps, groups: s.groups, groupSize: s.groupSize, warmStart: s.warmStart,
    evalEpisodes: s.evalEpisodes, lr: mode === 'lora' ? s.loraLr : s.fullLr, lora: mode === 'lora' ? { rank: s.loraRank } : null, id: `${mode}-${seed}`,
  };
}

/** What the Chromium page is asked to run, and where it writes its answer. */
export interface CrossRequest {
  readonly settings: PaperSettings;
  /** Absolute path of a file holding `transferJson(JobCheckpoint[])`: each seed's warm start, the Deno side's. */
  readonly warmStarts: string;
  /** Absolute path of the JSON the page writes (a CrossResult). */
  readonly out: string;
}

function bytesToBase64(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

function base64ToBytes(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** JSON that keeps Float32Arrays bitwise (base64 of their bytes) and non-finite numbers — a JobCheckpoint between Deno and a page. */
export function transferJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x instanceof Float32Array) return { f32: bytesToBase64(new Uint8Array(x.buffer, x.byteOffset, x.byteLength)) };
    if (typeof x === 'number' && !Number.isFinite(x)) return { nonFinite: String(x) };
    return x;
  });
}

export function fromTransferJson(s: string): unknown {
  return JSON.parse(s, (_k, x: unknown) => {
    if (x && typeof x === 'object' && !Array.isArray(x)) {
      const keys = Object.keys(x);
      const o = x as { f32?: unknown; nonFinite?: unknown };
      if (keys.length === 1 && typeof o.f32 === 'string') {
        const b = base64ToBytes(o.f32);
        return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
      }
      if (keys.length === 1 && typeof o.nonFinite === 'string') return Number(o.nonFinite);
    }
    return x;
  });
}

/** One seed's LoRA job on the other adapter. */
export interface CrossSeed {
  readonly seed: number;
  readonly successBefore: number;
  readonly successAfter: number;
  readonly rewardCurve: readonly number[];
  readonly lossCurve: readonly number[];
  /** Seconds of the job (RL phase and its evaluations). */
  readonly seconds: number;
}

export interface CrossResult {
  readonly adapter: { readonly vendor: string; readonly architecture: string; readonly device: string; readonly description: string; readonly isFallbackAdapter: boolean };
  readonly userAgent: string;
  readonly seeds: readonly CrossSeed[];
}
