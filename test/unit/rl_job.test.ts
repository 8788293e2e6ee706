/** The job runner's pure parts: step seeds, minibatch order, packing lengths, the summary JSON shape and the SVG writer. */
import { describe, expect, it } from 'vitest';
import { metricsLine, summaryTable } from '../../src/cli/report.ts';
import { runCurvesSvg } from '../../src/cli/plot.ts';
import { demonstrationTrajectories, evalEpisodes } from '../../src/runtime/evaluate.ts';
import { jobEnv, NIM_JOB } from '../../src/runtime/job_envs.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { nimEnv, nimOptimalMove, nimPiles, parseNimMove } from '../../src/env/envs/nim.ts';
import { Rng } from '../../src/util/rng.ts';
import { type JobResult, stepSeed, summaryOf } from '../../src/runtime/rl_job.ts';
import { minibatchOrder, scheduledLr } from '../../src/runtime/sft_job.ts';
import { packedPositions, packForTraining, seqLenFor } from '../../src/runtime/train_step.ts';
import { datumFromSequence } from '../../src/algorithms/datum.ts';
import { ConfigError } from '../../src/errors.ts';

const adapter = { vendor: 'mesa', architecture: '', device: '', description: 'llvmpipe', isFallbackAdapter: true, features: [], limits: {}, host: 'deno' };

function result(): JobResult {
  return {
    env: 'calculator', algo: 'grpo', seed: 3, steps: 2, model: 'tiny-gpt2', trainable: 'lora', lora: { rank: 2, alpha: 4, targets: ['q'] }, warmStartSteps: 1,
    rewardCurve: [0.25, 0.5], lossCurve: [0.1, -0.05], sftLossCurve: [5], successBefore: 0.25, successAfter: 0.5, rewardBefore: 0.2, rewardAfter: 0.45,
    evalEpisodes: 8, wallSeconds: 12, trainTokensPerSecond: 100, sampleTokensPerSecond: 50, peakGpuBytes: 2 ** 20,
    device: adapter as unknown as JobResult['device'],
    trained: { cfg: {} as JobResult['trained']['cfg'], lora: null, tensors: { x: new Float32Array(2) } },
  };
}

