/**
 * The contract every implementation under test fulfils (ours, tfjs, jax-js): prepare a case once
 * (upload inputs, build and compile what can be built ahead), then run it many times.
 */
import type { BenchCase, Inputs, Outputs } from './cases.ts';

export type ImplName = 'ours' | 'tfjs' | 'jax';

export interface Prepared {
  /**
   * `iterations` iterations (default 1) issued back to back, resolved only when the GPU has
   * finished them all — one completion wait however many (nothing is read back).
   */
  run(iterations?: number): Promise<void>;
  /** One iteration, its outputs read back (named as in OUTPUT_NAMES). */
  outputs(): Promise<Outputs>;
  /** Peak device bytes during one iteration (inputs included), or null where not measurable. */
  peakBytes(): Promise<number | null>;
  /** GPU time of one iteration from timestamp queries, in ms, where available. */
  gpuMs?(): Promise<number | null>;
  /** Free everything prepare() allocated. */
  dispose(): void;
}

export interface Impl {
  readonly name: ImplName;
  /** Acquire the device / select the backend. Throws when the implementation cannot run here. */
  init(): Promise<void>;
  /** Why this implementation has no code for a case (e.g. "op not implemented yet"), else null. */
  missing(c: BenchCase): string | null;
  prepare(c: BenchCase, inputs: Inputs): Promise<Prepared>;
}

/**
 * Collects a device's uncaptured WebGPU errors. The peers report some failures (a buffer over the
 * binding limit, an invalid bind group) only this way and then return garbage; `check()` turns
 * them into an exception so the iteration fails instead of being timed.
 */
export function watchErrors(device: GPUDevice, who: string): { check(): void } {
  const errors: string[] = [];
  device.addEventListener('uncapturederror', (ev) => errors.push((ev as GPUUncapturedErrorEvent).error.message));
  return {
    check() {
      if (errors.length === 0) return;
      const first = errors[0].split('\n')[0];
      const n = errors.length;
      errors.length = 0;
      throw new Error(`${who} reported ${n} WebGPU error(s), the first: ${first}`);
    },
  };
}
