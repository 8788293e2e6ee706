/**
 * Policy loss and value loss cases, run by both GPU suites: GPU vs the CPU reference and vs tfjs
 * autograd (test/shared/policy_loss_oracle.ts) for every loss variant and aggregation on odd N, V,
 * with masked and weighted tokens; stats; NaN conventions; in place; determinism; typed errors.
 */
import { assert } from 'chai';
import { ConfigError, LimitError, ShapeError } from '../../../src/errors.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { Recorder } from '../../../src/gpu/recorder.ts';
import { emptyTensor, Tensor, tensorFrom } from '../../../src/gpu/tensor.ts';
import { STORAGE_USAGE } from '../../../src/gpu/pool.ts';
import type { PolicyLossSpec as Spec, Reduction, ValueLossSpec } from '../../../src/algorithms/loss_spec.ts';
import { type LogitsBlocks, POLICY_LOSS_MODES, POLICY_STATS, POLICY_STATS_SIZE, policyLoss, policyLossScratchSize, type PolicyLossTuning } from '../../../src/ops/policy_loss.ts';
import { policyLossRef, type PolicyLossRefInputs, tokenScales } from '../../../src/ops/policy_loss.ref.ts';
import { valueLoss } from '../../../src/ops/value_loss.ts';
import { valueLossRef } from '../../../src/ops/value_loss.ref.ts';
import { Rng } from '../../../src/util/rng.ts';
import { maxAbsDiff, relL2 } from '../../reference/tf.ts';
import { firstBitDiff } from '../gpu.ts';
import { tfPolicyLoss, tfValueLoss } from '../policy_loss_oracle.ts';
import type { GpuCase } from '../register.ts';

/** The kernel's spec: loss_spec.ts's, with every reduction the kernel has. */
type PolicyLossSpec = Spec<Reduction>;

type Fixture = Required<PolicyLossRefInputs> & { n: number; v: number };

/** Random inputs: ~1/4 of the tokens masked, the rest weighted in [0.5, 1.5); old and ref near lp. */
function fixture(seed: number, n: number, v: number, ratioStd = 0.3): Fixture {
  const rng = new Rng(seed, 11);
  const logits = rng.normalArray(n * v, 2);
  const targets = Int32Array.from({ length: n }, () => rng.nextInt(v));
  const weights = Float32Array.from({ length: n }, (_, i) => (i > 0 && rng.nextFloat() < 0.25 ? 0 : 0.5 + rng.nextFloat()));
  const { logprobs } = policyLossRef({ logits, targets, weights }, { kind: 'cross_entropy', aggregation: 'sum' });
  const near = (std: number) => Float32Array.from(logprobs, (x) => x + std * rng.normal());
  const seqIds = new Int32Array(n);
  for (let i = 1, s = 0; i < n; i++) seqIds[i] = s += rng.nextFloat() < 0.3 ? 1 : 0;
  // One more sequence id than used: an empty sequence must not count in sequence_mean.
  const numSequences = (n ? seqIds[n - 1] : 0) + 2;
  return { n, v, logits, targets, weights, oldLogprobs: near(ratioStd), advantages: rng.normalArray(n), refLogprobs: near(0.3), seqIds, numSequences };
}

interface GpuResult {
  dlogits: Float32Array;
  logprobs: Float32Array;
  entropy: Float32Array;
  loss: Float32Array;
  stats: Float32Array;
}

/**
 * `blockRows`: the logits made and used a block of rows at a time (LogitsBlocks), copied from the
 * whole [N, V] and their gradient copied back. `exact`: the logits in a buffer of exactly N·V·4
 * bytes (no pool rounding), so a texture copy cannot round it up to whole texels.
 */
