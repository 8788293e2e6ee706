// The CPU half of one RL step, end to end: rollout → datums → packed [B, T] batch → loss, and the
// agreement of this layer's loss references with the kernel's own CPU reference (src/ops).
import { describe, expect, it } from 'vitest';
import { EMPTY_BASELINE } from '../../src/algorithms/advantages.ts';
import type { Datum } from '../../src/algorithms/datum.ts';
import { dpoDatums, dpoPairsFromGroups } from '../../src/algorithms/dpo.ts';
import { grpoDatums } from '../../src/algorithms/grpo.ts';
import { datumFromSequence } from '../../src/algorithms/datum.ts';
import { crossEntropyLoss, grpoLoss, importanceSamplingLoss, ppoLoss, type PolicyLossSpec, valueLossSpec } from '../../src/algorithms/loss_spec.ts';
import { policyTerm } from '../../src/algorithms/loss_terms.ts';
import { policyLossReference } from '../../src/algorithms/losses.ts';
import { packDatums } from '../../src/algorithms/pack.ts';
import { ppoDatums, valueLossReference } from '../../src/algorithms/ppo.ts';
import { reinforceDatums } from '../../src/algorithms/reinforce.ts';
import { rlooDatums } from '../../src/algorithms/rloo.ts';
import { Agent } from '../../src/env/agent.ts';
import { guessNumberEnv } from '../../src/env/envs/guess_number.ts';
import { rolloutGroups } from '../../src/env/rollout.ts';
import { policyLossRef } from '../../src/ops/policy_loss.ref.ts';
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
      const term = policyTerm(spec, b.oldLogprobsBT[i] + shift(t), b.oldLogprobsBT[i], b.advantagesBT[i], b.refLogprobsBT?.[i] ?? 0);
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

/**
 * S sequences of odd lengths over a vocabulary of V, about a third of the tokens masked: each as a
 * datum (this layer) and flattened into the kernel reference's [N] arrays (src/ops).
 */
function sequences(rng: Rng, S: number, V: number) {
  const seqs = Array.from({ length: S }, (_, s) => {
    const T = 3 + 2 * s;
    const u = (k: number) => Array.from({ length: T }, () => k * rng.nextFloat());
    const targetsT = Array.from({ length: T }, () => rng.nextInt(V));
    const maskT = Array.from({ length: T }, (_, t) => (t === 0 || rng.nextFloat() > 0.35 ? 1 : 0));
    const [oldT, refT, advT] = [u(-3), u(-3), u(4).map((a) => a - 2)];
    const logitsTV = Array.from({ length: T * V }, () => 3 * rng.normal());
    const datum = datumFromSequence(s, [0, ...targetsT], [0, ...maskT], [0, ...oldT], { advantagesT: advT, refLogprobsT: refT });
    return { datum, T, targetsT, maskT, oldT, refT, advT, logitsTV };
  });
  const cat = (f: (x: (typeof seqs)[number]) => number[]) => Float32Array.from(seqs.flatMap(f));
  const flat = {
    logits: cat((x) => x.logitsTV), targets: Int32Array.from(seqs.flatMap((x) => x.targetsT)), weights: cat((x) => x.maskT),
    oldLogprobs: cat((x) => x.oldT), advantages: cat((x) => x.advT), refLogprobs: cat((x) => x.refT),
    seqIds: Int32Array.from(seqs.flatMap((x, s) => x.maskT.map(() => s))), numSequences: S,
  };
  return { seqs, flat };
}

