/**
 * Real GPUs: the general path. No workarounds (no loop limit, operands read from their storage
 * buffers), and the textbook configurations: shared-memory tiles, wide workgroups, 256-wide
 * reductions — many threads hide memory latency, and barriers are cheap.
 */
import type { DeviceQuirks, KernelTunings, MatmulTiles } from './quirks.ts';

export const HARDWARE_QUIRKS: DeviceQuirks = Object.freeze({ kind: 'hardware', loopBudget: Number.POSITIVE_INFINITY, textureReads: false });

/** 16×16 workgroups with 4×4 outputs each over 16-deep shared-memory slices. */
export const GPU_MATMUL_TILES: Readonly<MatmulTiles> = Object.freeze({ kernel: 'tiled', tm: 4, tn: 4, wgX: 16, wgY: 16, bk: 16 });

export const GPU_TUNINGS: KernelTunings = Object.freeze({
  tuning: 'gpu',
  matmulTiles: () => ({ ...GPU_MATMUL_TILES }),
  policyLossLayout: () => 'groups',
  policyLossGroupThreads: 256,
  reductionWidth: 256,
  rowWorkgroupSize: () => 128,
  embeddingIndexWidth: 256,
  sampleWorkgroupSize: () => 256,
  attentionTiled: true,
});