async function runPolicy(ctx: GpuContext, fx: Fixture, spec: PolicyLossSpec, inPlace = false, tuning: PolicyLossTuning = {},
  how: { blockRows?: number; exact?: boolean; noRef?: boolean } = {}): Promise<GpuResult> {
  const o = { owner: 'policy-case' };
  const up = (a: Float32Array | Int32Array, label: string) => tensorFrom(ctx, a, [a.length], { ...o, label });
  const exact = how.exact ? ctx.device.createBuffer({ label: 'exact logits', size: 4 * fx.n * fx.v, usage: STORAGE_USAGE }) : null;
  if (exact) ctx.device.queue.writeBuffer(exact, 0, fx.logits);
  const whole = exact ? new Tensor(ctx, exact, [fx.n, fx.v], 'f32', o.owner, 'exact logits') : tensorFrom(ctx, fx.logits, [fx.n, fx.v], { ...o, label: 'logits' });
  const rows = how.blockRows ?? fx.n;
  const logits = how.blockRows ? emptyTensor(ctx, [rows, fx.v], 'f32', { ...o, label: 'logits block' }) : whole;
  const inputs = {
    logits, targets: up(fx.targets, 'targets'), weights: up(fx.weights, 'weights'), oldLogprobs: up(fx.oldLogprobs, 'old'),
    advantages: up(fx.advantages, 'adv'), ...(how.noRef ? {} : { refLogprobs: up(fx.refLogprobs, 'ref') }), seqIds: up(fx.seqIds, 'seq'), numSequences: fx.numSequences,
  };
  const out = {
    dlogits: inPlace ? logits : emptyTensor(ctx, [rows, fx.v], 'f32', { ...o, label: 'dlogits' }),
    logprobs: emptyTensor(ctx, [fx.n], 'f32', o), entropy: emptyTensor(ctx, [fx.n], 'f32', o), loss: emptyTensor(ctx, [fx.n], 'f32', o),
    stats: emptyTensor(ctx, [POLICY_STATS_SIZE], 'f32', o), scratch: emptyTensor(ctx, [policyLossScratchSize(fx.n, fx.numSequences)], 'f32', o),
  };
  const dwhole = how.blockRows ? emptyTensor(ctx, [fx.n, fx.v], 'f32', { ...o, label: 'dlogits whole' }) : out.dlogits;
  const blocks: LogitsBlocks | undefined = how.blockRows
    ? { rows, produce: (rec, r0, n) => rec.copy(whole.rows(r0, n), logits.rows(0, n)), consume: (rec, r0, n) => rec.copy(out.dlogits.rows(0, n), dwhole.rows(r0, n)) }
    : undefined;
  const rec = new Recorder(ctx, { label: `policy_loss ${spec.kind}` });
  policyLoss(rec, out, inputs, spec, tuning, blocks);
  const reads = [dwhole, out.logprobs, out.entropy, out.loss, out.stats].map((t) => rec.read(t));
  await rec.submit();
  const [dlogits, logprobs, entropy, loss, stats] = (await Promise.all(reads)) as Float32Array[];
  for (const t of new Set([whole, dwhole, ...Object.values(inputs), ...Object.values(out)])) if (t instanceof Tensor && t.buffer !== exact) t.release();
  exact?.destroy();
  return { dlogits, logprobs, entropy, loss, stats };
}

/** Spec of a variant with the given aggregation and entropy bonus. */
function specOf(kind: PolicyLossSpec['kind'], aggregation: PolicyLossSpec['aggregation'], entropyCoef: number, dual: boolean): PolicyLossSpec {
  const clip = { clipLow: 0.2, clipHigh: 0.28, ...(dual ? { dualClip: 1.5 } : {}) };
  const specs: { [K in PolicyLossSpec['kind']]: Extract<PolicyLossSpec, { kind: K }> } = {
    cross_entropy: { kind: 'cross_entropy', aggregation, entropyCoef },
    importance_sampling: { kind: 'importance_sampling', aggregation, entropyCoef },
    ppo: { kind: 'ppo', aggregation, entropyCoef, ...clip },
    grpo: { kind: 'grpo', aggregation, entropyCoef, klBeta: 0.05, ...clip },
  };
  return specs[kind];
}

/** Every kind the kernel has (cross_entropy, importance_sampling, ppo, grpo): a new one is tested here unasked. */
const KINDS = Object.keys(POLICY_LOSS_MODES) as PolicyLossSpec['kind'][];
const AGGS = ['token_mean', 'sequence_mean', 'sum'] as const;
/** [N, V]: V = 1, odd sizes, and one V past 4096. */
const SHAPES: [number, number][] = [[3, 1], [7, 7], [33, 33], [9, 257], [13, 1000], [5, 4099]];

