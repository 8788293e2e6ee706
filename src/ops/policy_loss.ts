/**
 * policyLoss — the fused policy loss over the vocabulary (host wrapper of kernels/policy_loss.wgsl).
 *
 * From logits [N, V] and targets [N] it writes (=), with three dispatches recorded in order
 * (prepare → main → stats; no host round trip):
 *   dlogits  [N, V]  d(total loss)/d(logits); may be the logits tensor itself (in place)
 *   logprobs [N]     log p(target) under the logits (the sampler's old-logprob path uses it)
 *   entropy  [N]     entropy of each row's softmax
 *   loss     [N]     per-token loss ℓ_i including the entropy bonus, 0 where masked
 *   stats    [6]     see POLICY_STATS: total loss, clip fraction, approx KL, KL to ref, entropy, tokens
 * The loss variant is a plain-data `PolicyLossSpec` of src/algorithms/loss_spec.ts, the one spec
 * type from the algorithms to here; each variant is a row of POLICY_LOSS_MODES, never a branch here.
 * Those rows name the kernel's `const MODE_*` (and AGG_*) and hold their values, which
 * test/unit/policy_loss_modes.test.ts reads back from kernels/policy_loss.wgsl; the per-token math
 * the kernel's reference runs is src/algorithms/loss_terms.ts.
 *
 * The main pass has three layouts (PolicyLossTuning.layout): a workgroup per row reducing through
 * workgroup memory (real GPUs); an invocation per row over chunks of four logits with no barrier
 * (software adapters); and the same reading the logits through a temporary texture copy
 * (where the adapter wants texture reads, DeviceQuirks.textureReads; the texture, N·V·4
 * bytes rounded up to a texel, is charged to the recording's pool owner until the submit). All
 * take any V and are deterministic; the first two may differ in the last bits, the last two are
 * bitwise equal (a row's chunks start at its first logit, V % 4 left over at its end, wherever
 * the row lies in the texture).
 *
 * Every layout keeps long vocabularies exact to f32 (V = 50257 .. 262144 tested): logits at the
 * row's running max are counted rather than summed, the rest summed with Neumaier compensation,
 * and log p = (z_t − max) − log Σ with an accurate log (see the kernel's "Accuracy" note). A plain
 * running sum had dropped the tail: log p = 0.0 for a true −1.0358e-4 at V = 50257.
 *
 * Row blocks (`LogitsBlocks`): where logits [N, V] would not fit one storage binding (V = 50257,
 * N > ~667 at 128 MiB), the caller passes a logits tensor of a few rows and two callbacks; the
 * main pass then runs once per block of rows, right after `produce` recorded that block's logits
 * and right before `consume` records what reads its gradient. prepare and stats still see all N
 * tokens, and every row gets the same arithmetic as unblocked.
 *
 * Sequence-mean counts tokens per sequence in one workgroup at O(S·N) (no atomics); fine for S
 * sequences of a batch, slow for S in the thousands.
 *
 * Input checks (dtype, shape, aliasing, binding size) throw before anything is recorded. Target
 * values live on the GPU and are not checked: a target outside [0, V) gives a NaN log-prob, and
 * NaN loss, gradient row and total unless that token is masked (weight 0).
 */
import { ConfigError, ShapeError } from '../errors.ts';
import { type DispatchSpec, grid1d, type Recorder, texelTableWidth } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { dims, expectBindable, expectDistinct, expectDtype, expectLoopBudget, expectScratch, expectShape } from '../gpu/checks.ts';
import { splitRange } from '../gpu/chunks.ts';
import type { PolicyLossSpec, PpoLoss, Reduction } from '../algorithms/loss_spec.ts';

const KERNEL = 'policy_loss';

export interface PolicyLossInputs {
  logits: Tensor; // [N, V] f32
  targets: Tensor; // [N] i32, in [0, V)
  weights: Tensor; // [N] f32, per-token weight; 0 masks the token
  oldLogprobs?: Tensor; // [N] f32 (importance_sampling, ppo, grpo)
  advantages?: Tensor; // [N] f32 (importance_sampling, ppo, grpo)
  refLogprobs?: Tensor; // [N] f32 (grpo)
  seqIds?: Tensor; // [N] i32 in [0, numSequences) (sequence_mean)
  numSequences?: number; // S (sequence_mean)
}

