/**
 * matmul — C[b] (=, or += with `accumulate`) = alpha·(op(A[b])·op(B[b]) + scale·U·op(V)) + bias
 * (host wrapper of kernels/matmul.wgsl, and of its generated variant matmul_f16 when B is f16).
 *
 * Shapes: A [M, K] or [batch, M, K] (stored [.., K, M] with `transA`), B [K, N] or [batch, K, N]
 * (stored [.., N, K] with `transB`), C [M, N] or [batch, M, N], bias [N]. An operand with a batch of
 * one (or no batch dimension) is broadcast over the batch (shared weights). The optional low-rank
 * term — U [M, R], V [R, N] (stored [N, R] with `transV`) — is what LoRA fuses into its base
 * product; it needs a batch of one. Every output is summed over k in order, in f32, by one
 * invocation: no atomics, bitwise-identical results run to run.
 *
 * The tile configuration comes from `matmulConfigFor(ctx)` (the context's tunings: register tiles
 * on CPU rasterizers, shared-memory tiles on real GPUs) unless `config` overrides it, so a
 * benchmark can try variants. Where the adapter wants texture reads (`ctx.quirks.textureReads`)
 * the register kernel reads A and B through texture copies made for the recording
 * (`reads: 'texture'`, entry main_tex, generated from main): same sums in the same order, bitwise
 * the buffer path's results, a fraction of the load cost there. The textures (A's and B's bytes, 8192 texels wide)
 * are charged to the recording's pool owner until the submit, but each is given back to the
 * recording after the product's last dispatch that reads it and reused by the next copy; an
 * operand too large for one falls back to the buffer path.
 *
 * Operands may be blocks of 2-D tensors (`matrixBlock`: rows × columns, read or written in place
 * through an element offset and a leading dimension), and a product whose A, B or C is larger
 * than one storage binding runs as sub-products over ranges of M, N and K that bind a window of
 * it at a time (src/ops/matmul_split.ts): the vocabulary-sized output head of GPT-2 small on a
 * 128 MiB binding limit. Splitting M or N leaves every sum as it was; splitting K adds the partial
 * products in order (not bitwise the unsplit sum). Low-rank terms and batched products are not
 * split (LimitError).
 *
 * An adapter with a loop budget (`ctx.quirks.loopBudget`: llvmpipe) ends an invocation's loops
 * silently past it. The register kernel's k loop costs far more than one iteration a step there
 * (measured on llvmpipe: garbage from K ≈ 7400 on with 16×16 tiles, transposed B and texture
 * reads; ≈ 14300 with 16×8 tiles), so there a product of batch 1 is summed over K ranges of at
 * most registerMaxK (the low-rank term and the bias go with the first range), and a batched one
 * over the budget is refused.
 */
import { LimitError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { type BindingValue, type DispatchSpec, type Recorder, type TexelTable, texelTableWidth } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectLoopBudget } from '../gpu/checks.ts';
import { GPU_MATMUL_TILES, LOOP_BUDGET_MARGIN, type MatmulTiles } from '../gpu/quirks/mod.ts';
import { splitRange } from '../gpu/chunks.ts';
import { bindsWhole, type Bound, fmt, type Mat, mat, type MatmulOperand, splitProduct, type SubProduct, vec4View } from './matmul_split.ts';

export { type MatmulOperand, matrixBlock, type MatrixBlock } from './matmul_split.ts';

const KERNEL = 'matmul';

/**
 * Loop iterations a loop budget is charged per 4-deep k step of the register kernel: the worst
 * measured on llvmpipe, ~35 (16×16 tiles, B transposed, texture reads), doubled for tile shapes
 * not measured.
 */
export const REGISTER_STEP_ITERATIONS = 64;

/**
 * Most bytes of a transposed B (a weight [N, K], as y = x·Wᵀ reads it) one sub-product copies
 * into a texture: ranges of N change no sum, so a vocabulary-sized head (GPT-2 small's tok_emb,
 * 154 MB) is read in ranges of ~16 MiB, each copied into the texture the previous range used
 * (recordMatmul), instead of windows as large as a binding. Ranges along K are bounded by
 * registerMaxK already where texture reads are used (on llvmpipe 3968 rows: 12 MB at C = 768).
 */
export const MAX_TEXTURE_COPY_BYTES = 16 * 2 ** 20;

