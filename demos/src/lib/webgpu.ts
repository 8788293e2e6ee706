/**
 * Is there WebGPU here? The pages and the widget ask before they start the GPU worker, so a
 * browser without it gets one plain sentence instead of a stack trace: either the API is missing
 * (`navigator.gpu` undefined: an older browser, or WebGPU switched off) or it is there but offers
 * no adapter (blocklisted driver, no GPU, a headless browser without a software fallback).
 */
import { type AdapterSummary, summarizeAdapter } from '../../../src/gpu/device.ts';

export type WebGpuStatus =
  /** `adapter`: its limits and features, for what-fits decisions made before the GPU worker starts. */
  | { readonly ok: true; readonly description: string; readonly software: boolean; readonly adapter: AdapterSummary }
  | { readonly ok: false; readonly reason: 'no-api' | 'no-adapter'; readonly message: string };

export const NO_API_MESSAGE =
  'WebGPU is not available in this browser (navigator.gpu is missing), so this demo cannot train here. ' +
  'Try a recent Chrome, Edge or Safari, or Firefox with WebGPU enabled.';
export const NO_ADAPTER_MESSAGE =
  'This browser has WebGPU, but it offers no GPU adapter (the GPU may be blocked, disabled or missing), ' +
  'so this demo cannot train here.';

export async function checkWebGpu(): Promise<WebGpuStatus> {
  const gpu = (navigator as { gpu?: GPU }).gpu;
  if (!gpu) return { ok: false, reason: 'no-api', message: NO_API_MESSAGE };
  let adapter: GPUAdapter | null = null;
  try {
    adapter = await gpu.requestAdapter();
  } catch {
    adapter = null;
  }
  if (!adapter) return { ok: false, reason: 'no-adapter', message: NO_ADAPTER_MESSAGE };
  const info = adapter.info;
  const software = Boolean((info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter) || /swiftshader|llvmpipe/i.test(`${info.architecture} ${info.description}`);
  const description = [info.vendor, info.architecture, info.description].filter((s) => s).join(' · ') || 'unknown adapter';
  return { ok: true, description, software, adapter: summarizeAdapter(adapter) };
}