function closeStat(got: number, want: number, what: string): void {
  assert.approximately(got, want, 1e-5 * Math.max(1, Math.abs(want)), what);
}

async function checkVariant(ctx: GpuContext, fx: Fixture, spec: PolicyLossSpec, worst: Record<string, number>, tuning: PolicyLossTuning = {}): Promise<void> {
  const what = `${spec.kind} ${spec.aggregation} ent=${spec.entropyCoef} N=${fx.n} V=${fx.v} ${JSON.stringify(tuning)}`;
  const got = await runPolicy(ctx, fx, spec, false, tuning);
  const want = policyLossRef(fx, spec);
  for (const k of ['dlogits', 'logprobs', 'entropy', 'loss'] as const) {
    const e = relL2(got[k], want[k]);
    worst[`ref ${k}`] = Math.max(worst[`ref ${k}`] ?? 0, e);
    assert.isAtMost(e, 1e-5, `${what}: ${k} vs reference`);
  }
  (Object.keys(POLICY_STATS) as (keyof typeof POLICY_STATS)[]).forEach((k) => closeStat(got.stats[POLICY_STATS[k]], want.stats[POLICY_STATS[k]], `${what}: stats.${k}`));
  const scale = tokenScales(spec.aggregation, fx.weights, fx.seqIds, fx.numSequences);
  const tf = tfPolicyLoss(spec, fx.logits, fx.n, fx.v, fx.targets, scale, { old: fx.oldLogprobs, adv: fx.advantages, ref: fx.refLogprobs });
  const eGrad = relL2(got.dlogits, tf.dlogits);
  worst['tf dlogits'] = Math.max(worst['tf dlogits'] ?? 0, eGrad);
  worst['tf loss'] = Math.max(worst['tf loss'] ?? 0, Math.abs(got.stats[0] - tf.total) / Math.max(1, Math.abs(tf.total)));
  assert.isAtMost(eGrad, 1e-5, `${what}: dlogits vs tf.grad`);
  closeStat(got.stats[POLICY_STATS.loss], tf.total, `${what}: total loss vs tfjs`);
  assert.isAtMost(relL2(got.logprobs, tf.logprobs), 1e-5, `${what}: logprobs vs tfjs`);
  assert.isAtMost(maxAbsDiff(got.entropy, tf.entropy), 1e-5, `${what}: entropy vs tfjs`);
}

