/**
 * Globals webgpu-utils needs when its module is evaluated, supplied where the host lacks them;
 * imported by kernel_layout.ts before webgpu-utils (ES modules evaluate imports in order).
 *
 * webgpu-utils builds its table of WGSL types at load time with `Float16Array` as the view of
 * the f16 vectors. Node 20 (our unit tests) and browsers before Chrome 135 have none, and the
 * import would throw. Where it is missing, a placeholder stands in while webgpu-utils loads and is
 * removed again by kernel_layout.ts, so feature tests of the host still see no Float16Array. The
 * placeholder throws if constructed: our uniform structs have no f16 fields, and one that had
 * would fail loudly (kernel_layout.ts turns it into a KernelBindingError) instead of packing f16
 * values as integers.
 */
const g = globalThis as Record<string, unknown>;

/** Whether a placeholder Float16Array was installed (and must be removed after the import). */
export const float16Placeholder = typeof g.Float16Array === 'undefined';
if (float16Placeholder) {
  g.Float16Array = class Float16ArrayUnavailable extends Uint16Array {
    constructor() {
      super(0);
      throw new TypeError('Float16Array is not available on this host (an f16 uniform field cannot be packed)');
    }
  };
}
