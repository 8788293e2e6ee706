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
 * The tile configuration comes from `matmulConfigFor(ctx)` (register tiles on CPU rasterizers,
 * shared-memory tiles on real GPUs) unless `config` overrides it, so a benchmark can try variants.
 * On llvmpipe the register kernel reads A and B through texture copies made for the recording
 * (`reads: 'texture'`, entry main_tex): same sums in the same order, bitwise the buffer path's
 * results, a fraction of the load cost there. The textures (A's and B's bytes, 8192 texels wide)
 * are charged to the recording's pool owner until the submit; an operand too large for one falls
 * back to the buffer path.
 */
import { LimitError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { type DispatchSpec, Params, type Recorder, texelTableWidth } from '../gpu/recorder.ts';
import { Tensor } from '../gpu/tensor.ts';
import { expectLoopBudget } from '../gpu/checks.ts';

const KERNEL = 'matmul';

export interface MatmulConfig {
  /** 'register': per-invocation register tiles, no barriers; 'tiled': shared-memory K slices. */
  kernel: 'register' | 'tiled';
  /** Rows and columns of C per invocation (1..16). */
  tm: number;
  tn: number;
  /** Workgroup size along N (x) and M (y). */
  wgX: number;
  wgY: number;
  /** 'tiled' only: depth of the K slice staged in workgroup memory. */
  bk: number;
  /**
   * 'register' only: where A and B are read from — their storage buffers ('buffer', the default),
   * or texture copies made for the recording ('texture': texel fetches are far cheaper than buffer
   * loads on llvmpipe; bitwise the same results). Operands too large for a texture use 'buffer'.
   */
  reads?: 'buffer' | 'texture';
}

/**
 * The default tile configuration for this adapter (and, if given, problem size). Software
 * adapters get big register tiles in one-SIMD-row workgroups: every load instruction costs the
 * same tens of cycles whatever its width, so loads per multiply-add decide, and barriers cost more
 * than they save. 16×16 tiles were fastest on llvmpipe for large products but compile for seconds
 * per variant at first use; 16×8 is the default below 256×256 outputs. Real GPUs get 16×16
 * workgroups with 4×4 outputs each over 16-deep shared-memory slices.
 */
export function matmulConfigFor(ctx: GpuContext, dims?: { M: number; N: number; K: number }): MatmulConfig {
  if (ctx.isSoftware) {
    const big = dims !== undefined && dims.M >= 256 && dims.N >= 256;
    const cfg: MatmulConfig = { kernel: 'register', tm: 16, tn: big ? 16 : 8, wgX: 8, wgY: 1, bk: 16 };
    if (ctx.kind === 'llvmpipe') cfg.reads = 'texture';
    return cfg;
  }
  return { ...HARDWARE_MATMUL_CONFIG };
}

/** The real-GPU default (exported so tests can run it on software adapters too). */
export const HARDWARE_MATMUL_CONFIG: Readonly<MatmulConfig> = Object.freeze({ kernel: 'tiled', tm: 4, tn: 4, wgX: 16, wgY: 16, bk: 16 });

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
  lowRank?: LowRankTerm;
  config?: MatmulConfig;
  /** Kernel name used in error messages (LoRA passes its own). */
  opName?: string;
}

const fmt = (t: Tensor) => `[${t.shape.join(', ')}]`;
const fmtDims = (M: number, N: number, K: number) => `the product M=${M} N=${N} K=${K}`;

/** A view of a tensor's buffer as whole vec4 elements (pool buffers are 256-byte multiples). */
function vec4View(t: Tensor): Tensor {
  const n = Math.max(4, Math.ceil(t.size / 4) * 4);
  return new Tensor(t.ctx, t.buffer, [n], t.dtype, t.owner, `${t.label}/vec4`);
}

interface Dims {
  batch: number;
  M: number;
  N: number;
  K: number;
  aBatch: number;
  bBatch: number;
}