export const policyLossCases: GpuCase[] = [
  {
    name: 'policy_loss: every variant and aggregation matches the reference and tfjs autograd (odd N, V; masked, weighted)',
    async fn(ctx) {
      const worst: Record<string, number> = {};
      for (const [si, [n, v]] of SHAPES.entries()) {
        const fx = fixture(100 + si, n, v);
        for (const [ki, kind] of KINDS.entries()) {
          const spec = specOf(kind, AGGS[(si + ki) % 3], (si + ki) % 2 ? 0.01 : 0, si % 2 === 1);
          await checkVariant(ctx, fx, spec, worst);
        }
      }
      console.log(`policy_loss worst errors: ${Object.entries(worst).map(([k, e]) => `${k} ${e.toExponential(1)}`).join(', ')}`);
    },
  },
  {
    name: 'policy_loss: clipping, dual-clip and the clip fraction are exercised and agree with the reference',
    async fn(ctx) {
      const fx = fixture(7, 64, 50, 0.6); // wide ratios: r spans well past 1 ± ε and past c
      for (const kind of ['ppo', 'grpo'] as const) {
        const spec = specOf(kind, 'token_mean', 0, true);
        const got = await runPolicy(ctx, fx, spec);
        const want = policyLossRef(fx, spec);
        let dual = 0;
        for (let i = 0; i < fx.n; i++) {
          if (fx.weights[i] !== 0 && fx.advantages[i] < 0 && Math.exp(want.logprobs[i] - fx.oldLogprobs[i]) > 1.5) dual++;
        }
        assert.isAbove(dual, 0, 'fixture has dual-clipped tokens');
        assert.isAbove(want.stats[POLICY_STATS.clipFraction], 0.1);
        assert.isBelow(want.stats[POLICY_STATS.clipFraction], 0.9);
        closeStat(got.stats[POLICY_STATS.clipFraction], want.stats[POLICY_STATS.clipFraction], `${kind} clip fraction`);
        assert.isAtMost(relL2(got.dlogits, want.dlogits), 1e-5);
        const scale = tokenScales('token_mean', fx.weights);
        const tf = tfPolicyLoss(spec, fx.logits, fx.n, fx.v, fx.targets, scale, { old: fx.oldLogprobs, adv: fx.advantages, ref: fx.refLogprobs });
        assert.isAtMost(relL2(got.dlogits, tf.dlogits), 1e-5, `${kind} dlogits vs tf.grad`);
      }
    },
  },
  {
    name: 'policy_loss: masked tokens (weight 0 or no sequence) give loss 0 and zero gradient rows; an out-of-range target gives NaN',
    async fn(ctx) {
      const fx = fixture(8, 6, 9);
      fx.weights.set([1, 0, 1, 0, 1, 1]);
      fx.oldLogprobs[1] = -1e30; // garbage under the mask must not leak (exp overflow)
      fx.targets[3] = 9; // out of range, masked
      const spec = specOf('grpo', 'token_mean', 0.01, false);
      let got = await runPolicy(ctx, fx, spec);
      for (const i of [1, 3]) {
        assert.strictEqual(got.loss[i], 0);
        assert.isTrue(got.dlogits.subarray(i * 9, (i + 1) * 9).every((x) => x === 0), `row ${i} is zero`);
      }
      assert.isNaN(got.logprobs[3]);
      assert.isTrue(got.stats.every(Number.isFinite), 'stats are finite');
      assert.strictEqual(got.stats[POLICY_STATS.tokens], 4);
      // Sequence-mean: a token whose sequence id is outside [0, S) counts as masked.
      fx.seqIds[5] = fx.numSequences;
      const seqSpec = specOf('ppo', 'sequence_mean', 0, false);
      const seqGot = await runPolicy(ctx, fx, seqSpec);
      const seqWant = policyLossRef(fx, seqSpec);
      assert.strictEqual(seqGot.stats[POLICY_STATS.tokens], 3);
      assert.isTrue(seqGot.dlogits.subarray(5 * 9, 6 * 9).every((x) => x === 0), 'row 5 is zero');
      assert.isAtMost(relL2(seqGot.dlogits, seqWant.dlogits), 1e-5);
      closeStat(seqGot.stats[POLICY_STATS.loss], seqWant.stats[POLICY_STATS.loss], 'sequence_mean loss');
      fx.targets[4] = -1; // out of range, unmasked: NaN is loud
      got = await runPolicy(ctx, fx, spec);
      assert.isNaN(got.loss[4]);
      assert.isNaN(got.stats[POLICY_STATS.loss]);
      assert.isTrue(got.dlogits.subarray(4 * 9, 5 * 9).every(Number.isNaN), 'row 4 is NaN');
      assert.isTrue(got.dlogits.subarray(0, 9).every(Number.isFinite), 'other rows are untouched by it');
    },
  },
  {
    name: 'policy_loss: GRPO without its KL term takes no reference log-probs (bitwise the run with the sampling ones as reference); with β ≠ 0 they are required',
    async fn(ctx) {
      const fx = fixture(12, 29, 301);
      const spec = { ...specOf('grpo', 'token_mean', 0, false), klBeta: 0 } as PolicyLossSpec;
      const without = await runPolicy(ctx, fx, spec, false, {}, { noRef: true });
      const asOld = await runPolicy(ctx, { ...fx, refLogprobs: fx.oldLogprobs }, spec);
      for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) assert.strictEqual(firstBitDiff(without[k], asOld[k]), -1, k);
      const ref = policyLossRef({ ...fx, refLogprobs: fx.oldLogprobs }, spec);
      closeStat(without.loss.reduce((a, b) => a + b, 0), ref.loss.reduce((a, b) => a + b, 0), 'loss against the reference');
      let err: unknown;
      try {
        await runPolicy(ctx, fx, specOf('grpo', 'token_mean', 0, false), false, {}, { noRef: true });
      } catch (e) {
        err = e;
      }
      assert.instanceOf(err, ShapeError);
      assert.match((err as Error).message, /grpo needs refLogprobs/);
    },
  },
  {
    name: 'policy_loss: in place equals out of place, and two runs are bitwise identical',
    async fn(ctx) {
      const fx = fixture(9, 37, 611);
      const spec = specOf('grpo', 'sequence_mean', 0.01, true);
      const a = await runPolicy(ctx, fx, spec);
      const b = await runPolicy(ctx, fx, spec);
      const c = await runPolicy(ctx, fx, spec, true);
      for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) {
        assert.strictEqual(firstBitDiff(a[k], b[k]), -1, `${k}: run 1 vs run 2`);
        assert.strictEqual(firstBitDiff(a[k], c[k]), -1, `${k}: out of place vs in place`);
      }
    },
  },
  {
    name: 'policy_loss: every layout of the main pass (workgroup per row; invocation per row, from the buffer or a texture) matches the reference and tfjs at any V; masked, NaN, in place, bitwise',
    async fn(ctx) {
      const worst: Record<string, number> = {};
      // Odd N; V a multiple of 4 (vec4 rows, every row on a texel) and not (V = 7, 259, 1003: rows
      // start 1, 2 or 3 elements into a texel, the texel copy ends in a partial texel); [9, 4100]
      // spans more than one 8192-texel row of the texture, rows straddling two, a partial last row.
      const shapes: [number, number][] = [[3, 4], [9, 36], [13, 260], [9, 4100], [37, 7], [13, 259], [11, 1003]];
      // Rows vs texture, bitwise: [N, V] with N·V % 4 = 1, 2, 3, 0 and one row shorter than a texel.
      const bitwise: [number, number][] = [[37, 612], [37, 7], [13, 259], [11, 1003], [1, 259], [5, 3], [6, 1003]];
      const byLayout: Record<string, GpuResult> = {};
      for (const layout of ['groups', 'rows', 'texture'] as const) {
        for (const [si, [n, v]] of shapes.entries()) {
          const fx = fixture(300 + si, n, v);
          for (const [ki, kind] of KINDS.entries()) {
            await checkVariant(ctx, fx, specOf(kind, AGGS[(si + ki) % 3], ki % 2 ? 0.01 : 0, si % 2 === 0), worst, { layout });
          }
        }
        // Masked rows are exact zeros; an unmasked out-of-range target makes its row NaN only.
        for (const v of [12, 13]) {
          const fx = fixture(310, 6, v);
          fx.weights.set([1, 0, 1, 0, 1, 1]);
          fx.targets[3] = v;
          fx.targets[4] = -1;
          const spec = specOf('grpo', 'token_mean', 0.01, false);
          const got = await runPolicy(ctx, fx, spec, false, { layout });
          for (const i of [1, 3]) assert.isTrue(got.dlogits.subarray(i * v, (i + 1) * v).every((x) => x === 0), `${layout} V=${v}: row ${i} is zero`);
          assert.isTrue(got.dlogits.subarray(4 * v, 5 * v).every(Number.isNaN), `${layout} V=${v}: row 4 is NaN`);
          assert.isTrue(got.dlogits.subarray(0, 4 * v).every((x) => !Number.isNaN(x)), `${layout} V=${v}: rows 0-3 are not NaN`);
          assert.isTrue(got.dlogits.subarray(5 * v).every(Number.isFinite), `${layout} V=${v}: row 5 is finite`);
        }
        // In place equals out of place, bitwise, and a rerun is bitwise identical.
        for (const [bi, [n2, v2]] of bitwise.entries()) {
          const fx2 = fixture(311 + bi, n2, v2);
          const spec2 = specOf(bi % 2 ? 'grpo' : 'ppo', 'sequence_mean', 0.01, true);
          const a = await runPolicy(ctx, fx2, spec2, false, { layout });
          const b = await runPolicy(ctx, fx2, spec2, false, { layout });
          const c = await runPolicy(ctx, fx2, spec2, true, { layout });
          for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) {
            assert.strictEqual(firstBitDiff(a[k], b[k]), -1, `${layout} [${n2}, ${v2}] ${k}: run 1 vs run 2`);
            assert.strictEqual(firstBitDiff(a[k], c[k]), -1, `${layout} [${n2}, ${v2}] ${k}: out of place vs in place`);
          }
          assert.isAtMost(relL2(a.dlogits, policyLossRef(fx2, spec2).dlogits), 1e-5, `${layout} [${n2}, ${v2}] vs reference`);
          byLayout[`${layout} ${n2}x${v2}`] = a;
        }
      }
      // The texture is charged to the recording's pool owner until the submit.
      const fx3 = fixture(312, 3, 8);
      const t = (a: Float32Array | Int32Array, shape: number[]) => tensorFrom(ctx, a, shape, { owner: 'policy-case' });
      const inputs = { logits: t(fx3.logits, [3, 8]), targets: t(fx3.targets, [3]), weights: t(fx3.weights, [3]) };
      const e = (shape: number[]) => emptyTensor(ctx, shape, 'f32', { owner: 'policy-case' });
      const out = { dlogits: e([3, 8]), logprobs: e([3]), entropy: e([3]), loss: e([3]), stats: e([POLICY_STATS_SIZE]), scratch: e([policyLossScratchSize(3)]) };
      const rec = new Recorder(ctx, { label: 'policy tex' });
      policyLoss(rec, out, inputs, { kind: 'cross_entropy', aggregation: 'sum' }, { layout: 'texture' });
      assert.isAtLeast(ctx.pool.owner('recorder:policy tex').currentBytes, 3 * 8 * 4, 'texture charged while recorded');
      await rec.submit();
      assert.strictEqual(ctx.pool.owner('recorder:policy tex').currentBytes, 0, 'texture given back at submit');
      for (const x of [...Object.values(inputs), ...Object.values(out)]) x.release();
      // The texture layout is the rows layout with other loads: the same arithmetic, bitwise.
      for (const [n2, v2] of bitwise) {
        for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) {
          assert.strictEqual(firstBitDiff(byLayout[`rows ${n2}x${v2}`][k], byLayout[`texture ${n2}x${v2}`][k]), -1, `[${n2}, ${v2}] ${k}: texture vs rows`);
        }
      }
      console.log(`policy_loss layouts worst errors: ${Object.entries(worst).map(([k, e]) => `${k} ${e.toExponential(1)}`).join(', ')}`);
    },
  },
  {
    name: 'policy_loss: row blocks, and logits in a buffer with no room for a whole last texel, give the same bits in every layout (V = 7, 259, 1003)',
    async fn(ctx) {
      for (const [fi, [n, v, blockRows]] of ([[13, 259, 5], [11, 1003, 3], [37, 7, 6]] as const).entries()) {
        const fx = fixture(330 + fi, n, v);
        const spec = specOf('grpo', 'token_mean', 0.01, fi % 2 === 0);
        const rowsWhole = await runPolicy(ctx, fx, spec, false, { layout: 'rows' });
        for (const layout of ['groups', 'rows', 'texture'] as const) {
          const want = layout === 'groups' ? await runPolicy(ctx, fx, spec, false, { layout }) : rowsWhole;
          // Blocks of rows: a row's arithmetic does not depend on where it lies in the logits (in
          // a block, row r starts (r − r0)·V elements in: another offset into its first texel).
          for (const inPlace of [false, true]) {
            const got = await runPolicy(ctx, fx, spec, inPlace, { layout }, { blockRows });
            for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) {
              assert.strictEqual(firstBitDiff(got[k], want[k]), -1, `${layout} [${n}, ${v}] blocks of ${blockRows}${inPlace ? ' in place' : ''} ${k}`);
            }
          }
        }
        // No room to round the logits up to whole texels: 'texture' reads the buffer ('rows').
        const exact = await runPolicy(ctx, fx, spec, false, { layout: 'texture' }, { exact: true });
        for (const k of ['dlogits', 'logprobs', 'entropy', 'loss', 'stats'] as const) {
          assert.strictEqual(firstBitDiff(exact[k], rowsWhole[k]), -1, `texture [${n}, ${v}] exact-size buffer ${k}`);
        }
      }
    },
  },
  {
    name: 'policy_loss: bad input is refused with typed errors naming the kernel and shapes, before recording',
    async fn(ctx) {
      const o = { owner: 'policy-case' };
      const [n, v] = [7, 5];
      const logits = emptyTensor(ctx, [n, v], 'f32', { ...o, label: 'logits' });
      const targets = emptyTensor(ctx, [n], 'i32', { ...o, label: 'targets' });
      const weights = emptyTensor(ctx, [n], 'f32', { ...o, label: 'weights' });
      const vec = (label: string, len = n, dtype: 'f32' | 'i32' = 'f32') => emptyTensor(ctx, [len], dtype, { ...o, label });
      const out = { dlogits: emptyTensor(ctx, [n, v], 'f32', o), logprobs: vec('lp'), entropy: vec('ent'), loss: vec('loss'), stats: vec('stats', 6), scratch: vec('scratch', policyLossScratchSize(n)) };
      const ce: PolicyLossSpec = { kind: 'cross_entropy', aggregation: 'token_mean' };
      const rec = new Recorder(ctx);
      const badTargets = vec('ftargets');
      assert.throws(() => policyLoss(rec, out, { logits, targets: badTargets, weights }, ce), ShapeError, /policy_loss: targets \(Tensor\(ftargets: f32\[7\]\)\) must be i32/);
      const short = vec('short', n + 1, 'i32');
      assert.throws(() => policyLoss(rec, out, { logits, targets: short, weights }, ce), ShapeError, /policy_loss: targets must have shape \[7\], got Tensor\(short: i32\[8\]\)/);
      assert.throws(() => policyLoss(rec, out, { logits, targets, weights }, { kind: 'ppo', aggregation: 'sum', clipLow: 0.2, clipHigh: 0.2 }),
        ShapeError, /policy_loss: ppo needs oldLogprobs \[7\] \(logits \[7, 5\]\)/);
      assert.throws(() => policyLoss(rec, out, { logits, targets, weights }, { ...ce, aggregation: 'sequence_mean' }), ShapeError, /needs numSequences/);
      assert.throws(() => policyLoss(rec, { ...out, scratch: vec('small', 3) }, { logits, targets, weights }, ce), ShapeError, /scratch .* needs at least 29/);
      assert.throws(() => policyLoss(rec, { ...out, loss: out.entropy }, { logits, targets, weights }, ce), ShapeError, /must not alias/);
      assert.throws(() => policyLoss(rec, out, { logits, targets, weights }, { kind: 'ppo', aggregation: 'sum', clipLow: 1.5, clipHigh: 0.2 }), ConfigError, /clipLow/);
      assert.throws(() => policyLoss(rec, out, { logits, targets, weights }, ce, { layout: 'diagonal' as 'rows' }), ConfigError, /must be one of groups, rows, texture, got diagonal/);
      if (ctx.kind === 'llvmpipe') {
        // An invocation per row would loop past llvmpipe's per-invocation limit (a shape-only view).
        const wide = new Tensor(ctx, logits.buffer, [n, 140000], 'f32', 'case', 'wide');
        assert.throws(() => policyLoss(rec, { ...out, dlogits: wide }, { logits: wide, targets, weights }, ce, { layout: 'rows' }), LimitError,
          /policy_loss: layout 'rows' at V=140000 needs about 70000 loop iterations per GPU thread, over llvmpipe's limit/);
      }
      // A logits tensor over the binding limit (a shape-only view: no memory is allocated).
      const huge = new Tensor(ctx, logits.buffer, [n, ctx.limit('maxStorageBufferBindingSize') / 4], 'f32', 'case', 'huge');
      assert.throws(() => policyLoss(rec, { ...out, dlogits: huge }, { logits: huge, targets, weights }, ce), LimitError, /policy_loss: logits \(Tensor\(huge: f32\[7, \d+\]\)\) is \d+ bytes, over/);
      assert.strictEqual(rec.pending, 0);
      for (const t of [logits, targets, weights, badTargets, short, ...Object.values(out)]) t.release();
    },
  },
];