/** Blocks of rows of the logits made and used one at a time (see the file comment). */
export interface LogitsBlocks {
  /** Rows of the logits tensor ([rows, V]): the largest block. */
  readonly rows: number;
  /** Records the logits of tokens [r0, r0 + n) into logits rows [0, n). */
  readonly produce: (rec: Recorder, r0: number, n: number) => void;
  /** Records what reads the gradient of tokens [r0, r0 + n), in dlogits rows [0, n). */
  readonly consume?: (rec: Recorder, r0: number, n: number) => void;
}

export interface PolicyLossOutputs {
  dlogits: Tensor; // [N, V] f32 ([blocks.rows, V] with blocks); may be inputs.logits (then the logits are overwritten)
  logprobs: Tensor; // [N] f32
  entropy: Tensor; // [N] f32
  loss: Tensor; // [N] f32
  stats: Tensor; // [6] f32
  scratch: Tensor; // f32, at least policyLossScratchSize(N, S) elements
}

/** Indices into the stats tensor. Means are over unmasked tokens. */
export const POLICY_STATS = {
  /** The aggregated loss whose gradient is dlogits. */
  loss: 0,
  /** Fraction of tokens whose surrogate gradient a clip (ratio or dual) zeroed (ppo, grpo). */
  clipFraction: 1,
  /** mean(old − lp), the k1 estimate of KL(old ‖ new) (0 for cross_entropy). */
  approxKl: 2,
  /** mean k3 to the reference policy (grpo; 0 otherwise). */
  refKl: 3,
  /** Mean entropy. */
  entropy: 4,
  /** Number of unmasked tokens. */
  tokens: 5,
} as const;
export const POLICY_STATS_SIZE = 6;

type PerTokenInput = 'oldLogprobs' | 'advantages' | 'refLogprobs';

interface Mode<S extends PolicyLossSpec<Reduction>> {
  /** The kernel's `const` of this mode, and its value (checked against the WGSL by a unit test). */
  readonly wgsl: `MODE_${string}`;
  readonly id: number;
  readonly needs: readonly PerTokenInput[];
  /** [ε_low, ε_high, dual-clip c (0 = off), β]. */
  readonly hyper: (spec: S) => [number, number, number, number];
}

const clip = (s: Pick<PpoLoss, 'clipLow' | 'clipHigh' | 'dualClip'>): [number, number, number] => [s.clipLow, s.clipHigh, s.dualClip ?? 0];

/**
 * One row per loss variant: its kernel mode, the per-token inputs it reads, its hyperparameters.
 * The mapped type makes a new kind in loss_spec.ts a compile error here until it has a row.
 */
export const POLICY_LOSS_MODES: { readonly [K in PolicyLossSpec<Reduction>['kind']]: Mode<Extract<PolicyLossSpec<Reduction>, { kind: K }>> } = {
  cross_entropy: { wgsl: 'MODE_CE', id: 0, needs: [], hyper: () => [0, 0, 0, 0] },
  importance_sampling: { wgsl: 'MODE_IS', id: 1, needs: ['oldLogprobs', 'advantages'], hyper: () => [0, 0, 0, 0] },
  ppo: { wgsl: 'MODE_PPO', id: 2, needs: ['oldLogprobs', 'advantages'], hyper: (s) => [...clip(s), 0] },
  grpo: { wgsl: 'MODE_GRPO', id: 3, needs: ['oldLogprobs', 'advantages', 'refLogprobs'], hyper: (s) => [...clip(s), s.klBeta] },
};

/** The kernel's AGG_* of each reduction (checked against the WGSL as the modes are). */
export const POLICY_LOSS_AGGREGATIONS: { readonly [A in Reduction]: { readonly wgsl: `AGG_${string}`; readonly id: number } } = {
  token_mean: { wgsl: 'AGG_TOKEN_MEAN', id: 0 },
  sequence_mean: { wgsl: 'AGG_SEQUENCE_MEAN', id: 1 },
  sum: { wgsl: 'AGG_SUM', id: 2 },
};

/** Elements of the f32 scratch tensor: 4 per token (scale, old, advantage, ref) + S counts. */
export function policyLossScratchSize(n: number, numSequences = 1): number {
  return 4 * n + Math.max(1, numSequences);
}

function modeOf<S extends PolicyLossSpec<Reduction>>(spec: S): Mode<S> {
  const mode = (POLICY_LOSS_MODES as Record<string, Mode<PolicyLossSpec<Reduction>>>)[spec.kind];
  if (!mode) throw new ConfigError('spec.kind', `unknown policy loss kind "${String(spec.kind)}"; known: ${Object.keys(POLICY_LOSS_MODES).join(', ')}`);
  return mode as Mode<S>;
}

