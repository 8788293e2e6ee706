/**
 * What only the matmul and LoRA-linear cases need: f16 rounding and the tile configurations every
 * product is run with (upload, run and comparisons are in helpers.ts).
 */
import type { GpuContext } from '../../../src/gpu/device.ts';
import { f16BitsToF32, f32ToF16Bits } from '../../../src/model/f16.ts';
import { HARDWARE_MATMUL_CONFIG, type MatmulConfig, matmulConfigFor } from '../../../src/ops/matmul.ts';

/** f32 → f16 bits, and the f32 values those bits stand for. */
export function toF16(x: Float32Array): { bits: Uint16Array; values: Float32Array } {
  const bits = Uint16Array.from(x, (v) => f32ToF16Bits(v));
  return { bits, values: Float32Array.from(bits, (h) => f16BitsToF32(h)) };
}

/**
 * The adapter's default configuration, the other kind's default (the shared-memory kernel with the
 * real-GPU tiles on a software adapter), and an odd register tile, so every product is checked on
 * both entry points and on tiles that do not divide the shapes.
 */
export function configs(ctx: GpuContext): { name: string; cfg: MatmulConfig }[] {
  const def = matmulConfigFor(ctx);
  return [
    { name: 'default', cfg: def },
    def.kernel === 'register'
      ? { name: 'tiled', cfg: { ...HARDWARE_MATMUL_CONFIG } }
      : { name: 'register', cfg: { kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16 } },
    { name: 'register 12x4', cfg: { kernel: 'register', tm: 12, tn: 4, wgX: 4, wgY: 2, bk: 16 } },
  ];
}

/** A shared-memory tile that divides nothing (rows 2·4, columns 3·8, K slices of 8). */
export const ODD_TILED: MatmulConfig = { kernel: 'tiled', tm: 2, tn: 3, wgX: 8, wgY: 4, bk: 8 };
