/** Each adapter family's quirks and tunings (quirks.ts), picked by adapter kind and by tuning. */
import type { AdapterKind } from '../adapter_kind.ts';
import { GPU_TUNINGS, HARDWARE_QUIRKS } from './hardware.ts';
import type { DeviceQuirks, KernelTuning, KernelTunings } from './quirks.ts';
import { LLVMPIPE_QUIRKS, SOFTWARE_TUNINGS, softwareQuirks } from './software.ts';

export { type DeviceQuirks, type KernelTuning, type KernelTunings, LOOP_BUDGET_MARGIN, type MatmulTiles } from './quirks.ts';
export { GPU_MATMUL_TILES, GPU_TUNINGS, HARDWARE_QUIRKS } from './hardware.ts';
export { LLVMPIPE_LOOP_LIMIT, LLVMPIPE_QUIRKS, SOFTWARE_TUNINGS } from './software.ts';

const SWIFTSHADER_QUIRKS = softwareQuirks('swiftshader');
const OTHER_SOFTWARE_QUIRKS = softwareQuirks('software');

/** The workarounds an adapter of this kind needs. */
export function quirksFor(kind: AdapterKind): DeviceQuirks {
  switch (kind) {
    case 'llvmpipe':
      return LLVMPIPE_QUIRKS;
    case 'swiftshader':
      return SWIFTSHADER_QUIRKS;
    case 'software':
      return OTHER_SOFTWARE_QUIRKS;
    default:
      return HARDWARE_QUIRKS;
  }
}

/** The kernel configurations of a tuning. */
export function tuningsFor(tuning: KernelTuning): KernelTunings {
  return tuning === 'software' ? SOFTWARE_TUNINGS : GPU_TUNINGS;
}

/** The tuning an adapter of this kind runs unless told otherwise: 'gpu' on real GPUs only. */
export function defaultTuning(kind: AdapterKind): KernelTuning {
  return kind === 'hardware' ? 'gpu' : 'software';
}