/** Validates every operand; returns the problem's dimensions. Throws ShapeError / LimitError. */
export function matmulDims(c: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): Dims {
  const op = opts.opName ?? KERNEL;
  const ctx = c.ctx;
  for (const [name, t] of [['c', c], ['a', a], ['b', b]] as const) {
    t.assertLive();
    if (t.shape.length !== 2 && t.shape.length !== 3) throw new ShapeError(op, `${name} ${fmt(t)} must be 2-D or 3-D (batched)`);
  }
  if (a.dtype !== 'f32') throw new ShapeError(op, `a (${a}) must be f32, got ${a.dtype}`);
  if (c.dtype !== 'f32') throw new ShapeError(op, `c (${c}) must be f32, got ${c.dtype}`);
  if (b.dtype !== 'f32' && b.dtype !== 'f16') throw new ShapeError(op, `b (${b}) must be f32 or f16, got ${b.dtype}`);
  if (b.dtype === 'f16' && !ctx.hasF16) throw new ShapeError(op, `b (${b}) is f16 but this device has no shader-f16; store it as f32`);
  const [aB, aR, aC] = a.shape.length === 3 ? a.shape : [1, ...a.shape];
  const [bB, bR, bC] = b.shape.length === 3 ? b.shape : [1, ...b.shape];
  const M = opts.transA ? aC : aR;
  const K = opts.transA ? aR : aC;
  const Kb = opts.transB ? bC : bR;
  const N = opts.transB ? bR : bC;
  const desc = () => `a ${fmt(a)}${opts.transA ? 'ᵀ' : ''} · b ${fmt(b)}${opts.transB ? 'ᵀ' : ''}`;
  if (K !== Kb) throw new ShapeError(op, `inner dimensions differ: ${desc()} gives K = ${K} vs ${Kb}`);
  const batch = Math.max(aB, bB);
  if ((aB !== 1 && aB !== batch) || (bB !== 1 && bB !== batch)) {
    throw new ShapeError(op, `batch sizes differ: ${desc()} (batches ${aB} and ${bB}; one may be 1 to broadcast)`);
  }
  const want = batch === 1 && c.shape.length === 2 ? [M, N] : [batch, M, N];
  if (c.shape.length !== want.length || c.shape.some((d, i) => d !== want[i])) {
    throw new ShapeError(op, `c ${fmt(c)} should be [${want.join(', ')}] for ${desc()}`);
  }
  const reads: [string, Tensor][] = [['a', a], ['b', b]];
  if (opts.bias) {
    const bias = opts.bias;
    bias.assertLive();
    if (bias.dtype !== 'f32') throw new ShapeError(op, `bias (${bias}) must be f32, got ${bias.dtype}`);
    if (bias.shape.length !== 1 || bias.shape[0] !== N) throw new ShapeError(op, `bias ${fmt(bias)} should be [${N}] for c ${fmt(c)}`);
    reads.push(['bias', bias]);
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
      throw new ShapeError(op, `low-rank term u ${fmt(u)} · v ${fmt(v)}${transV ? 'ᵀ' : ''} does not fit c ${fmt(c)} (want u [${M}, R], v [${vWant.join(', ')}])`);
    }
    if (batch !== 1) throw new ShapeError(op, `a low-rank term needs a batch of 1, got ${batch}`);
    reads.push(['u', u], ['v', v]);
  }
  for (const [name, t] of reads) {
    if (t.buffer === c.buffer) throw new ShapeError(op, `c (${c}) must not alias ${name} (${t})`);
  }
  const max = ctx.limit('maxStorageBufferBindingSize');
  for (const [name, t] of [...reads, ['c', c] as [string, Tensor]]) {
    if (vec4View(t).bindingBytes > max) {
      throw new LimitError(op, `${name} (${t}) is ${t.byteLength} bytes, over the device's maxStorageBufferBindingSize of ${max}; split the product`);
    }
  }
  return { batch, M, N, K, aBatch: aB, bBatch: bB };
}

/** Split `groups` workgroups into dispatches of at most `max`: [offset, count][]. */
function chunks(groups: number, max: number): [number, number][] {
  const out: [number, number][] = [];
  for (let o = 0; o < groups; o += max) out.push([o, Math.min(max, groups - o)]);
  return out;
}

/**
 * A validated product, ready to record: the dispatches matmul() would make, and the operands to
 * copy into textures first (bound at `binding` of every dispatch; 'texture' reads only).
 */
