/**
 * Causal attention, flash style — host wrappers of kernels/attention_fwd.wgsl,
 * attention_bwd.wgsl and attention_decode.wgsl.
 *
 * Layout (what a fused QKV projection writes, so no transposes):
 *   q, out, dout, dq [B, T, Hq, D]    k, v, dk, dv [B, T, Hkv, D]    lse [B, Hq, T]
 * Grouped-query attention: Hkv divides Hq and query head h reads kv head h / (Hq / Hkv).
 * D is a multiple of 4 in [4, 256]. Scale defaults to 1 / sqrt(D) (Gemma 3 passes
 * query_pre_attn_scalar^−0.5). All tensors f32.
 *
 * Masks: always causal, plus optionally
 *   - `window` W: a sliding window — query t sees key j only if t − W < j ≤ t (W keys, itself
 *     included), as transformers' sliding_window_overlay; undefined = unlimited;
 *   - `lengths` i32 [B]: a padded batch; rows t ≥ lengths[b] are padding;
 *   - `segments` i32 [B, T]: a packed batch; a token sees only earlier tokens with its own id,
 *     and a negative id marks padding. Segments are contiguous runs, so within one the index
 *     distance t − j is the position distance the window is measured in.
 * Padding rows get out = 0, lse = 0 and dq = 0; keys no live row sees (padding, or outside every
 * row's window) get dk = dv = 0.
 *
 * Memory: the forward allocates nothing and never forms a T×T matrix (O(T) bytes in all); the
 * backward uses a caller-provided workspace [B, Hq, T, 2] (LSE in base 2 and Δ = rowsum(dO∘O)).
 */
import { ConfigError, LimitError, ShapeError } from '../errors.ts';
import { expectBindable, expectDistinct, expectDtype, expectLoopBudget, expectShape } from '../gpu/checks.ts';
import type { GpuContext } from '../gpu/device.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';

const FWD = 'attention_fwd';
const BWD = 'attention_bwd';
const DECODE = 'attention_decode';

export interface AttentionTuning {
  /** Stage K/V (or Q/dO) blocks in workgroup memory: true for real GPUs, false for software adapters. */
  tiled: boolean;
  /** Invocations per workgroup. */
  wg: number;
  /** Rows per invocation (register blocking; software adapters want several). */
  rows: number;
  /** Rows of the other side per block. */
  bc: number;
}

export interface AttentionOptions {
  /** Softmax scale; default 1 / sqrt(D). */
  scale?: number;
  /**
   * Sliding window: query t sees keys t − window < j ≤ t (`window` keys, itself included), on top
   * of the other masks; a positive safe integer, undefined = unlimited (window ≥ T is the same).
   */
  window?: number;
  /** i32 [B]: valid tokens per sequence (padded batch). */
  lengths?: Tensor;
  /** i32 [B, T]: segment id per token (packed batch); negative = padding. */
  segments?: Tensor;
  /** Override the per-adapter choice of kernel variant and block sizes (tests, benchmarks). */
  tuning?: Partial<AttentionTuning>;
}

export interface AttentionDecodeOptions {
  /** Softmax scale; default 1 / sqrt(D). */
  scale?: number;
  /**
   * Sliding window: the query (position lengths[b] − 1) sees cache rows lengths[b] − window ..
   * lengths[b] − 1; a positive safe integer, undefined = unlimited.
   */
  window?: number;
  /**
   * Key splits per (b, h) — the decode workgroup size. Default 16, fewer where 16 partial
   * accumulators of D floats do not fit the workgroup memory (15 at D = 256 with 16 KiB).
   */
  splits?: number;
}

/**
 * The kernel variant and block sizes for this adapter and head size. Software adapters: no
 * shared memory, 8 invocations (one llvmpipe SIMD row), each with a register tile of
 * rows × ceil(D/16) mat4x4 chunks capped at 16 (rows 8 for D ≤ 32, 4 for D = 64, 2 for D = 128,
 * 1 for D > 128): llvmpipe's compile time grows steeply past that (rows 8 at D = 64 run the
 * backward faster but take several times as long to compile — pass `tuning: { rows: 8 }` for
 * long runs, where the compile is paid once). Real GPUs: tiled, 64 invocations of one row, blocks of up to 16 rows of the other
 * side — fewer where two [bc, D] tiles do not fit maxComputeWorkgroupStorageSize (bc = 7 at
 * D = 256 with WebGPU's minimum 16 KiB); should not even one row fit, the untiled variant.
 */