/** Checks the spec's numbers; returns [ε_low, ε_high, c, β, entropyCoef]. */
function hyperparameters(spec: PolicyLossSpec<Reduction>): number[] {
  const [lo, hi, c, beta] = modeOf(spec).hyper(spec);
  const ent = spec.entropyCoef ?? 0;
  const finite = (field: string, x: number) => {
    if (!Number.isFinite(x)) throw new ConfigError(`spec.${field}`, `must be a finite number, got ${x}`);
  };
  for (const [f, x] of [['clipLow', lo], ['clipHigh', hi], ['dualClip', c], ['klBeta', beta], ['entropyCoef', ent]] as const) finite(f, x);
  if (lo < 0 || lo >= 1) throw new ConfigError('spec.clipLow', `must be in [0, 1), got ${lo}`);
  if (hi < 0) throw new ConfigError('spec.clipHigh', `must be ≥ 0, got ${hi}`);
  if (c !== 0 && c <= 1) throw new ConfigError('spec.dualClip', `must be > 1 (or absent), got ${c}`);
  if (!Object.hasOwn(POLICY_LOSS_AGGREGATIONS, spec.aggregation)) {
    throw new ConfigError('spec.aggregation', `must be one of ${Object.keys(POLICY_LOSS_AGGREGATIONS).join(', ')}, got "${spec.aggregation}"`);
  }
  return [lo, hi, c, beta, ent];
}

/** Tunables; the defaults are chosen per adapter. */
export interface PolicyLossTuning {
  /**
   * 'groups': a workgroup per row, its threads striding the row and reducing through workgroup
   * memory (real GPUs). 'rows': an invocation per row, four logits a step, no barriers (software
   * adapters; vec4 loads and stores where V % 4 == 0). 'texture': 'rows' reading the logits
   * through a texture copy (a temporary texture of the logits' size; 'rows' where the logits'
   * buffer cannot be copied whole texels — the same results). Default: the context's tunings
   * (KernelTunings.policyLossLayout), 'rows' read as 'texture' where the adapter wants texture
   * reads.
   */
  layout?: Layout;
  /** 'groups': threads per row (power of two ≤ 256); 'rows', 'texture': rows per workgroup. */
  rowThreads?: number;
}

type Layout = 'groups' | 'rows' | 'texture';
const LAYOUTS: readonly Layout[] = ['groups', 'rows', 'texture'];

interface Launch {
  layout: Layout;
  wg: number;
}

/** Loop iterations of one main_rows* / main_tex invocation: ⌊V/4⌋ + V % 4 in each of its two passes. */
const rowsIterations = (v: number) => 2 * (Math.floor(v / 4) + (v % 4));

/** How the main pass is laid out for this context and vocabulary. */
function launch(rec: Recorder, v: number, tuning: PolicyLossTuning): Launch {
  const { quirks, tunings } = rec.ctx;
  const preferred = tunings.policyLossLayout(v, rowsIterations(v), quirks.textureReads);
  const layout = tuning.layout ?? (preferred === 'rows' && quirks.textureReads ? 'texture' : preferred);
  if (!LAYOUTS.includes(layout)) throw new ConfigError('tuning.layout', `must be one of ${LAYOUTS.join(', ')}, got ${String(layout)}`);
  if (layout !== 'groups') expectLoopBudget(KERNEL, rec.ctx, rowsIterations(v), `layout '${layout}' at V=${v}`);
  // 'rows', 'texture': rows per workgroup, one llvmpipe SIMD row of 8 lanes; 'groups': threads per row.
  const wg = tuning.rowThreads ?? (layout !== 'groups' ? 8 : tunings.policyLossGroupThreads);
  if (!Number.isInteger(Math.log2(wg)) || wg > 256) throw new ConfigError('tuning.rowThreads', `must be a power of two ≤ 256, got ${wg}`);
  return { layout, wg };
}

/**
 * `t` as whole vec4s / rgba32float texels (Recorder.tempTexture): a view rounded up to a multiple
 * of 4 elements (the padding, from the pool's 256-byte buffer classes, is never used), or null
 * where the buffer cannot give that (a view near its end, an offset off a 16-byte texel, a
 * binding or a texture over the device's limits).
 */