/**
 * Deepest K range one register-kernel invocation runs within a loop budget (`ctx.quirks.loopBudget`)
 * with a rank-R term: a multiple of 64, or Infinity without a budget.
 */
export function registerMaxK(R: number, loopBudget: number): number {
  if (loopBudget === Number.POSITIVE_INFINITY) return loopBudget;
  const steps = Math.floor((loopBudget - LOOP_BUDGET_MARGIN) / REGISTER_STEP_ITERATIONS) - Math.ceil(R / 4) - 1;
  return Math.max(64, Math.floor((4 * steps) / 64) * 64);
}

export interface MatmulConfig extends MatmulTiles {
  /**
   * 'register' only: where A and B are read from — their storage buffers ('buffer', the default),
   * or texture copies made for the recording ('texture': bitwise the same results; see
   * DeviceQuirks.textureReads). Operands too large for a texture use 'buffer'.
   */
  reads?: 'buffer' | 'texture';
}

/**
 * The default tile configuration for this context (and, if given, problem size): the tiles of its
 * tunings (src/gpu/quirks/), the register kernel reading through textures where the adapter wants
 * texture reads.
 */
export function matmulConfigFor(ctx: GpuContext, dims?: { M: number; N: number; K: number }): MatmulConfig {
  const cfg: MatmulConfig = ctx.tunings.matmulTiles(dims);
  if (cfg.kernel === 'register' && ctx.quirks.textureReads) cfg.reads = 'texture';
  return cfg;
}

/** The real-GPU default (exported so tests can run it on software adapters too). */
export const HARDWARE_MATMUL_CONFIG: Readonly<MatmulConfig> = GPU_MATMUL_TILES;

export interface LowRankTerm {
  /** [M, R] */
  u: Tensor;
  /** [R, N], or [N, R] with transV */
  v: Tensor;
  transV?: boolean;
  scale: number;
}

export interface MatmulOptions {
  transA?: boolean;
  transB?: boolean;
  /** Scale of the product op(A)·op(B) (and of the low-rank term with it); default 1. */
  alpha?: number;
  /** [N], added to every row. */
  bias?: Tensor;
  /** C += ... instead of C = ... */
  accumulate?: boolean;
  /**
   * Applied to every output last (after bias and accumulate): 'gelu' is GELU's tanh approximation
   * as geluForward computes it, so an inference pass needs no separate activation dispatch.
   */
  activation?: 'gelu';
  lowRank?: LowRankTerm;
  config?: MatmulConfig;
  /** Kernel name used in error messages (LoRA passes its own). */
  opName?: string;
}

const fmtDims = (M: number, N: number, K: number) => `the product M=${M} N=${N} K=${K}`;

interface Dims {
  batch: number;
  M: number;
  N: number;
  K: number;
  aBatch: number;
  bBatch: number;
  a: Mat;
  b: Mat;
  c: Mat;
}

/**
 * Validates every operand; returns the problem's dimensions. Throws ShapeError, or LimitError for
 * a bias or low-rank tensor over the binding limit (A, B and C are split instead, see planMatmul).
 */