export function attentionTuning(ctx: GpuContext, D: number, override: Partial<AttentionTuning> = {}): AttentionTuning {
  // Two [bc, D] f32 tiles plus a [bc] vec2 tile must fit in workgroup memory.
  const fit = Math.floor(ctx.limit('maxComputeWorkgroupStorageSize') / (2 * D * 4 + 8));
  const tiled = override.tiled ?? (ctx.tunings.attentionTiled && fit >= 1);
  const wg = override.wg ?? (tiled ? 64 : 8);
  const rows = override.rows ?? (tiled ? 1 : Math.min(8, Math.max(1, Math.floor(16 / Math.ceil(D / 16)))));
  const bc = override.bc ?? (tiled ? Math.min(16, fit) : 16);
  if (!Number.isInteger(bc) || bc < 1 || bc > 32 || (tiled && bc > fit)) {
    const why = tiled ? `; two [${bc}, ${D}] f32 tiles need ${bc * (2 * D * 4 + 8)} bytes, the device has ${ctx.limit('maxComputeWorkgroupStorageSize')}` : '';
    throw new LimitError(FWD, `block size ${bc} outside [1, ${tiled ? Math.min(32, fit) : 32}] for D=${D}${why}`);
  }
  if (!Number.isInteger(wg) || wg < 1 || wg > ctx.limit('maxComputeInvocationsPerWorkgroup')) {
    throw new LimitError(FWD, `workgroup size ${wg} outside [1, ${ctx.limit('maxComputeInvocationsPerWorkgroup')}]`);
  }
  // Tiled kernels with 8 rows take minutes to compile on llvmpipe for D = 128; GPUs use 1 row.
  const maxRows = tiled ? 4 : 8;
  if (!Number.isInteger(rows) || rows < 1 || rows > maxRows) {
    throw new LimitError(FWD, `rows per invocation ${rows} outside [1, ${maxRows}]${tiled ? ' (tiled)' : ''}`);
  }
  return { tiled, wg, rows, bc };
}

/**
 * Key splits (the workgroup size) of attentionDecode at head size D: `override`, else 16, or as
 * many as fit where 16 splits' partial states (D + 2 floats each, parked in workgroup memory for
 * the merge) do not — 15 at D = 256 with WebGPU's minimum 16 KiB. LimitError if `override` does
 * not fit.
 */
export function attentionDecodeSplits(ctx: GpuContext, D: number, override?: number): number {
  const smemMax = ctx.limit('maxComputeWorkgroupStorageSize');
  const splits = override ?? Math.max(1, Math.min(16, Math.floor(smemMax / (D * 4 + 8))));
  const smem = splits * (D * 4 + 8);
  if (!Number.isInteger(splits) || splits < 1 || smem > smemMax || splits > ctx.limit('maxComputeInvocationsPerWorkgroup')) {
    throw new LimitError(DECODE, `splits=${splits} needs ${smem} bytes of workgroup memory (the device has ${smemMax}) and ${splits} invocations`);
  }
  return splits;
}

/** Shape of the backward pass's workspace: [B, Hq, T, 2] f32 (LSE in base 2 and Δ per row). */
export function attentionWorkShape(q: Tensor): [number, number, number, number] {
  const [B, T, Hq] = q.shape;
  return [B, Hq, T, 2];
}

interface Dims {
  B: number;
  T: number;
  Hq: number;
  Hkv: number;
  D: number;
}

const fmt = (t: Tensor) => `${t.label} [${t.shape.join(', ')}]`;

function checkHeadDim(op: string, D: number, what: string): void {
  if (D % 4 !== 0 || D < 4 || D > 256) {
    throw new ShapeError(op, `unsupported head size D=${D} (${what}): D must be a multiple of 4 in [4, 256]`);
  }
}

