// The CPU half of one RL step, end to end: rollout → datums → packed [B, T] batch → loss, and the
// agreement of this layer's loss references with the kernel's own CPU reference (src/ops).
import { describe, expect, it } from 'vitest';
import { EMPTY_BASELINE } from '../../src/algorithms/advantages.ts';
import type { Datum } from '../../src/algorithms/datum.ts';
import { dpoDatums, dpoPairsFromGroups } from '../../src/algorithms/dpo.ts';
import { grpoDatums } from '../../src/algorithms/grpo.ts';
import { grpoLoss, importanceSamplingLoss, ppoLoss, type PolicyLossSpec } from '../../src/algorithms/loss_spec.ts';
import { POLICY_TERMS, policyLossReference } from '../../src/algorithms/losses.ts';
import { packDatums } from '../../src/algorithms/pack.ts';
import { clippedValueLoss, ppoDatums } from '../../src/algorithms/ppo.ts';
import { reinforceDatums } from '../../src/algorithms/reinforce.ts';
import { rlooDatums } from '../../src/algorithms/rloo.ts';
import { Agent } from '../../src/env/agent.ts';
import { guessNumberEnv } from '../../src/env/envs/guess_number.ts';
import { rolloutGroups } from '../../src/env/rollout.ts';
import { TERMS } from '../../src/ops/policy_loss.ref.ts';
import { valueLossRef } from '../../src/ops/value_loss.ref.ts';
import { Rng } from '../../src/util/rng.ts';
import { fakePolicy, tok } from './env_fakes.ts';

async function batch() {
  // A random guesser: its guess comes from the request's sampler seed.
  const policy = fakePolicy((_p, r) => `<answer>${1 + new Rng(r.seed).nextInt(32)}</answer>`, -1.2);
  return rolloutGroups(guessNumberEnv(), new Agent({ sample: policy, tokenizer: tok, maxTurns: 6 }), { groups: 4, groupSize: 4, seed: 7 });
}

/** Σ tokenScale·ℓ over every packed row, with new log-prob = old + δ(position). */
function packedLoss(spec: PolicyLossSpec, datums: readonly Datum[], shift: (t: number) => number): number {
  const step = packDatums(datums, { rows: 3, seqLen: 512, seed: 1, padId: tok.padId, aggregation: spec.aggregation });
  let loss = 0;
  for (const b of step.batches) {
    for (let i = 0; i < b.rows * b.seqLen; i++) {
      if (b.tokenScaleBT[i] === 0) continue;
      const t = i % b.seqLen;
      const term = (POLICY_TERMS[spec.kind] as (s: PolicyLossSpec, lp: number, old: number, a: number, ref: number) => { loss: number })(
        spec, b.oldLogprobsBT[i] + shift(t), b.oldLogprobsBT[i], b.advantagesBT[i], b.refLogprobsBT?.[i] ?? 0);
      loss += b.tokenScaleBT[i] * term.loss;
    }
  }
  return loss;
}

describe('one RL step on the CPU', () => {
  it('packed batches give the same loss as the per-datum reference, for each objective', async () => {
    const rollout = await batch();
    expect(rollout.metrics.kept).toBe(16);
    const ref = (t: { tokensT: readonly number[] }) => t.tokensT.slice(1).map((_, k) => -1.2 - 0.01 * (k % 3));
    const grpo = grpoDatums(rollout.groups, { refLogprobs: ref });
    const shift = (t: number) => 0.05 * Math.sin(t);
    for (const spec of [grpoLoss(), ppoLoss({ dualClip: 3 }), importanceSamplingLoss({ aggregation: 'sequence_mean' })] as PolicyLossSpec[]) {
      const direct = policyLossReference(spec, grpo.map((d) => ({ datum: d, logprobsT: d.oldLogprobsT.map((lp, t) => lp + shift(t)) }))).loss;
      expect(packedLoss(spec, grpo, shift)).toBeCloseTo(direct, 5);
    }
  });

  it('every algorithm turns the same rollout into packable datums', async () => {
    const rollout = await batch();
    const trajs = rollout.groups.flatMap((g) => g.trajectories);
    const sets: Record<string, readonly Datum[]> = {
      grpo: grpoDatums(rollout.groups),
      rloo: rlooDatums(rollout.groups),
      reinforce: reinforceDatums(rollout.groups, EMPTY_BASELINE).datums,
      ppo: ppoDatums(trajs, trajs.map((t) => t.tokensT.slice(1).map(() => 0.1))),
      dpo: dpoDatums(dpoPairsFromGroups(rollout.groups)),
    };
    for (const [name, ds] of Object.entries(sets)) {
      expect(ds.length, name).toBeGreaterThan(0);
      const step = packDatums(ds, { rows: 4, seqLen: 512, seed: 2, padId: tok.padId, aggregation: 'token_mean' });
      expect(step.totalSequences, name).toBe(ds.length);
      expect(step.batches.reduce((s, b) => s + b.lossMaskBT.reduce((a, m) => a + m, 0), 0), name).toBe(step.totalTokens);
      // every learned token is a policy token of some trajectory: the answer tags
      const b = step.batches[0];
      const learned = tok.decode([...b.targetsBT.slice(0, b.lengthB[0])].filter((_, t) => b.lossMaskBT[t]));
      expect(learned, name).toMatch(/^(<answer>\d+<\/answer>)+$/);
    }
  });
});

describe('agreement with the kernel’s CPU reference (src/ops)', () => {
  it('per-token policy terms match TERMS of policy_loss.ref.ts', () => {
    const rng = new Rng(11);
    const specs = [
      { mine: ppoLoss({ clipLow: 0.2, clipHigh: 0.28, dualClip: 3 }), theirs: { kind: 'ppo', clipLow: 0.2, clipHigh: 0.28, dualClip: 3, aggregation: 'token_mean' } },
      { mine: grpoLoss({ klBeta: 0.04 }), theirs: { kind: 'grpo', clipLow: 0.2, clipHigh: 0.2, klBeta: 0.04, aggregation: 'sequence_mean' } },
      { mine: importanceSamplingLoss(), theirs: { kind: 'importance_sampling', aggregation: 'token_mean' } },
    ] as const;
    for (let i = 0; i < 500; i++) {
      const [lp, old, a, ref] = [-3 * rng.nextFloat(), -3 * rng.nextFloat(), 4 * rng.nextFloat() - 2, -3 * rng.nextFloat()];
      for (const { mine, theirs } of specs) {
        const m = (POLICY_TERMS[mine.kind] as (s: PolicyLossSpec, ...x: number[]) => { loss: number; g: number })(mine, lp, old, a, ref);
        const t = (TERMS[theirs.kind] as (s: unknown, ...x: number[]) => { loss: number; g: number })(theirs, lp, old, a, ref);
        expect(m.loss).toBeCloseTo(t.loss, 12);
        expect(m.g).toBeCloseTo(t.g, 12);
      }
    }
  });
  it('the clipped value loss matches value_loss.ref.ts', () => {
    const rng = new Rng(12);
    const n = 64;
    const [v, old, ret] = [rng.normalArray(n), rng.normalArray(n), rng.normalArray(n)];
    const w = new Float32Array(n).fill(1);
    const theirs = valueLossRef(v, old, ret, w, { clip: 0.2, coef: 1 });
    let loss = 0;
    for (let i = 0; i < n; i++) {
      const x = clippedValueLoss(v[i], old[i], ret[i], 0.2);
      loss += x.loss / n;
      expect(x.dv / n).toBeCloseTo(theirs.dvalues[i], 6);
    }
    expect(loss).toBeCloseTo(theirs.stats[0], 5);
  });
});
