/**
 * The typed protocol between the page (or Deno's main thread) and the GPU worker, in one place.
 * comlink carries it: the page calls `GpuWorkerApi` methods as async functions; ArrayBuffers in
 * results travel by transfer, not copy; events come back through a proxied callback.
 * Everything crossing the boundary is plain data (structured clone).
 */
import type { AdapterSummary } from '../gpu/device.ts';
import type { PoolStats } from '../gpu/pool.ts';

export interface WorkerInitOptions {
  label?: string;
  /** Force the f32 paths even where shader-f16 exists. */
  disableF16?: boolean;
}

/** Events the worker pushes to the page. */
export type WorkerEvent =
  | { type: 'device-lost'; reason: string; message: string }
  | { type: 'gpu-error'; message: string };

export interface SelfCheckResult {
  elements: number;
  mismatches: number;
  gpuNs?: number;
}

/** What the GPU worker exposes. Grows with the engine (models, adapters, train and sample quanta). */
export interface GpuWorkerApi {
  /** Acquire (or re-acquire after a loss) the device; returns the adapter it found. */
  init(opts?: WorkerInitOptions): Promise<AdapterSummary>;
  /** Subscribe to worker events (pass `Comlink.proxy(callback)`). */
  subscribe(callback: (e: WorkerEvent) => void): void;
  /** Byte accounting of the worker's tensor pool. */
  poolStats(): Promise<PoolStats>;
  /** Run the `add` kernel on `n` seeded elements against its CPU reference. */
  selfCheck(n: number, seed: number): Promise<SelfCheckResult>;
  /** Destroy the device, as a driver reset would (for fault-recovery tests and drills). */
  loseDevice(): Promise<void>;
  /** Throw an uncaught error inside the worker, as a bug would (for fault-recovery tests and drills). */
  crash(): void;
}