/** Validate q [B,T,Hq,D] and k, v [B,T,Hkv,D]; returns the dims. */
function qkvDims(op: string, q: Tensor, k: Tensor, v: Tensor): Dims {
  for (const [n, t] of [['q', q], ['k', k], ['v', v]] as const) expectDtype(op, n, t, 'f32');
  if (q.shape.length !== 4 || k.shape.length !== 4 || v.shape.length !== 4) {
    throw new ShapeError(op, `q ${fmt(q)}, k ${fmt(k)}, v ${fmt(v)} must be 4-D: q [B, T, Hq, D], k and v [B, T, Hkv, D]`);
  }
  const [B, T, Hq, D] = q.shape;
  const [Bk, Tk, Hkv, Dk] = k.shape;
  if (Bk !== B || Tk !== T) throw new ShapeError(op, `batch or time differ: q ${fmt(q)}, k ${fmt(k)}`);
  if (Dk !== D) throw new ShapeError(op, `head sizes differ: q ${fmt(q)} has D=${D}, k ${fmt(k)} has D=${Dk}`);
  expectShape(op, 'v', v, k.shape);
  if (Hkv < 1 || Hq % Hkv !== 0) {
    throw new ShapeError(op, `query heads Hq=${Hq} (q ${fmt(q)}) must be a multiple of kv heads Hkv=${Hkv} (k ${fmt(k)})`);
  }
  checkHeadDim(op, D, `q ${fmt(q)}`);
  return { B, T, Hq, Hkv, D };
}

/** The mask tensor and mode, validated; with no mask, q is bound in the (unread) mask slot. */
function maskOf(op: string, dims: Dims, q: Tensor, opts: AttentionOptions): { mode: number; mask: Tensor } {
  if (opts.lengths && opts.segments) throw new ShapeError(op, 'give lengths or segments, not both');
  if (opts.lengths) {
    expectDtype(op, 'lengths', opts.lengths, 'i32');
    expectShape(op, 'lengths', opts.lengths, [dims.B]);
    return { mode: 1, mask: opts.lengths };
  }
  if (opts.segments) {
    expectDtype(op, 'segments', opts.segments, 'i32');
    expectShape(op, 'segments', opts.segments, [dims.B, dims.T]);
    return { mode: 2, mask: opts.segments };
  }
  return { mode: 0, mask: q };
}

/** Outputs must not alias each other or any input (WebGPU forbids read + write of one buffer in a dispatch). */
function checkAliasing(op: string, outputs: Record<string, Tensor>, inputs: Record<string, Tensor | undefined>): void {
  const outs = Object.entries(outputs);
  expectDistinct(op, outs.flatMap(([n, t], i) =>
    [...outs.slice(i + 1), ...Object.entries(inputs)].map(([m, u]) => [n, t, m, u ?? null] as const)));
}

/** Every binding within the device's binding size, and the grid within its per-dimension limit. */
function checkLimits(ctx: GpuContext, op: string, tensors: Record<string, Tensor | undefined>, groups: number[]): void {
  expectBindable(op, ctx, Object.entries(tensors).map(([n, t]) => [n, t ?? null] as const));
  const maxWg = ctx.limit('maxComputeWorkgroupsPerDimension');
  if (groups.some((g) => g > maxWg)) throw new LimitError(op, `workgroups [${groups.join(', ')}] exceed ${maxWg} per dimension`);
}

function scaleOf(op: string, D: number, scale: number | undefined): number {
  if (scale !== undefined && (typeof scale !== 'number' || !Number.isFinite(scale))) {
    throw new ConfigError('scale', `${op}: the softmax scale must be a finite number, got ${scale}`);
  }
  return scale ?? 1 / Math.sqrt(D);
}

/** The window as the kernels take it: W in [1, n], where n (T, or Tmax in decode) means unlimited. */
function windowOf(op: string, window: number | undefined, n: number): number {
  if (window !== undefined && (!Number.isSafeInteger(window) || window < 1)) {
    throw new ConfigError('window', `${op}: the sliding window must be a positive safe integer (keys each query sees, itself included) or undefined for none, got ${window}`);
  }
  return Math.max(1, Math.min(window ?? n, n));
}

/**
 * Loop iterations per invocation (llvmpipe's limit, expectLoopBudget) of a pass where each
 * invocation owns `rows` rows and walks the other side's rows in reach: up to `span` of them, in
 * blocks of bc staged by the workgroup when tiled; `perRow` heads are walked in turn (dkdv: G).
 */
