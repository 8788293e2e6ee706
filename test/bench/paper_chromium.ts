/**
 * Deno on llvmpipe against Chromium on SwiftShader (issue 8, reproducibility): the bench starts
 * vitest's browser mode on test/bench/chromium/ (the browser suite's Chromium and flags), whose
 * page runs the table's LoRA jobs — the same jobOptions, resumed from the same warm-start
 * checkpoints, handed over in a file — and writes their results to a file; the gap is
 * |mean final success there − mean here| over the seeds. The warm starts are not trained again
 * there: SwiftShader ran the warm start about 4× slower than llvmpipe here (50 tiny-gpt2 steps:
 * 115 s against 21 s), which would add hours to the full run; so what crosses adapters is the RL
 * phase and its evaluations. Where Chromium cannot run (no binary, no permission to start node —
 * `npm run bench` grants --allow-run=node —, a failed run) the figure is null with the reason.
 */
import { spawn } from 'node:child_process';
import process from 'node:process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumPath } from '../../scripts/chromium.ts';
import type { JobCheckpoint } from '../../src/runtime/job_checkpoint.ts';
import { type CrossResult, fromTransferJson, type PaperSettings, transferJson } from './paper_settings.ts';
import { firstDifference, meanSd } from './paper_stats.ts';

/** What the Deno side reached per seed (the table's LoRA job) and the warm start it resumed. */
export interface DenoSeed {
  readonly seed: number;
  readonly warm: JobCheckpoint;
  readonly successAfter: number;
  readonly rewardCurve: readonly number[];
  readonly lossCurve: readonly number[];
}

export interface CrossSeedComparison {
  readonly seed: number;
  readonly deno: number;
  readonly chromium: number;
  /** First RL step whose mean reward (loss) differs bitwise between the adapters; −1: none. */
  readonly firstRewardDifference: number;
  readonly firstLossDifference: number;
}

export type CrossOutcome =
  | { readonly gap: number; readonly denoMean: number; readonly chromiumMean: number; readonly seeds: readonly CrossSeedComparison[]; readonly chromium: CrossResult; readonly seconds: number; readonly reason?: undefined }
  | { readonly gap: null; readonly reason: string };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The comparison of the two sides' seeds (pure). */
export function crossCompare(deno: readonly Omit<DenoSeed, 'warm'>[], chromium: CrossResult): { gap: number; denoMean: number; chromiumMean: number; seeds: CrossSeedComparison[] } {
  const seeds = deno.map((d) => {
    const c = chromium.seeds.find((x) => x.seed === d.seed);
    if (!c) throw new Error(`the Chromium run has no result for seed ${d.seed}`);
    return { seed: d.seed, deno: d.successAfter, chromium: c.successAfter, firstRewardDifference: firstDifference(d.rewardCurve, c.rewardCurve), firstLossDifference: firstDifference(d.lossCurve, c.lossCurve) };
  });
  const denoMean = meanSd(seeds.map((x) => x.deno)).mean;
  const chromiumMean = meanSd(seeds.map((x) => x.chromium)).mean;
  return { gap: Math.abs(chromiumMean - denoMean), denoMean, chromiumMean, seeds };
}

export async function runCrossAdapter(s: PaperSettings, deno: readonly DenoSeed[], log: (line: string) => void): Promise<CrossOutcome> {
  if (!existsSync(chromiumPath())) return { gap: null, reason: `no Chromium at ${chromiumPath()} (install it, or set CHROMIUM_PATH)` };
  const stamp = Date.now();
  const out = join(ROOT, 'test-results', `bench-paper-chromium-${stamp}.json`);
  const warmStarts = join(ROOT, 'test-results', `bench-paper-warm-${stamp}.json`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(warmStarts, transferJson(deno.map((d) => d.warm)));
  log(`cross-adapter: the LoRA jobs of seeds ${s.seeds.join(', ')} in headless Chromium on SwiftShader (vitest browser mode)`);
  const t0 = performance.now();
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn('node', [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', join(ROOT, 'test', 'bench', 'chromium', 'vitest.config.ts')], {
        cwd: ROOT,
        env: { ...process.env, BENCH_PAPER_CROSS: JSON.stringify({ settings: s, warmStarts, out }) },
        stdio: 'inherit',
      });
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0 || !existsSync(out)) return { gap: null, reason: `the Chromium run failed (vitest exit code ${code}${existsSync(out) ? '' : ', no result file'})` };
    const chromium = fromTransferJson(await readFile(out, 'utf8')) as CrossResult;
    const c = crossCompare(deno, chromium);
    log(`cross-adapter: mean held-out success Deno ${c.denoMean.toFixed(3)}, Chromium ${c.chromiumMean.toFixed(3)}: gap ${c.gap.toFixed(3)}`);
    return { ...c, chromium, seconds: (performance.now() - t0) / 1000 };
  } catch (e) {
    // Under Deno without --allow-run=node, starting node throws here (npm run bench grants it).
    return { gap: null, reason: `Chromium could not be run: ${e instanceof Error ? e.message : String(e)}` };
  } finally {
    await rm(out, { force: true });
    await rm(warmStarts, { force: true });
  }
}