describe('agreement with the kernel’s CPU reference (src/ops)', () => {
  // Both references run loss_terms.ts's per-token math; what is checked here is everything around
  // it: the aggregations (aggregationScales vs tokenScales), the entropy bonus, the stats, and the
  // chain rule from d(loss)/d(lp), d(loss)/dH to the logits.
  it('policyLossReference over datums and policyLossRef over logits give the same loss, stats and gradients', () => {
    const V = 7;
    const { seqs, flat } = sequences(new Rng(11), 5, V);
    const specs: PolicyLossSpec[] = [
      ppoLoss({ clipLow: 0.2, clipHigh: 0.28, dualClip: 3, entropyCoef: 0.01 }),
      grpoLoss({ klBeta: 0.04, entropyCoef: 0.02 }),
      importanceSamplingLoss({ aggregation: 'sequence_mean' }),
      crossEntropyLoss(),
    ];
    for (const spec of specs) {
      const theirs = policyLossRef(flat, spec);
      // The log-probs and entropies the kernel reference saw (f32), per sequence.
      let i0 = 0;
      const inputs = seqs.map((x) => {
        const r = { datum: x.datum, logprobsT: [...theirs.logprobs.subarray(i0, i0 + x.T)], entropyT: [...theirs.entropy.subarray(i0, i0 + x.T)] };
        i0 += x.T;
        return r;
      });
      const mine = policyLossReference(spec, inputs);
      const what = `${spec.kind} ${spec.aggregation}`;
      expect(mine.stats.tokens, what).toBe(theirs.stats[5]);
      // The kernel reference's stats are f32: equal to ~1e-7 relative.
      const close = (a: number, b: number, stat: string) => expect(Math.abs(a - b), `${what}: ${stat} ${a} vs ${b}`).toBeLessThan(1e-6 * Math.max(1, Math.abs(b)));
      close(mine.loss, theirs.stats[0], 'loss');
      close(mine.stats.clipFraction, theirs.stats[1], 'clip fraction');
      close(mine.stats.approxKl, theirs.stats[2], 'approx KL');
      close(mine.stats.refKl, theirs.stats[3], 'ref KL');
      if (spec.kind === 'ppo') expect(mine.stats.clipFraction, 'some tokens clipped').toBeGreaterThan(0);
      // dL/dz_j = dL/dlp·(δ_jt − p_j) + dL/dH·dH/dz_j, dH/dz_j = −p_j·(log p_j + H).
      let i = 0;
      let worst = 0;
      seqs.forEach((x, s) => {
        for (let t = 0; t < x.T; t++, i++) {
          const z = flat.logits.subarray(i * V, (i + 1) * V);
          const m = Math.max(...z);
          const lse = m + Math.log(z.reduce((a, zj) => a + Math.exp(zj - m), 0));
          const h = theirs.entropy[i];
          for (let j = 0; j < V; j++) {
            const lz = z[j] - lse;
            const pj = Math.exp(lz);
            const want = mine.dlogprobsST[s][t] * ((j === x.targetsT[t] ? 1 : 0) - pj) - mine.dentropyST[s][t] * pj * (lz + h);
            worst = Math.max(worst, Math.abs(want - theirs.dlogits[i * V + j]));
          }
        }
      });
      expect(worst, `${what}: dlogits`).toBeLessThan(1e-6 * Math.max(1, ...theirs.dlogits.map(Math.abs)));
    }
  });

  it('valueLossReference over datums and valueLossRef give the same loss, clip fraction and gradients', () => {
    const rng = new Rng(12);
    const { seqs } = sequences(rng, 4, 3);
    const spec = valueLossSpec({ clip: 0.2, coef: 0.5 });
    const withValues = seqs.map((x) => {
      const returnsT = x.maskT.map(() => rng.normal());
      const oldValuesT = returnsT.map((r) => r + 0.5 * rng.normal());
      const valuesT = oldValuesT.map((o) => o + 0.4 * rng.normal());
      return { datum: { ...x.datum, returnsT, oldValuesT }, valuesT };
    });
    const mine = valueLossReference(spec, withValues);
    const cat = (f: (x: (typeof withValues)[number]) => readonly number[]) => Float32Array.from(withValues.flatMap(f));
    const theirs = valueLossRef(cat((x) => x.valuesT), cat((x) => x.datum.oldValuesT), cat((x) => x.datum.returnsT), cat((x) => x.datum.lossMaskT), spec);
    expect(mine.loss).toBeCloseTo(theirs.stats[0], 6);
    expect(mine.clipFraction).toBeCloseTo(theirs.stats[1], 6);
    expect(mine.clipFraction, 'some tokens clipped').toBeGreaterThan(0);
    mine.dvaluesST.flat().forEach((d, i) => expect(d).toBeCloseTo(theirs.dvalues[i], 6));
  });
});