export interface MatmulPlan {
  readonly dispatches: readonly DispatchSpec[];
  readonly textures: readonly { binding: number; tensor: Tensor; label: string }[];
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
export function planMatmul(ctx: GpuContext, c: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): MatmulPlan {
  const { batch, M, N, K, aBatch, bBatch } = matmulDims(c, a, b, opts);
  if (M === 0 || N === 0 || batch === 0) return { dispatches: [], textures: [] };
  const cfg = opts.config ?? matmulConfigFor(ctx, { M, N, K });
  const op = opts.opName ?? KERNEL;
  checkConfig(op, ctx, cfg);
  const lr = opts.lowRank;
  const R = lr ? lr.u.shape[1] : 0;
  const transA = Boolean(opts.transA);
  const transB = Boolean(opts.transB);
  const transV = Boolean(lr?.transV);
  const tiled = cfg.kernel === 'tiled';
  // Register tiles shrink on degenerate problems (one decode row, a rank-1 adapter) so no loads
  // are wasted on clamped rows; only to 1 or 4, which bounds the pipeline variants.
  const shrink = (dim: number, t: number) => (tiled ? t : dim === 1 ? 1 : dim <= 4 ? Math.min(t, 4) : t);
  const tm = shrink(M, cfg.tm);
  const tn = shrink(N, cfg.tn);
  const constants: Record<string, number> = { TM: tm, TN: tn, WG_X: cfg.wgX, WG_Y: cfg.wgY, HAS_LOWRANK: +Boolean(lr) };
  if (tiled) {
    constants.BK = cfg.bk;
  } else {
    // 4-wide loads along whichever dimension of the stored matrix is contiguous, where it (and
    // the tile, for rows or columns) is a multiple of 4; scalar loads through the strides else.
    constants.MODE_A = transA ? (M % 4 === 0 && tm % 4 === 0 ? 2 : 0) : (K % 4 === 0 ? 1 : 0);
    constants.MODE_B = transB ? (K % 4 === 0 ? 1 : 0) : (N % 4 === 0 && tn % 4 === 0 ? 2 : 0);
    constants.MODE_V = !lr ? 0 : transV ? (R % 4 === 0 ? 1 : 0) : (N % 4 === 0 && tn % 4 === 0 ? 2 : 0);
  }
  // llvmpipe silently stops an invocation's loops after 65535 iterations in all (see rowwise.ts);
  // the register kernel's TM/TN loops unroll, so its ceil(K/4) + ceil(R/4) steps are what counts.
  const threads = cfg.wgX * cfg.wgY;
  const iterations = tiled
    ? Math.ceil(K / cfg.bk) * (1 + Math.min(cfg.bk, K) + Math.ceil((cfg.bk * cfg.wgY * cfg.tm) / threads) + Math.ceil((cfg.bk * cfg.wgX * cfg.tn) / threads)) + R
    : Math.ceil(K / 4) + Math.ceil(R / 4);
  expectLoopBudget(op, ctx, iterations + 4, fmtDims(M, N, K));
  const gx = Math.ceil(N / (cfg.wgX * tn));
  const gy = Math.ceil(M / (cfg.wgY * tm));
  const maxWg = ctx.limit('maxComputeWorkgroupsPerDimension');
  // Absent operands are bound to A (read-only aliases are allowed): the kernel names them all.
  // The vec4 views are used by the register kernel only ('auto' layouts drop unused bindings).
  const v4 = (t: Tensor) => (tiled ? null : vec4View(t));
  const u = lr ? lr.u : a;
  const v = lr ? lr.v : a;
  const tex = !tiled && cfg.reads === 'texture' && fitsTexture(ctx, a) && fitsTexture(ctx, b);
  if (tex) constants.TEX_SHIFT = Math.log2(texelTableWidth(ctx));
  // Binding table: 0 A, 1 A4, 2 B, 3 B4, 4 bias, 5 U, 6 V, 7 V4, 8 C, 9 A's texture, 10 B's texture
  // (placed by recordMatmul), params at 11. main_tex reads neither A nor B from buffers.
  const bindings = tex
    ? [null, null, null, null, opts.bias ?? a, u, v, v4(v), c, null, null]
    : [a, v4(a), b, v4(b), opts.bias ?? a, u, v, v4(v), c, null, null];
  // main_tex never touches B's storage type (the fetch widens f16 texels): one pipeline for both.
  const kernel = b.dtype === 'f16' && !tex ? 'matmul_f16' : KERNEL;
  const entryPoint = tiled ? 'main_tiled' : tex ? 'main_tex' : 'main';
  const dispatches: DispatchSpec[] = [];
  for (const [oz, nz] of chunks(batch, maxWg)) {
    for (const [oy, ny] of chunks(gy, maxWg)) {
      for (const [ox, nx] of chunks(gx, maxWg)) {
        const params = new Params(24)
          .u32(M).u32(N).u32(K).u32(R)
          .u32(transA ? 1 : K).u32(transA ? M : 1)   // A(m, k) strides
          .u32(transB ? 1 : N).u32(transB ? K : 1)   // B(k, n)
          .u32(transV ? 1 : N).u32(transV ? R : 1)   // V(r, n)
          .u32(aBatch === 1 ? 0 : M * K).u32(bBatch === 1 ? 0 : K * N).u32(M * N)
          .f32(opts.alpha ?? 1).f32(lr ? lr.scale : 0)
          .u32((opts.bias ? 1 : 0) | (opts.accumulate ? 2 : 0))
          .u32(ox).u32(oy).u32(oz);
        dispatches.push({ kernel, entryPoint, constants, bindings, params, workgroups: [nx, ny, nz] });
      }
    }
  }
  const textures = tex ? [{ binding: 9, tensor: vec4View(a), label: `${op} a` }, { binding: 10, tensor: vec4View(b), label: `${op} b` }] : [];
  return { dispatches, textures };
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

/** Record a plan made by planMatmul. */
export function recordMatmul(rec: Recorder, plan: MatmulPlan): void {
  if (plan.textures.length === 0) {
    for (const d of plan.dispatches) rec.dispatch(d);
    return;
  }
  const tables = plan.textures.map((t) => [t.binding, rec.tempTexture(t.tensor, t.label)] as const);
  for (const d of plan.dispatches) {
    const bindings: DispatchSpec['bindings'][number][] = [...d.bindings];
    for (const [i, table] of tables) bindings[i] = table;
    rec.dispatch({ ...d, bindings });
  }
}

/**
 * C = alpha·(op(A)·op(B) + scale·U·op(V)) + bias; C += the same with `accumulate`. Writes (=)
 * C by default. See the file header for shapes. Records one dispatch (more only past 65535
 * workgroups per grid axis).
 */
export function matmul(rec: Recorder, c: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): void {
  recordMatmul(rec, planMatmul(rec.ctx, c, a, b, opts));
}
