/**
 * CPU rasterizers: Mesa's llvmpipe (Deno here), SwiftShader (Chromium here), and other software
 * adapters. Their workarounds and the kernel configurations that run fastest on them.
 *
 * Tunings: every workgroup barrier is a coroutine switch and every load instruction a loop over
 * the SIMD lanes costing tens of cycles whatever its width, while arithmetic is nearly free — so
 * big per-invocation register tiles, one-SIMD-row workgroups, narrow reductions and no shared
 * memory win, the opposite of real GPUs (hardware.ts).
 *
 * Workarounds (llvmpipe only; SwiftShader and the others need none we know of):
 *   - gallivm's loop limiter (LP_MAX_TGSI_LOOP_ITERATIONS) silently ends every loop of an
 *     invocation once it has taken 65535 back-edges in total — all loops together, not per loop
 *     (measured here). Wrappers refuse shapes past it (expectLoopBudget); matmul sums over K
 *     ranges that fit it.
 *   - a storage-buffer load runs a loop over the SIMD lanes with a bounds check per component,
 *     while a texel fetch is a plain gather, several times cheaper per element (measured): the
 *     register matmul and the per-row policy loss read their operands through texture copies.
 */
import type { AdapterKind } from '../adapter_kind.ts';
import { type DeviceQuirks, type KernelTunings, LOOP_BUDGET_MARGIN } from './quirks.ts';

/** llvmpipe's back-edges per invocation (see the header). */
export const LLVMPIPE_LOOP_LIMIT = 65535;

export const LLVMPIPE_QUIRKS: DeviceQuirks = Object.freeze({ kind: 'llvmpipe', loopBudget: LLVMPIPE_LOOP_LIMIT, textureReads: true });

/** SwiftShader and other software adapters: none of llvmpipe's workarounds (not measured to help there). */
export function softwareQuirks(kind: Exclude<AdapterKind, 'llvmpipe' | 'hardware'>): DeviceQuirks {
  return Object.freeze({ kind, loopBudget: Number.POSITIVE_INFINITY, textureReads: false });
}

export const SOFTWARE_TUNINGS: KernelTunings = Object.freeze({
  tuning: 'software',
  // Register tiles in one-SIMD-row workgroups: loads per multiply-add decide. 16×16 tiles were
  // fastest on llvmpipe for large products but compile for seconds per variant at first use; 16×8
  // below 256×256 outputs.
  matmulTiles: (dims?: { readonly M: number; readonly N: number }) => {
    const big = dims !== undefined && dims.M >= 256 && dims.N >= 256;
    return { kernel: 'register' as const, tm: 16, tn: big ? 16 : 8, wgX: 8, wgY: 1, bk: 16 };
  },
  // An invocation per row, four logits a step, no barriers: vec4 loads need V % 4 == 0 (the other
  // V not measured here), texel reads take any V. Only where a row's loops fit llvmpipe's loop
  // limit, on every software adapter alike (V up to ~129k; larger vocabularies take 'groups').
  policyLossLayout: (v: number, rowIterations: number, textureReads: boolean) =>
    rowIterations <= LLVMPIPE_LOOP_LIMIT - LOOP_BUDGET_MARGIN && (textureReads || v % 4 === 0) ? 'rows' : 'groups',
  policyLossGroupThreads: 8,
  reductionWidth: 16,
  // A row gets few lanes unless it is long.
  rowWorkgroupSize: (c: number) => (c <= 1024 ? 16 : 256),
  // A smaller chunk of the index costs fewer compares.
  embeddingIndexWidth: 64,
  // Short rows get fewer threads, but never so few that a pass over the row is over ~200 elements
  // per thread: a bisection makes up to ~110 passes, and llvmpipe's loop limit counts them all.
  sampleWorkgroupSize: (v: number) => {
    let wg = 16;
    while (wg < 256 && v / wg > 200) wg *= 2;
    return wg;
  },
  attentionTiled: false,
});