describe('job runner, pure parts', () => {
  it('step seeds differ per step and depend only on the job seed', () => {
    const a = Array.from({ length: 20 }, (_, s) => stepSeed(7, s));
    expect(new Set(a).size).toBe(20);
    expect(Array.from({ length: 20 }, (_, s) => stepSeed(7, s))).toEqual(a);
    expect(stepSeed(8, 0)).not.toBe(a[0]);
  });
  it('minibatches cover every item once per epoch, deterministically', () => {
    const order = minibatchOrder(10, 4, 5, 1); // 20 draws = two epochs
    expect(order.map((b) => b.length)).toEqual([4, 4, 4, 4, 4]);
    const flat = order.flat();
    expect([...flat.slice(0, 10)].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(minibatchOrder(10, 4, 5, 1)).toEqual(order);
    expect(minibatchOrder(10, 4, 5, 2)).not.toEqual(order);
    expect(minibatchOrder(3, 8, 1, 0)[0].length).toBe(3);
  });
  it('SFT learning-rate schedules: constant, and cosine with a 5% linear warm-up down to 10%', () => {
    expect([0, 50, 99].map((s) => scheduledLr(1e-3, s, 100))).toEqual([1e-3, 1e-3, 1e-3]);
    const lr = Array.from({ length: 100 }, (_, s) => scheduledLr(1, s, 100, 'cosine'));
    expect(lr.slice(0, 5)).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    expect(lr[5]).toBeCloseTo(1, 12); // the decay starts at the peak
    expect(lr[99]).toBeCloseTo(0.1, 12);
    expect(lr[52]).toBeCloseTo(0.55, 2); // half-way down the cosine
    for (let s = 6; s < 100; s++) expect(lr[s]).toBeLessThanOrEqual(lr[s - 1]);
    expect(scheduledLr(1, 0, 1, 'cosine')).toBe(1);
  });

  it('packs to the longest datum rounded up to 16, capped by the context', () => {
    const d = (n: number) => datumFromSequence(0, new Array(n + 1).fill(1), new Array(n + 1).fill(1), new Array(n + 1).fill(0));
    expect(seqLenFor([d(3), d(17)], 256)).toBe(32);
    expect(seqLenFor([d(16)], 256)).toBe(16);
    expect(seqLenFor([d(250)], 64)).toBe(64);
  });
  it('packs a training step in rows of twice the longest datum, unless rows of the longest alone compute fewer positions', () => {
    const d = (n: number, id: number) => datumFromSequence(id, new Array(n + 1).fill(1), new Array(n + 1).fill(1), new Array(n + 1).fill(0));
    const pack = { rows: 16, maxSeqLen: 256, padId: 0 };
    // 32 datums of 140: rows of 256 (the context caps 2 × 144) hold one each, as rows of 144 do — those compute 44% fewer positions.
    const long = Array.from({ length: 32 }, (_, i) => d(140, i));
    const tight = packForTraining(long, pack, 1, 'token_mean');
    expect(tight.batches.map((b) => [b.rows, b.seqLen])).toEqual([[16, 144], [16, 144]]);
    expect(packedPositions(tight)).toBe(32 * 144);
    // 32 datums of 40 to 47: two per row of 96 (16 rows) beat one per row of 48 (32 rows) only in rows, not positions — a tie keeps the wide rows.
    const short = Array.from({ length: 32 }, (_, i) => d(40 + (i % 8), i));
    const wide = packForTraining(short, pack, 1, 'token_mean');
    expect(wide.batches.map((b) => b.seqLen)).toEqual([96]);
    expect(packedPositions(wide)).toBe(16 * 96);
    // Mixed lengths share rows: 16 of 20 and 16 of 100 in rows of 224 (2 × 112), fewer positions than 32 rows of 112.
    const mixed = [...Array.from({ length: 16 }, (_, i) => d(20, i)), ...Array.from({ length: 16 }, (_, i) => d(100, 16 + i))];
    const shared = packForTraining(mixed, pack, 1, 'token_mean');
    expect(shared.batches.map((b) => b.seqLen)).toEqual([224]);
    expect(packedPositions(shared)).toBeLessThan(32 * 112);
    // Every datum is packed once, whichever rows were chosen.
    const ids = (step: typeof tight) => step.batches.flatMap((b) => [...b.seqIdBT].map((x, i) => (x >= 0 ? b.sequenceIdBT[i] : -1))).filter((x) => x >= 0);
    for (const [step, ds] of [[tight, long], [wide, short], [shared, mixed]] as const) {
      expect([...new Set(ids(step))].sort((a, b) => a - b)).toEqual(ds.map((_, i) => i));
      expect(ids(step)).toHaveLength(ds.reduce((s, x) => s + x.targetsT.length, 0));
    }
  });
  it('evaluation seeds are held out from the training steps and fixed by the job seed', () => {
    const e = evalEpisodes(16, 5);
    expect(e).toHaveLength(16);
    expect(new Set(e.map((x) => x.seed)).size).toBe(16);
    expect(evalEpisodes(16, 5)).toEqual(e);
    expect(e.map((x) => x.seed)).not.toContain(stepSeed(5, 0));
  });
  it('names the environments and refuses others', () => {
    expect(jobEnv('calculator').kind).toBe('single');
    expect(jobEnv('guess-number').maxTurns).toBe(5);
    expect(jobEnv('nim').kind).toBe('game');
    expect(() => jobEnv('chess')).toThrow(ConfigError);
  });
  it("the job's nim is two piles of 1..5 whose demonstrated moves are all Bouton's (one object off the larger pile where none wins), seats alternating by game", async () => {
    const env = jobEnv('nim');
    if (env.kind !== 'game') throw new Error('nim is a game');
    expect(NIM_JOB).toMatchObject({ piles: 2, maxPile: 5, demoSeat: 'each' });
    const first = await env.spec.create().reset(9);
    expect(first.observation).toMatch(/Piles: [1-5] [1-5]\. Your move\.$/);
    const moves = [0, 0];
    const demos = env.spec.demonstrations!(64, new Rng(2));
    expect(demos.map((d) => d.player ?? 0)).toEqual(demos.map((_, i) => i % 2));
    for (const d of demos) {
      const piles = nimPiles(d.seed, 2, 5);
      d.actions.forEach((a, i) => {
        const m = parseNimMove(a)!;
        if (i % 2 === (d.player ?? 0)) {
          expect(m).toEqual(nimOptimalMove(piles, new Rng(0), 'stall'));
          moves[i % 2]++;
        }
        piles[m.pile] -= m.count;
      });
    }
    expect(moves[0]).toBeGreaterThan(32);
    expect(moves[1]).toBeGreaterThan(16);
  });
  it("a game's warm-start trajectories are each demonstration's named seat (player 1 where it names none)", async () => {
    const base = jobEnv('nim');
    const agent = { tokenizer: new ByteTokenizer(), maxNewTokens: 24, maxSequenceTokens: 512, temperature: 1 };
    for (const demoSeat of ['first', 'each'] as const) {
      const env = { ...base, spec: nimEnv({ ...NIM_JOB, demoSeat }) } as typeof base;
      const ts = await demonstrationTrajectories(env, 16, 3, agent);
      expect(ts.map((t) => t.episodeId)).toEqual(Array.from({ length: 16 }, (_, i) => i));
      expect(ts.map((t) => t.player)).toEqual(ts.map((_, i) => (demoSeat === 'each' ? i % 2 : 0)));
      for (const t of ts) expect(t.turns.length).toBeGreaterThan(0);
    }
  });
  it('the summary JSON has the issue fields and no tensors', () => {
    const s = summaryOf(result());
    const json = JSON.parse(JSON.stringify(s));
    for (const k of ['env', 'algo', 'seed', 'steps', 'rewardCurve', 'lossCurve', 'successBefore', 'successAfter', 'wallSeconds', 'trainTokensPerSecond', 'sampleTokensPerSecond', 'peakGpuBytes', 'device']) {
      expect(json).toHaveProperty(k);
    }
    expect(json).not.toHaveProperty('trained');
    expect(json.rewardCurve).toEqual([0.25, 0.5]);
  });
  it('summary table and metrics line', () => {
    const t = summaryTable(summaryOf(result()), ['runs/x/metrics.jsonl']);
    expect(t).toContain('25.0% → 50.0% (+25.0 points, 8 episodes)');
    expect(t).toContain('LoRA r=2');
    expect(t).toContain('runs/x/metrics.jsonl');
    const line = metricsLine({ phase: 'rl', step: 0, loss: 1, reward: 0.5, gradNorm: 2, skipped: false, trainTokens: 10, sampledTokens: 5, trainSeconds: 1, sampleSeconds: 1, datums: 4, dropped: 0 });
    expect(line).not.toContain('\n');
    expect(JSON.parse(line).reward).toBe(0.5);
  });
  it('draws curve.svg with Observable Plot: labelled panels for the warm start, the reward with the held-out points, and the RL loss', () => {
    const svg = runCurvesSvg({ title: 'a < b & "c"', subtitle: 'x', reward: [0.25, 0.25, 0.25], loss: [2, NaN, 1], sftLoss: [5, 3, 2, 1], evaluation: { before: 0.5, after: 0.75, episodes: 128 } });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('a &lt; b &amp; &quot;c&quot;');
    for (const label of ['SFT step', 'warm-start loss', 'RL step', 'mean reward · held-out success (128 ep.)', 'RL loss', '50%', '75%']) expect(svg).toContain(label);
    expect(svg).toContain('aria-label="y-grid"');
    // A constant reward keeps the [0, 1] axis (ticks 0.0 … 1.0), not an axis around the constant.
    const rewardPanel = svg.split('<g class="panel"')[2];
    expect(rewardPanel).toContain('>1<');
    expect(rewardPanel).toContain('>0<');
    expect(rewardPanel).toContain('>0.4<');
    expect(svg.split('<g class="panel"').length).toBe(4);
    expect(runCurvesSvg({ title: 't', reward: [], loss: [] })).toContain('no steps');
    // An SFT job: the warm-start panel and the evaluation points only.
    expect(runCurvesSvg({ title: 't', reward: [], loss: [], sftLoss: [1, 0.5], evaluation: { before: 0, after: 0.5, episodes: 8 } }).split('<g class="panel"').length).toBe(3);
  });
});