export function matmulDims(cOp: MatmulOperand, aOp: MatmulOperand, bOp: MatmulOperand, opts: MatmulOptions = {}): Dims {
  const op = opts.opName ?? KERNEL;
  const a = mat(op, 'a', aOp), b = mat(op, 'b', bOp), c = mat(op, 'c', cOp);
  const ctx = c.t.ctx;
  if (a.t.dtype !== 'f32') throw new ShapeError(op, `a (${a.t}) must be f32, got ${a.t.dtype}`);
  if (c.t.dtype !== 'f32') throw new ShapeError(op, `c (${c.t}) must be f32, got ${c.t.dtype}`);
  if (b.t.dtype !== 'f32' && b.t.dtype !== 'f16') throw new ShapeError(op, `b (${b.t}) must be f32 or f16, got ${b.t.dtype}`);
  if (b.t.dtype === 'f16' && !ctx.hasF16) throw new ShapeError(op, `b (${b.t}) is f16 but this device has no shader-f16; store it as f32`);
  const M = opts.transA ? a.cols : a.rows;
  const K = opts.transA ? a.rows : a.cols;
  const Kb = opts.transB ? b.cols : b.rows;
  const N = opts.transB ? b.rows : b.cols;
  const desc = () => `a ${a.desc}${opts.transA ? 'ᵀ' : ''} · b ${b.desc}${opts.transB ? 'ᵀ' : ''}`;
  if (K !== Kb) throw new ShapeError(op, `inner dimensions differ: ${desc()} gives K = ${K} vs ${Kb}`);
  const batch = Math.max(a.batch, b.batch);
  if ((a.batch !== 1 && a.batch !== batch) || (b.batch !== 1 && b.batch !== batch)) {
    throw new ShapeError(op, `batch sizes differ: ${desc()} (batches ${a.batch} and ${b.batch}; one may be 1 to broadcast)`);
  }
  const plain = cOp === c.t;
  const want = batch === 1 && (!plain || c.t.shape.length === 2) ? [M, N] : [batch, M, N];
  const have = plain ? c.t.shape : [c.rows, c.cols];
  if (have.length !== want.length || have.some((d, i) => d !== want[i])) {
    throw new ShapeError(op, `c ${c.desc} should be [${want.join(', ')}] for ${desc()}`);
  }
  if (opts.activation !== undefined && opts.activation !== 'gelu') throw new ShapeError(op, `activation must be 'gelu' or absent, got ${JSON.stringify(opts.activation)}`);
  const extras: [string, Tensor][] = [];
  if (opts.bias) {
    const bias = opts.bias;
    bias.assertLive();
    if (bias.dtype !== 'f32') throw new ShapeError(op, `bias (${bias}) must be f32, got ${bias.dtype}`);
    if (bias.shape.length !== 1 || bias.shape[0] !== N) throw new ShapeError(op, `bias ${fmt(bias)} should be [${N}] for c ${c.desc}`);
    extras.push(['bias', bias]);
  }
  if (opts.lowRank) {
    const { u, v, transV } = opts.lowRank;
    for (const [name, t] of [['u', u], ['v', v]] as const) {
      t.assertLive();
      if (t.dtype !== 'f32') throw new ShapeError(op, `${name} (${t}) must be f32, got ${t.dtype}`);
      if (t.shape.length !== 2) throw new ShapeError(op, `${name} ${fmt(t)} must be 2-D`);
    }
    const R = u.shape[1];
    const vWant = transV ? [N, R] : [R, N];
    if (u.shape[0] !== M || v.shape[0] !== vWant[0] || v.shape[1] !== vWant[1]) {
      throw new ShapeError(op, `low-rank term u ${fmt(u)} · v ${fmt(v)}${transV ? 'ᵀ' : ''} does not fit c ${c.desc} (want u [${M}, R], v [${vWant.join(', ')}])`);
    }
    if (batch !== 1) throw new ShapeError(op, `a low-rank term needs a batch of 1, got ${batch}`);
    extras.push(['u', u], ['v', v]);
  }
  for (const [name, t] of [['a', a.t], ['b', b.t], ...extras] as [string, Tensor][]) {
    if (t.buffer === c.t.buffer) throw new ShapeError(op, `c (${c.t}) must not alias ${name} (${t})`);
  }
  const max = ctx.limit('maxStorageBufferBindingSize');
  for (const [name, t] of extras) {
    if (!bindsWhole(ctx, t)) throw new LimitError(op, `${name} (${t}) is ${t.byteLength} bytes, over the device's maxStorageBufferBindingSize of ${max}`);
  }
  return { batch, M, N, K, aBatch: a.batch, bBatch: b.batch, a, b, c };
}

/**
 * A validated product, ready to record: the dispatches matmul() would make, and the operands to
 * copy into textures first ('texture' reads only): each is bound as `binding` of the dispatches
 * [from, to).
 */
export interface MatmulPlan {
  readonly dispatches: readonly DispatchSpec[];
  readonly textures: readonly { binding: 'A_tex' | 'B_tex'; tensor: Tensor; label: string; from: number; to: number }[];
}

/** Whether `t`'s elements fit one texture of Recorder.tempTexture (4 elements a texel). */
function fitsTexture(ctx: GpuContext, t: Tensor): boolean {
  const width = texelTableWidth(ctx);
  return Number.isInteger(Math.log2(width)) && Math.ceil(Math.ceil(t.size / 4) / width) <= ctx.limit('maxTextureDimension2D');
}

