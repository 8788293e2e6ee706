/**
 * What sets one family of adapters apart, behind two small interfaces, one file per family
 * (hardware.ts: real GPUs, the general path; software.ts: llvmpipe, SwiftShader and other CPU
 * rasterizers) — as tinygrad and jax-js keep each backend's device code on its own:
 *
 *   DeviceQuirks   correctness and availability workarounds of the adapter (a loop limit, texture
 *                  reads). Picked by the adapter's kind, always: `GpuContext.quirks`.
 *   KernelTunings  which kernel configurations run fastest (tile shapes, workgroup widths, layouts).
 *                  Picked by `GpuContext.tuning`, which tests force to 'gpu' on the software
 *                  adapters so the configurations real GPUs run are exercised there too:
 *                  `GpuContext.tunings`.
 *
 * Ops read `ctx.quirks.X` and `ctx.tunings.X`, never the adapter's kind or strings. Plain data, no
 * device code: the page side (memory estimates from an adapter's summary) reads it as well.
 */
import type { AdapterKind } from '../adapter_kind.ts';

/** Iterations kept spare under a loop budget: the wrappers' counts are estimates. */
export const LOOP_BUDGET_MARGIN = 1000;

/** The family of kernel configurations a context runs (AcquireOptions.tuning). */
export type KernelTuning = 'software' | 'gpu';

export interface DeviceQuirks {
  /** The adapter kind these describe. */
  readonly kind: AdapterKind;
  /**
   * Loop back-edges one invocation may take, all its loops together, before the adapter ends them
   * silently (wrong results, no error); Infinity where there is no such limit. Wrappers whose
   * kernels could go past it refuse the shape (expectLoopBudget) or split the work (matmul's K).
   */
  readonly loopBudget: number;
  /**
   * Whether the kernels that can (matmul's register kernel, the policy loss's per-row layout) read
   * their large operands through texture copies (Recorder.tempTexture, Recorder.texels), and a
   * model's weights keep their copies between recordings: bitwise the buffer reads' results, where
   * texel fetches cost a fraction of storage-buffer loads.
   */
  readonly textureReads: boolean;
}

/** matmul's tiles (src/ops/matmul.ts, MatmulConfig; the kernels are kernels/matmul.wgsl's). */
export interface MatmulTiles {
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
}

export interface KernelTunings {
  readonly tuning: KernelTuning;
  /** matmul's tiles, for a product of M×N outputs where known. */
  matmulTiles(dims?: { readonly M: number; readonly N: number }): MatmulTiles;
  /**
   * The policy loss's main pass for a vocabulary of `v`: 'rows' (an invocation per row, no
   * barriers; `rowIterations` loop iterations each) or 'groups' (a workgroup per row).
   * `textureReads`: the rows would be read through a texture copy, which takes any V.
   */
  policyLossLayout(v: number, rowIterations: number, textureReads: boolean): 'rows' | 'groups';
  /** Threads per row of the policy loss's 'groups' layout. */
  readonly policyLossGroupThreads: number;
  /** Threads per workgroup of the tree reductions (softmax, reduce). */
  readonly reductionWidth: number;
  /** Threads per workgroup of the row kernels (norms) for rows of `c` channels (a power of two). */
  rowWorkgroupSize(c: number): number;
  /** Threads of the one workgroup that builds embedding backward's index of ids. */
  readonly embeddingIndexWidth: number;
  /** Threads per row of the sampler for a vocabulary of `v` (a power of two). */
  sampleWorkgroupSize(v: number): number;
  /** Whether attention stages its blocks in workgroup memory (where one fits). */
  readonly attentionTiled: boolean;
}
