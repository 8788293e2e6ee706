/**
 * Large-vocabulary cases, run by both GPU suites under both kernel tunings (bothTunings): the
 * fused policy loss and the sampler at V = 50257 (GPT-2), 151936 (Qwen) and 262144 (Gemma 3),
 * one to three rows each, against an independent f64 oracle written here.
 *
 * Rows: "peaked" (all logits 0 but one 20: a plain running f32 sum rounds 1 + e^-20 to 1 and
 * loses the whole tail — log p was 0.0 for a true −1.0358e-4), N(0, 3) logits, and logits up to
 * 80 (where m + log Σ rounded to f32 errs by 4e-6). Log-probs must be within 1e-6 absolute of
 * f64, or one f32 ulp of the log-prob where that is larger (|lp| ≥ 16: f32 cannot hold such a
 * value to 1e-6); entropies within 1e-6 relative. The sampler must take top-k + top-p at these V
 * on llvmpipe (its bisections once ran past the adapter's loop limit: a LimitError at 151936), keep
 * its draws in the reference's kept set, and report log-probs as exact as the loss kernel's, so an
 * on-policy PPO ratio is 1.
 */
import { assert } from 'chai';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { POLICY_STATS_SIZE, policyLoss, policyLossScratchSize, type PolicyLossTuning } from '../../../src/ops/policy_loss.ts';
import { policyLossRef } from '../../../src/ops/policy_loss.ref.ts';
import { sample, type SampleOptions } from '../../../src/ops/sample.ts';
import { sampleRef } from '../../../src/ops/sample.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { maxAbsDiff } from '../../reference/tf.ts';
import { bothTunings, firstBitDiff } from '../gpu.ts';
import type { GpuCase } from '../register.ts';
import { empty, releaseAll, run, up } from './helpers.ts';

export const VOCABS = [50_257, 151_936, 262_144] as const;

/** Three rows of V logits — peaked, N(0, 3), 70 + N(0, 3) up to 80 — and a target per row. */
export function vocabRows(v: number, seed: number): { logits: Float32Array; targets: Int32Array } {
  const rng = new Rng(seed, 3);
  const logits = new Float32Array(3 * v);
  logits[0] = 20;
  logits.set(rng.normalArray(v, 3), v);
  const high = rng.normalArray(v, 3);
  for (let j = 0; j < v; j++) logits[2 * v + j] = Math.min(80, 70 + high[j]);
  logits[2 * v + rng.nextInt(v)] = 80;
  return { logits, targets: Int32Array.of(0, rng.nextInt(v), rng.nextInt(v)) };
}

/** log softmax(row)[t] and the entropy of row r, in f64 (two passes: max, then sums). */
export function f64Row(logits: Float32Array, v: number, r: number, t: number): { lp: number; h: number } {
  const z = logits.subarray(r * v, (r + 1) * v);
  let m = -Infinity;
  for (let j = 0; j < v; j++) m = Math.max(m, z[j]);
  let s = 0, ts = 0;
  for (let j = 0; j < v; j++) {
    const e = Math.exp(z[j] - m);
    s += e;
    ts += e * (z[j] - m);
  }
  return { lp: z[t] - m - Math.log(s), h: Math.log(s) - ts / s };
}

/** The tolerance on a log-prob: 1e-6, or the f32 spacing at |lp| where that is larger. */
export function lpTolerance(lp: number): number {
  const a = Math.abs(lp);
  return a === 0 ? 1e-6 : Math.max(1e-6, 2 ** (Math.floor(Math.log2(a)) - 23));
}

/** Layouts `launch()` can take at V: all three where an invocation per row fits llvmpipe's loop limit. */
function layoutsAt(ctx: GpuContext, v: number): (PolicyLossTuning['layout'] | undefined)[] {
  const rowsFit = ctx.kind !== 'llvmpipe' || 2 * (Math.floor(v / 4) + (v % 4)) <= 64_535 - 1000;
  return rowsFit ? [undefined, 'groups', 'rows', 'texture'] : [undefined, 'groups'];
}