/**
 * Validates a product and works out its dispatches without recording anything, so callers that
 * record several products (LoRA) can refuse bad input before any of them is recorded.
 */
export function planMatmul(ctx: GpuContext, c: MatmulOperand, a: MatmulOperand, b: MatmulOperand, opts: MatmulOptions = {}): MatmulPlan {
  const dims = matmulDims(c, a, b, opts);
  const { batch, M, N } = dims;
  if (M === 0 || N === 0 || batch === 0) return { dispatches: [], textures: [] };
  const op = opts.opName ?? KERNEL;
  const transA = Boolean(opts.transA);
  const transB = Boolean(opts.transB);
  const R = opts.lowRank ? opts.lowRank.u.shape[1] : 0;
  const config = opts.config ?? matmulConfigFor(ctx, dims);
  const register = config.kernel === 'register';
  const maxK = register ? registerMaxK(R, ctx.quirks.loopBudget) : Number.POSITIVE_INFINITY;
  // Texture reads copy A and B: ranges of N keep a transposed B's copies small (a low-rank term
  // is not split over M or N, so its product copies its operands whole).
  const maxCopy = register && config.reads === 'texture' && !opts.lowRank ? MAX_TEXTURE_COPY_BYTES : Number.POSITIVE_INFINITY;
  const subs = splitProduct(op, ctx, dims, dims.a, dims.b, dims.c, transA, transB, maxK, maxCopy);
  if (opts.lowRank && subs.some((s) => s.M !== M || s.N !== N)) {
    throw new LimitError(op, `a product with a low-rank term is not split over M or N, but a ${dims.a.desc}, b ${dims.b.desc} or c ${dims.c.desc} is over the device's maxStorageBufferBindingSize`);
  }
  const plan: { dispatches: DispatchSpec[]; textures: MatmulPlan['textures'][number][] } = { dispatches: [], textures: [] };
  for (const sub of subs) planSub(ctx, plan, dims, sub, opts);
  return plan;
}