function texelView(rec: Recorder, t: Tensor): Tensor | null {
  const { ctx } = rec;
  const padded = Math.max(4, Math.ceil(t.size / 4) * 4);
  const rows = Math.ceil(padded / 4 / texelTableWidth(ctx));
  const fits = t.byteOffset % 16 === 0 && t.byteOffset + 4 * padded <= t.buffer.size && 4 * padded <= ctx.limit('maxStorageBufferBindingSize') &&
    rows <= ctx.limit('maxTextureDimension2D');
  return fits ? t.view([padded], `${t.label}/texels`) : null;
}

/**
 * The policy loss and its gradient (see the file comment). Writes (=) every output tensor.
 * `dlogits === inputs.logits` selects the in-place variant.
 */
export function policyLoss(
  rec: Recorder, out: PolicyLossOutputs, inputs: PolicyLossInputs, spec: PolicyLossSpec<Reduction>, tuning: PolicyLossTuning = {}, blocks?: LogitsBlocks,
): void {
  const mode = modeOf(spec);
  const [epsLow, epsHigh, dualClip, klBeta, entCoef] = hyperparameters(spec);
  const { logits, targets, weights } = inputs;
  expectDtype(KERNEL, 'logits', logits, 'f32');
  if (logits.shape.length !== 2) throw new ShapeError(KERNEL, `logits must be [${blocks ? 'rows' : 'N'}, V], got ${logits}`);
  const [lrows, v] = logits.shape;
  const n = blocks ? targets.size : lrows;
  if (blocks && (!Number.isInteger(blocks.rows) || blocks.rows < 1 || blocks.rows !== lrows)) {
    throw new ShapeError(KERNEL, `row blocks of ${blocks.rows} rows need logits [${blocks.rows}, V], got ${logits}`);
  }
  if (v < 1) throw new ShapeError(KERNEL, `logits ${dims(logits)} has an empty vocabulary`);
  const { layout, wg } = launch(rec, v, tuning);
  expectDtype(KERNEL, 'targets', targets, 'i32');
  expectShape(KERNEL, 'targets', targets, [n]);
  expectDtype(KERNEL, 'weights', weights, 'f32');
  expectShape(KERNEL, 'weights', weights, [n]);
  // GRPO without its KL term (β = 0, as Dr. GRPO and DAPO train) needs no reference log-probs:
  // the sampling policy's stand in (k3 is then the KL to it, reported and multiplied by 0).
  const needs = spec.kind === 'grpo' && spec.klBeta === 0 && !inputs.refLogprobs ? mode.needs.filter((k) => k !== 'refLogprobs') : mode.needs;
  for (const name of needs) {
    const t = inputs[name];
    if (!t) throw new ShapeError(KERNEL, `${spec.kind} needs ${name} [${n}] (logits ${dims(logits)})`);
    expectDtype(KERNEL, name, t, 'f32');
    expectShape(KERNEL, name, t, [n]);
  }
  let s = 1;
  let seqIds: Tensor = targets; // bound, never read, unless sequence_mean
  if (spec.aggregation === 'sequence_mean') {
    s = inputs.numSequences ?? 0;
    if (!Number.isInteger(s) || s < 1) throw new ShapeError(KERNEL, `sequence_mean needs numSequences ≥ 1, got ${inputs.numSequences}`);
    if (!inputs.seqIds) throw new ShapeError(KERNEL, `sequence_mean needs seqIds [${n}] (logits ${dims(logits)})`);
    seqIds = inputs.seqIds;
    expectDtype(KERNEL, 'seqIds', seqIds, 'i32');
    expectShape(KERNEL, 'seqIds', seqIds, [n]);
  }
  expectDtype(KERNEL, 'dlogits', out.dlogits, 'f32');
  expectShape(KERNEL, 'dlogits', out.dlogits, [lrows, v]);
  for (const name of ['logprobs', 'entropy', 'loss'] as const) {
    expectDtype(KERNEL, name, out[name], 'f32');
    expectShape(KERNEL, name, out[name], [n]);
  }
  expectDtype(KERNEL, 'stats', out.stats, 'f32');
  expectShape(KERNEL, 'stats', out.stats, [POLICY_STATS_SIZE]);
  expectScratch(KERNEL, out.scratch, policyLossScratchSize(n, s), 'f32');
  const inPlace = out.dlogits === logits;
  type Named = readonly [string, Tensor | null];
  const written: Named[] = [['scratch', out.scratch], ['logprobs', out.logprobs], ['entropy', out.entropy], ['loss', out.loss],
    ['stats', out.stats]];
  if (!inPlace) written.push(['dlogits', out.dlogits]);
  const read: Named[] = [['logits', logits], ['targets', targets], ['weights', weights], ['seqIds', inputs.seqIds ?? null],
    ...needs.map((k): Named => [k, inputs[k] ?? null])];
  const all = [...read, ...written];
  expectDistinct(KERNEL, written.flatMap(([na, a]) => all.filter(([nb]) => nb !== na).map(([nb, b]) => [na, a, nb, b] as const)));
  expectBindable(KERNEL, rec.ctx, all);
  if (n === 0) return;

  // Unused f32 inputs are bound to `weights` (read-only twice is allowed); the mode ignores them.
  const old = inputs.oldLogprobs && mode.needs.includes('oldLogprobs') ? inputs.oldLogprobs : weights;
  const adv = inputs.advantages && mode.needs.includes('advantages') ? inputs.advantages : weights;
  const ref = inputs.refLogprobs && needs.includes('refLogprobs') ? inputs.refLogprobs : mode.needs.includes('refLogprobs') ? old : weights;
  const perRow = layout !== 'groups';
  const vec4 = v % 4 === 0;
  const params = (rowThreads: number, texWidth: number, r0: number, rows: number) => ({
    n, v, s, mode: mode.id, agg: POLICY_LOSS_AGGREGATIONS[spec.aggregation].id, rows_x: rowThreads, eps_low: epsLow, eps_high: epsHigh,
    dual_clip: dualClip, kl_beta: klBeta, ent_coef: entCoef, nan: NaN, tex_w: texWidth, row0: r0, block_rows: rows,
  });
  const single = { RWG: 256 }; // prepare and stats: one workgroup over all tokens
  rec.dispatch({
    kernel: KERNEL, entryPoint: 'prepare', constants: single, params: params(0, 0, 0, n), workgroups: [1],
    bindings: { scratch: out.scratch, weights, seq_ids: seqIds, old_lp: old, adv, ref_lp: ref },
  });
  const perToken = { scratch: out.scratch, targets, logprobs: out.logprobs, entropy: out.entropy, loss: out.loss };
  for (const [r0, rows] of blocks ? splitRange(n, blocks.rows) : [[0, n] as [number, number]]) {
    blocks?.produce(rec, r0, rows);
    const { workgroups, rowThreads } = grid1d(rec.ctx, rows, perRow ? wg : 1);
    const texels = layout === 'texture' ? texelView(rec, logits) : null;
    const dtexels = layout === 'texture' ? texelView(rec, out.dlogits) : null;
    const table = texels && dtexels ? rec.tempTexture(texels, 'policy_loss logits') : null;
    // The gradient goes to dlogits, or into the logits themselves in place (the *_inplace entry
    // points read no dlogits); main_rows reads both as vec4s, main_tex the logits from a texture
    // and dlogits as vec4s (rounded up; the logits in place).
    const scalar: DispatchSpec['bindings'] = { ...perToken, logits, dlogits: inPlace ? null : out.dlogits };
    const main: Record<Layout, { entry: string; bindings: DispatchSpec['bindings'] }> = {
      groups: { entry: inPlace ? 'main_inplace' : 'main', bindings: scalar },
      rows: vec4
        ? { entry: inPlace ? 'main_rows_inplace' : 'main_rows', bindings: { ...perToken, logits4: logits, dlogits4: inPlace ? null : out.dlogits } }
        : { entry: inPlace ? 'main_rows_any_inplace' : 'main_rows_any', bindings: scalar },
      texture: { entry: 'main_tex', bindings: { ...perToken, dlogits4: dtexels, logits_tex: table } },
    };
    const used = layout === 'texture' && !table ? 'rows' : layout; // 'rows' gives the same bits
    rec.dispatch({
      kernel: KERNEL, entryPoint: main[used].entry, constants: used === 'texture' ? { WG: wg, ALIGNED: +vec4 } : { WG: wg },
      params: params(rowThreads, table?.width ?? 0, r0, rows), workgroups, bindings: main[used].bindings,
    });
    // The block's copy is read by this dispatch only: the next block's (or a later product's) copy reuses it.
    if (table) rec.releaseTexture(table);
    blocks?.consume?.(rec, r0, rows);
  }
  rec.dispatch({
    kernel: KERNEL, entryPoint: 'stats', constants: single, params: params(0, 0, 0, n), workgroups: [1],
    bindings: { scratch: out.scratch, logprobs: out.logprobs, entropy: out.entropy, loss: out.loss, stats_out: out.stats },
  });
}