async function runLoss(ctx: GpuContext, logits: Float32Array, targets: Int32Array, v: number, tuning: PolicyLossTuning) {
  const n = targets.length;
  const tl = up(ctx, logits, [n, v]), tt = up(ctx, targets), tw = up(ctx, new Float32Array(n).fill(1));
  const out = {
    dlogits: empty(ctx, [n, v]), logprobs: empty(ctx, [n]), entropy: empty(ctx, [n]), loss: empty(ctx, [n]),
    stats: empty(ctx, [POLICY_STATS_SIZE]), scratch: empty(ctx, [policyLossScratchSize(n)]),
  };
  const [dlogits, logprobs, entropy] = await run<Float32Array>(ctx, [out.dlogits, out.logprobs, out.entropy], (rec) =>
    policyLoss(rec, out, { logits: tl, targets: tt, weights: tw }, { kind: 'cross_entropy', aggregation: 'sum' }, tuning));
  releaseAll(tl, tt, tw, ...Object.values(out));
  return { dlogits, logprobs, entropy };
}

async function runSample(ctx: GpuContext, logits: Float32Array, b: number, v: number, opts: Omit<SampleOptions, 'keys'>) {
  const tl = up(ctx, logits, [b, v]);
  const tokens = empty(ctx, [b], 'i32'), lp = empty(ctx, [b]), lpr = empty(ctx, [b]);
  const [t, l, r] = await run(ctx, [tokens, lp, lpr], (rec) => sample(rec, tokens, lp, lpr, tl, opts));
  releaseAll(tl, tokens, lp, lpr);
  return { tokens: t as Int32Array, logprobs: l as Float32Array, logprobsRaw: r as Float32Array };
}

export const largeVocabLossCases: GpuCase[] = [
  {
    name: 'policy_loss: V = 50257, 151936, 262144 — log-probs within 1e-6 of f64 and entropies within 1e-6 relative, every layout, both tunings',
    async fn() {
      const worst = new Map<string, number>();
      const note = (k: string, e: number) => worst.set(k, Math.max(worst.get(k) ?? 0, e));
      for (const ctx of await bothTunings()) {
        for (const v of VOCABS) {
          const { logits, targets } = vocabRows(v, v);
          const want = [0, 1, 2].map((r) => f64Row(logits, v, r, targets[r]));
          // The TypeScript reference (f64 inside, f32 out) is within f32 rounding of the oracle.
          const ref = policyLossRef({ logits, targets, weights: new Float32Array(3).fill(1) }, { kind: 'cross_entropy', aggregation: 'sum' });
          want.forEach((w, r) => {
            assert.isAtMost(Math.abs(ref.logprobs[r] - w.lp), lpTolerance(w.lp) / 2, `reference lp row ${r} V=${v}`);
            assert.isAtMost(Math.abs(ref.entropy[r] - w.h), 1e-7 * w.h, `reference entropy row ${r} V=${v}`);
          });
          for (const layout of layoutsAt(ctx, v)) {
            const what = `${ctx.tuning} tuning, layout ${layout ?? 'default'}, V=${v}`;
            const got = await runLoss(ctx, logits, targets, v, layout ? { layout } : {});
            want.forEach((w, r) => {
              const e = Math.abs(got.logprobs[r] - w.lp);
              if (Math.abs(w.lp) < 16) note(`lp V=${v}`, e);
              else note(`lp (ulps, |lp| ≥ 16) V=${v}`, e / lpTolerance(w.lp));
              assert.isAtMost(e, lpTolerance(w.lp), `${what}: row ${r} log p ${got.logprobs[r]} vs ${w.lp}`);
              const eh = Math.abs(got.entropy[r] - w.h) / w.h;
              note(`H V=${v}`, eh);
              assert.isAtMost(eh, 1e-6, `${what}: row ${r} entropy ${got.entropy[r]} vs ${w.h}`);
            });
            // The gradient −p_j (+1 at the target) follows: within 1e-7 absolute of the reference's.
            const eg = maxAbsDiff(got.dlogits, ref.dlogits);
            note(`dlogits V=${v}`, eg);
            assert.isAtMost(eg, 1e-7, `${what}: dlogits`);
          }
        }
      }
      console.log(`large V worst: ${[...worst].map(([k, e]) => `${k} ${e.toExponential(1)}`).join(', ')}`);
    },
  },
];