function passLoops(tune: AttentionTuning, D: number, T: number, W: number, perRow: number): number {
  const NM = Math.ceil(D / 16);
  const small = 8 + 4 * NM * tune.rows;   // per-row LSE stores and per-chunk store loops
  if (!tune.tiled) return perRow * (Math.min(T, W + tune.rows - 1) + 1) + small;
  const blocks = Math.ceil(Math.min(T, W + tune.wg * tune.rows - 1) / tune.bc) + 1;
  const perBlock = Math.ceil((tune.bc * D) / 4 / tune.wg) + Math.ceil(tune.bc / tune.wg) + tune.bc + 1;
  return perRow * (blocks * perBlock + 1) + small;
}

/**
 * Forward: out = softmax(scale·q·kᵀ + causal/padding/segment mask)·v and lse = the rows'
 * log-sum-exp (natural log). Writes (=) out [B, T, Hq, D] and lse [B, Hq, T].
 */
export function attentionForward(rec: Recorder, out: Tensor, lse: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): void {
  const dims = qkvDims(FWD, q, k, v);
  const { B, T, Hq, Hkv, D } = dims;
  expectDtype(FWD, 'out', out, 'f32');
  expectDtype(FWD, 'lse', lse, 'f32');
  expectShape(FWD, 'out', out, q.shape);
  expectShape(FWD, 'lse', lse, [B, Hq, T]);
  const { mode, mask } = maskOf(FWD, dims, q, opts);
  checkAliasing(FWD, { out, lse }, { q, k, v, lengths: opts.lengths, segments: opts.segments });
  const scale = scaleOf(FWD, D, opts.scale);
  const W = windowOf(FWD, opts.window, T);
  const tune = attentionTuning(rec.ctx, D, opts.tuning);
  const groups = [Math.ceil(T / (tune.wg * tune.rows)), Hq, B];
  checkLimits(rec.ctx, FWD, { q, k, v, mask, out, lse }, groups);
  expectLoopBudget(FWD, rec.ctx, passLoops(tune, D, T, W, 1), `q ${fmt(q)} with window ${W}`);
  if (B * T === 0) return;
  rec.dispatch({
    kernel: FWD,
    constants: { D4: D / 4, WG: tune.wg, ROWS: tune.rows, BC: tune.bc, TILED: tune.tiled ? 1 : 0 },
    bindings: { q, k, v, mask, out, lse },
    params: { T, Hq, Hkv, mask_mode: mode, scale, window: W },
    workgroups: [groups[0], groups[1], groups[2]],
  });
}

/**
 * Backward of `attentionForward`: gradients of Σ out∘dout. Writes (=) dq [B, T, Hq, D] and
 * dk, dv [B, T, Hkv, D]; `work` [B, Hq, T, 2] f32 is a workspace it overwrites. Recomputes the
 * probabilities from q, k and the forward's lse; no atomics (dk, dv sum over a group's query
 * heads inside the kernel, in head order). Same mask options as the forward.
 */
export function attentionBackward(
  rec: Recorder,
  dq: Tensor, dk: Tensor, dv: Tensor, work: Tensor,
  dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
  opts: AttentionOptions = {},
): void {
  const dims = qkvDims(BWD, q, k, v);
  const { B, T, Hq, Hkv, D } = dims;
  for (const [n, t] of [['dq', dq], ['dk', dk], ['dv', dv], ['work', work], ['dout', dout], ['out', out], ['lse', lse]] as const) {
    expectDtype(BWD, n, t, 'f32');
  }
  for (const [n, t] of [['dq', dq], ['dout', dout], ['out', out]] as const) expectShape(BWD, n, t, q.shape);
  expectShape(BWD, 'dk', dk, k.shape);
  expectShape(BWD, 'dv', dv, k.shape);
  expectShape(BWD, 'lse', lse, [B, Hq, T]);
  expectShape(BWD, 'work', work, [B, Hq, T, 2]);
  const { mode, mask } = maskOf(BWD, dims, q, opts);
  checkAliasing(BWD, { dq, dk, dv, work }, { dout, q, k, v, out, lse, lengths: opts.lengths, segments: opts.segments });
  const scale = scaleOf(BWD, D, opts.scale);
  const W = windowOf(BWD, opts.window, T);
  const tune = attentionTuning(rec.ctx, D, opts.tuning);
  const prep = grid1d(rec.ctx, B * Hq * T, tune.wg);
  const rowBlocks = Math.ceil(T / (tune.wg * tune.rows));
  checkLimits(rec.ctx, BWD, { dq, dk, dv, work, dout, q, k, v, out, lse, mask }, [rowBlocks, Hq, B]);
  // dkdv walks the G query heads of its group in turn, the heaviest pass.
  expectLoopBudget(BWD, rec.ctx, passLoops(tune, D, T, W, Hq / Hkv), `q ${fmt(q)}, k ${fmt(k)} with window ${W}`);
  if (B * T === 0) return;
  const constants = { D4: D / 4, WG: tune.wg, ROWS: tune.rows, BC: tune.bc, TILED: tune.tiled ? 1 : 0 };
  const params = { T, Hq, Hkv, mask_mode: mode, scale, row_threads: prep.rowThreads, window: W };
  rec.dispatch({ kernel: BWD, entryPoint: 'prep', constants, bindings: { out, dout, lse, ws: work }, params, workgroups: prep.workgroups });
  rec.dispatch({ kernel: BWD, entryPoint: 'dq_main', constants, bindings: { q, k, v, mask, dout, ws: work, dq }, params, workgroups: [rowBlocks, Hq, B] });
  rec.dispatch({ kernel: BWD, entryPoint: 'dkdv_main', constants, bindings: { q, k, v, mask, dout, ws: work, dk, dv }, params, workgroups: [rowBlocks, Hkv, B] });
}