/** Appends the dispatches (and texture copies) of one sub-product. */
function planSub(ctx: GpuContext, plan: { dispatches: DispatchSpec[]; textures: MatmulPlan['textures'][number][] }, dims: Dims, sub: SubProduct, opts: MatmulOptions): void {
  const { batch, aBatch, bBatch } = dims;
  const { M, N, K } = sub;
  const cfg = opts.config ?? matmulConfigFor(ctx, { M, N, K });
  const op = opts.opName ?? KERNEL;
  checkConfig(op, ctx, cfg);
  const lora = sub.k0 === 0 ? opts.lowRank : undefined; // a split K adds the low-rank term once
  const R = lora ? lora.u.shape[1] : 0;
  const transA = Boolean(opts.transA);
  const transB = Boolean(opts.transB);
  const transV = Boolean(lora?.transV);
  const tiled = cfg.kernel === 'tiled';
  // Register tiles shrink on degenerate problems (one decode row, a rank-1 adapter) so no loads
  // are wasted on clamped rows; only to 1 or 4, which bounds the pipeline variants.
  const shrink = (dim: number, t: number) => (tiled ? t : dim === 1 ? 1 : dim <= 4 ? Math.min(t, 4) : t);
  const tm = shrink(M, cfg.tm);
  const tn = shrink(N, cfg.tn);
  const constants: Record<string, number> = { TM: tm, TN: tn, WG_X: cfg.wgX, WG_Y: cfg.wgY, HAS_LOWRANK: +Boolean(lora) };
  // Element strides of A(m, k), B(k, n): the leading dimension along the stored rows.
  const lda = dims.a.ld, ldb = dims.b.ld;
  if (tiled) {
    constants.BK = cfg.bk;
  } else {
    // 4-wide loads along whichever dimension of the stored matrix is contiguous, where it (and
    // the tile, for rows or columns), the leading dimension and the offset are multiples of 4;
    // scalar loads through the strides else.
    const q = (x: Bound, ld: number) => x.off % 4 === 0 && ld % 4 === 0;
    constants.MODE_A = !q(sub.a, lda) ? 0 : transA ? (M % 4 === 0 && tm % 4 === 0 ? 2 : 0) : (K % 4 === 0 ? 1 : 0);
    constants.MODE_B = !q(sub.b, ldb) ? 0 : transB ? (K % 4 === 0 ? 1 : 0) : (N % 4 === 0 && tn % 4 === 0 ? 2 : 0);
    constants.MODE_V = !lora ? 0 : transV ? (R % 4 === 0 ? 1 : 0) : (N % 4 === 0 && tn % 4 === 0 ? 2 : 0);
  }
  // Within the adapter's loop budget (expectLoopBudget): the register kernel's ceil(K/4) +
  // ceil(R/4) steps cost REGISTER_STEP_ITERATIONS each (measured on llvmpipe).
  const threads = cfg.wgX * cfg.wgY;
  const iterations = tiled
    ? Math.ceil(K / cfg.bk) * (1 + Math.min(cfg.bk, K) + Math.ceil((cfg.bk * cfg.wgY * cfg.tm) / threads) + Math.ceil((cfg.bk * cfg.wgX * cfg.tn) / threads)) + R
    : (Math.ceil(K / 4) + Math.ceil(R / 4)) * REGISTER_STEP_ITERATIONS;
  expectLoopBudget(op, ctx, iterations + 4, fmtDims(M, N, K));
  const gx = Math.ceil(N / (cfg.wgX * tn));
  const gy = Math.ceil(M / (cfg.wgY * tm));
  const maxWg = ctx.limit('maxComputeWorkgroupsPerDimension');
  const A = sub.a.t, B = sub.b.t, C = sub.c.t;
  // Absent operands (bias, U, V) are bound to A (read-only aliases are allowed): every entry
  // point names them. The vec4 views A4, B4, V4 are used by the register kernel only.
  const u = lora ? lora.u : A;
  const v = lora ? lora.v : A;
  const tex = !tiled && cfg.reads === 'texture' && fitsTexture(ctx, A) && fitsTexture(ctx, B);
  if (tex) constants.TEX_SHIFT = Math.log2(texelTableWidth(ctx));
  // main_tex reads A and B from textures (A_tex, B_tex: placed by recordMatmul), not from buffers.
  const bias = sub.k0 === 0 ? opts.bias : undefined; // a split K adds the bias once
  const v4 = (t: Tensor) => (tiled ? null : vec4View(t));
  const shared = { bias: bias ?? A, U: u, V: v, V4: v4(v), C };
  const bindings: Record<string, BindingValue | null> = tex ? shared : { ...shared, A, A4: v4(A), B, B4: v4(B) };
  // main_tex never touches B's storage type (the fetch widens f16 texels): one pipeline for both.
  const kernel = B.dtype === 'f16' && !tex ? 'matmul_f16' : KERNEL;
  const entryPoint = tiled ? 'main_tiled' : tex ? 'main_tex' : 'main';
  const accumulate = opts.accumulate || sub.k0 > 0;
  if (opts.activation === 'gelu' && sub.k0 + K === dims.K) constants.ACT = 1; // a split K: on the last range's sums
  const from = plan.dispatches.length;
  for (const [oz, nz] of splitRange(batch, maxWg)) {
    for (const [oy, ny] of splitRange(gy, maxWg)) {
      for (const [ox, nx] of splitRange(gx, maxWg)) {
        const params = {
          M, N, K, R,
          a_sm: transA ? 1 : lda, a_sk: transA ? lda : 1,
          b_sk: transB ? 1 : ldb, b_sn: transB ? ldb : 1,
          v_sr: transV ? 1 : N, v_sn: transV ? R : 1,
          a_bstride: aBatch === 1 ? 0 : M * K, b_bstride: bBatch === 1 ? 0 : K * N, c_bstride: M * N,
          alpha: opts.alpha ?? 1, lora_scale: lora ? lora.scale : 0,
          flags: (bias ? 1 : 0) | (accumulate ? 2 : 0),
          wg_off_x: ox, wg_off_y: oy, wg_off_z: oz,
          a_off: sub.a.off, b_off: sub.b.off, c_off: sub.c.off, c_ld: dims.c.ld, bias_off: sub.n0,
        };
        plan.dispatches.push({ kernel, entryPoint, constants, bindings, params, workgroups: [nx, ny, nz] });
      }
    }
  }
  const to = plan.dispatches.length;
  if (tex) plan.textures.push({ binding: 'A_tex', tensor: vec4View(A), label: `${op} a`, from, to }, { binding: 'B_tex', tensor: vec4View(B), label: `${op} b`, from, to });
}

