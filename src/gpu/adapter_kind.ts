/**
 * What kind of adapter a summary describes — its own module (no kernels, no device code) so the
 * page side (the worker service's memory estimates) can tell without loading the GPU layer.
 */
import type { AdapterSummary } from './device.ts';

/** What kind of adapter this is: the software ones want different kernel tunings from real GPUs. */
export type AdapterKind = 'llvmpipe' | 'swiftshader' | 'software' | 'hardware';

export function adapterKind(a: AdapterSummary): AdapterKind {
  const text = `${a.description} ${a.vendor} ${a.device} ${a.architecture}`.toLowerCase();
  if (text.includes('llvmpipe') || text.includes('lavapipe')) return 'llvmpipe';
  if (text.includes('swiftshader')) return 'swiftshader';
  if (a.isFallbackAdapter || /warp|softpipe/.test(text)) return 'software';
  return 'hardware';
}