// ------------------------------------------------------------------------------------------------

async function runValue(ctx: GpuContext, v: Float32Array, old: Float32Array, ret: Float32Array, w: Float32Array, spec: ValueLossSpec) {
  const o = { owner: 'value-case' };
  const t = [v, old, ret, w].map((a) => tensorFrom(ctx, a, [a.length], o));
  const out = { dvalues: emptyTensor(ctx, [v.length], 'f32', o), stats: emptyTensor(ctx, [2], 'f32', o) };
  const rec = new Recorder(ctx);
  valueLoss(rec, out, { values: t[0], oldValues: t[1], returns: t[2], weights: t[3] }, spec);
  const reads = [rec.read(out.dvalues), rec.read(out.stats)];
  await rec.submit();
  const [dvalues, stats] = (await Promise.all(reads)) as Float32Array[];
  for (const x of [...t, out.dvalues, out.stats]) x.release();
  return { dvalues, stats };
}

export const valueLossCases: GpuCase[] = [
  {
    name: 'value_loss: clipped and unclipped, masked, match the reference and tfjs autograd on odd N; bitwise reproducible',
    async fn(ctx) {
      const rng = new Rng(5, 3);
      for (const n of [1, 7, 33, 257, 1000]) {
        const ret = rng.normalArray(n);
        const old = Float32Array.from(ret, (r) => r + 0.5 * rng.normal());
        const v = Float32Array.from(old, (x) => x + 0.4 * rng.normal());
        const w = Float32Array.from({ length: n }, (_, i) => (i > 0 && rng.nextFloat() < 0.3 ? 0 : 1));
        for (const spec of [{ clip: 0.2, coef: 0.5 }, { clip: null, coef: 1 }] as ValueLossSpec[]) {
          const what = `N=${n} clip=${spec.clip}`;
          const got = await runValue(ctx, v, old, ret, w, spec);
          const want = valueLossRef(v, old, ret, w, spec);
          const tf = tfValueLoss(spec, v, old, ret, w);
          assert.isAtMost(relL2(got.dvalues, want.dvalues), 1e-6, `${what}: dvalues vs reference`);
          assert.isAtMost(relL2(got.dvalues, tf.dvalues), 1e-5, `${what}: dvalues vs tf.grad`);
          closeStat(got.stats[0], want.stats[0], `${what}: loss vs reference`);
          closeStat(got.stats[0], tf.total, `${what}: loss vs tfjs`);
          closeStat(got.stats[1], want.stats[1], `${what}: clip fraction`);
          if (spec.clip !== null && n >= 33) assert.isAbove(want.stats[1], 0, 'some tokens clipped');
          const again = await runValue(ctx, v, old, ret, w, spec);
          assert.strictEqual(firstBitDiff(got.dvalues, again.dvalues), -1);
          assert.strictEqual(firstBitDiff(got.stats, again.stats), -1);
        }
      }
    },
  },
  {
    name: 'value_loss: bad input is refused with typed errors naming the kernel and shapes',
    async fn(ctx) {
      const o = { owner: 'value-case' };
      const a = emptyTensor(ctx, [5], 'f32', { ...o, label: 'a' });
      const b = emptyTensor(ctx, [6], 'f32', { ...o, label: 'b' });
      const s = emptyTensor(ctx, [2], 'f32', { ...o, label: 's' });
      const d = emptyTensor(ctx, [5], 'f32', { ...o, label: 'd' });
      const rec = new Recorder(ctx);
      assert.throws(() => valueLoss(rec, { dvalues: d, stats: s }, { values: a, oldValues: a, returns: b, weights: a }, { clip: 0.2, coef: 1 }),
        ShapeError, /value_loss: returns must have shape \[5\], got Tensor\(b: f32\[6\]\)/);
      assert.throws(() => valueLoss(rec, { dvalues: d, stats: s }, { values: a, returns: a, weights: a }, { clip: 0.2, coef: 1 }), ShapeError, /needs oldValues \[5\]/);
      assert.throws(() => valueLoss(rec, { dvalues: a, stats: s }, { values: a, returns: a, weights: a }, { clip: null, coef: 1 }), ShapeError, /must not alias/);
      assert.throws(() => valueLoss(rec, { dvalues: d, stats: s }, { values: a, returns: a, weights: a }, { clip: -1, coef: 1 }), ConfigError);
      assert.strictEqual(rec.pending, 0);
      for (const t of [a, b, s, d]) t.release();
    },
  },
];