function checkConfig(op: string, ctx: GpuContext, cfg: MatmulConfig): void {
  const bad = (why: string) => new LimitError(op, `tile config ${JSON.stringify(cfg)}: ${why}`);
  for (const k of ['tm', 'tn'] as const) if (!Number.isInteger(cfg[k]) || cfg[k] < 1 || cfg[k] > 16) throw bad(`${k} must be an integer in 1..16`);
  if (!Number.isInteger(cfg.wgX) || !Number.isInteger(cfg.wgY) || cfg.wgX < 1 || cfg.wgY < 1) throw bad('wgX and wgY must be positive integers');
  if (cfg.wgX * cfg.wgY > ctx.limit('maxComputeInvocationsPerWorkgroup')) throw bad('too many invocations per workgroup');
  if (cfg.kernel === 'tiled') {
    if (!Number.isInteger(cfg.bk) || cfg.bk < 1) throw bad('bk must be a positive integer');
    const bytes = 4 * cfg.bk * (cfg.wgY * cfg.tm + cfg.wgX * cfg.tn);
    if (bytes > ctx.limit('maxComputeWorkgroupStorageSize')) throw bad(`needs ${bytes} bytes of workgroup memory, over the device's ${ctx.limit('maxComputeWorkgroupStorageSize')}`);
  }
}

/**
 * Record a plan made by planMatmul. Each operand is copied into a texture right before the first
 * dispatch that reads it, once per plan (sub-products over K ranges read the same A or B range
 * again; A and B are only read), and the texture is given back to the recording
 * (Recorder.releaseTexture) after the last dispatch that reads it, so the next range or product
 * copies into it instead of holding a texture of its own until the submit. A weight
 * (`Tensor.keepTexels`) is read through the copy the context keeps (Recorder.texels): copied once,
 * not per recording, until something writes it.
 */
export function recordMatmul(rec: Recorder, plan: MatmulPlan): void {
  const key = (t: Tensor) => `${t.byteOffset}+${t.bindingBytes}`;
  // The last dispatch reading each operand range (buffer → range → index).
  const last = new Map<GPUBuffer, Map<string, number>>();
  for (const t of plan.textures) {
    const ranges = last.get(t.tensor.buffer) ?? new Map<string, number>();
    last.set(t.tensor.buffer, ranges);
    ranges.set(key(t.tensor), Math.max(ranges.get(key(t.tensor)) ?? -1, t.to - 1));
  }
  const tables = new Map<GPUBuffer, Map<string, TexelTable>>();
  const tableOf = (t: Tensor, label: string): TexelTable => {
    const ranges = tables.get(t.buffer) ?? new Map<string, TexelTable>();
    tables.set(t.buffer, ranges);
    if (!ranges.has(key(t))) ranges.set(key(t), rec.texels(t, label));
    return ranges.get(key(t))!;
  };
  plan.dispatches.forEach((d, i) => {
    const mine = plan.textures.filter((t) => i >= t.from && i < t.to);
    if (mine.length === 0) return rec.dispatch(d);
    const bindings: Record<string, DispatchSpec['bindings'][string]> = { ...d.bindings };
    for (const t of mine) bindings[t.binding] = tableOf(t.tensor, t.label);
    rec.dispatch({ ...d, bindings });
    for (const t of mine) {
      const ranges = tables.get(t.tensor.buffer)!;
      const table = ranges.get(key(t.tensor));
      if (table && last.get(t.tensor.buffer)!.get(key(t.tensor)) === i) {
        rec.releaseTexture(table);
        ranges.delete(key(t.tensor));
      }
    }
  });
}

/**
 * C = alpha·(op(A)·op(B) + scale·U·op(V)) + bias; C += the same with `accumulate`; then GELU of
 * the result with `activation: 'gelu'`. Writes (=)
 * C by default. See the file header for shapes. Records one dispatch (more past 65535
 * workgroups per grid axis, or for an operand over the binding limit).
 */
export function matmul(rec: Recorder, c: MatmulOperand, a: MatmulOperand, b: MatmulOperand, opts: MatmulOptions = {}): void {
  recordMatmul(rec, planMatmul(rec.ctx, c, a, b, opts));
}