/**
 * Decode (=): out[b, h] = attention of the single query q[b, h] over kCache/vCache rows
 * 0..lengths[b]−1 (the new token's k, v already appended), or with `window` W only the last W of
 * them: the query is at position lengths[b] − 1. q, out [B, Hq, D]; kCache, vCache
 * [B, Tmax, Hkv, D]; lengths i32 [B] (clamped to [0, Tmax]; 0 gives zeros).
 */
export function attentionDecode(rec: Recorder, out: Tensor, q: Tensor, kCache: Tensor, vCache: Tensor, lengths: Tensor, opts: AttentionDecodeOptions = {}): void {
  for (const [n, t] of [['out', out], ['q', q], ['kCache', kCache], ['vCache', vCache]] as const) expectDtype(DECODE, n, t, 'f32');
  expectDtype(DECODE, 'lengths', lengths, 'i32');
  if (q.shape.length !== 3 || kCache.shape.length !== 4) {
    throw new ShapeError(DECODE, `q ${fmt(q)} must be [B, Hq, D] and kCache ${fmt(kCache)} [B, Tmax, Hkv, D]`);
  }
  const [B, Hq, D] = q.shape;
  const [Bk, Tmax, Hkv, Dk] = kCache.shape;
  if (Bk !== B) throw new ShapeError(DECODE, `batch differs: q ${fmt(q)}, kCache ${fmt(kCache)}`);
  if (Dk !== D) throw new ShapeError(DECODE, `head sizes differ: q ${fmt(q)} has D=${D}, kCache ${fmt(kCache)} has D=${Dk}`);
  expectShape(DECODE, 'vCache', vCache, kCache.shape);
  expectShape(DECODE, 'out', out, q.shape);
  expectShape(DECODE, 'lengths', lengths, [B]);
  if (Hkv < 1 || Hq % Hkv !== 0) {
    throw new ShapeError(DECODE, `query heads Hq=${Hq} (q ${fmt(q)}) must be a multiple of kv heads Hkv=${Hkv} (kCache ${fmt(kCache)})`);
  }
  checkHeadDim(DECODE, D, `q ${fmt(q)}`);
  checkAliasing(DECODE, { out }, { q, kCache, vCache, lengths });
  const scale = scaleOf(DECODE, D, opts.scale);
  const W = windowOf(DECODE, opts.window, Tmax);
  const splits = attentionDecodeSplits(rec.ctx, D, opts.splits);
  checkLimits(rec.ctx, DECODE, { out, q, kCache, vCache, lengths }, [Hq, B]);
  const loops = Math.ceil(W / splits) + 3 * splits + Math.ceil(D / 4 / splits) * splits + D;
  expectLoopBudget(DECODE, rec.ctx, loops, `kCache ${fmt(kCache)} with window ${W} and ${splits} splits`);
  if (B === 0) return;
  rec.dispatch({
    kernel: DECODE,
    constants: { D4: D / 4, WG: splits },
    bindings: { q, k_cache: kCache, v_cache: vCache, lengths, out },
    params: { Tmax, Hq, Hkv, scale, window: W },
    workgroups: [Hq, B],
  });
}