export const largeVocabSampleCases: GpuCase[] = [
  {
    name: 'sample: top-k 50 + top-p 0.9 at V = 151936 and 262144, both tunings — draws in the reference\'s kept set, equal to its draws, same seed same tokens',
    async fn() {
      const contexts = await bothTunings();
      for (const v of [151_936, 262_144]) {
        const { logits } = vocabRows(v, v + 1);
        // Two settings at 151936, one at 262144 (each a ~110-pass bisection of the row on a CPU adapter).
        const settings = [{ temperature: 1, topK: 50, topP: 0.9, seed: 7 }, { temperature: 0.8, topK: 50, topP: 0.9, seed: 8, step: 3 }];
        for (const [j, opts] of settings.slice(0, v > 151_936 ? 1 : 2).entries()) {
          const ref = sampleRef(logits, 3, v, opts);
          for (const ctx of contexts) {
            const what = `${ctx.tuning} tuning, V=${v}, ${JSON.stringify(opts)}`;
            const got = await runSample(ctx, logits, 3, v, opts);
            for (let r = 0; r < 3; r++) {
              assert.include(ref.kept[r], got.tokens[r], `${what}: row ${r} drew outside the kept set`);
              // Away from f32 rounding at a boundary (see sampleRef), the very same token.
              if (ref.margin[r] >= 4e-6) assert.strictEqual(got.tokens[r], ref.tokens[r], `${what}: row ${r}`);
            }
            assert.strictEqual(ref.kept[0].length, 1, 'the peaked row keeps its one token under top-p 0.9');
            assert.isAtMost(ref.kept[1].length, 50, 'top-k bounds the N(0, 3) row');
            if (j === 0) {
              const again = await runSample(ctx, logits, 3, v, opts);
              for (const k of ['tokens', 'logprobs', 'logprobsRaw'] as const) assert.strictEqual(firstBitDiff(got[k], again[k]), -1, `${what}: ${k} bitwise`);
            }
          }
        }
      }
    },
  },
  {
    name: 'sample: log-probs at V = 50257, 151936, 262144 within 1e-6 of f64; the on-policy PPO ratio against the loss kernel is 1 ± 2e-6',
    async fn() {
      let worst = 0, worstRatio = 0;
      for (const ctx of await bothTunings()) {
        for (const v of VOCABS) {
          const { logits } = vocabRows(v, v + 2);
          const what = `${ctx.tuning} tuning, V=${v}`;
          // T = 1, no filters: logprobs and logprobsRaw are both log softmax(logits)[token].
          const got = await runSample(ctx, logits, 3, v, { temperature: 1, seed: 11 });
          for (let r = 0; r < 3; r++) {
            const { lp } = f64Row(logits, v, r, got.tokens[r]);
            for (const k of ['logprobs', 'logprobsRaw'] as const) {
              const e = Math.abs(got[k][r] - lp);
              if (Math.abs(lp) < 16) worst = Math.max(worst, e);
              assert.isAtMost(e, lpTolerance(lp), `${what}: row ${r} ${k} ${got[k][r]} vs ${lp}`);
            }
          }
          // The loss kernel's log-probs of the drawn tokens: the ratio r = exp(lp − old) is 1.
          const loss = await runLoss(ctx, logits, got.tokens, v, {});
          for (let r = 0; r < 3; r++) {
            const d = Math.abs(Math.exp(loss.logprobs[r] - got.logprobsRaw[r]) - 1);
            worstRatio = Math.max(worstRatio, d);
            assert.isAtMost(d, 2 * lpTolerance(loss.logprobs[r]), `${what}: row ${r} PPO ratio off by ${d}`);
          }
        }
      }
      console.log(`sampler large V: worst log-prob error ${worst.toExponential(1)} (|lp| < 16), worst |ratio − 1| ${worstRatio.toExponential(1)}`);
    },
  },
];
