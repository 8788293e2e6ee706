/**
 * Device acquisition — in a window, a dedicated Worker, or under Deno (main thread or Worker).
 *
 * We ask the adapter for every limit at its maximum (the defaults are far below what training
 * needs, e.g. 128 MiB bindings) and for the optional features we can use (`shader-f16`,
 * `timestamp-query`). The returned GpuContext owns the per-device buffer pool and pipeline cache,
 * and turns device loss and uncaptured errors into events.
 */
import type { KernelProfiler } from './profiler.ts';
import { ConfigError, WebGpuUnavailableError } from '../errors.ts';
import { BufferPool, BufferUsage } from './pool.ts';
import { KeptTexelStore } from './kept_texels.ts';
import { TextureCache } from './texture_cache.ts';
import { type PipelineCache, pipelineCacheFor } from './pipelines.ts';
import { type AdapterKind, adapterKind } from './adapter_kind.ts';
import { type DeviceQuirks, defaultTuning, type KernelTuning, type KernelTunings, quirksFor, tuningsFor } from './quirks/mod.ts';

export type GpuHost = 'window' | 'worker' | 'deno' | 'deno-worker' | 'node' | 'unknown';

/** Plain-data summary of the adapter (structured-clone safe, JSON safe). */
export interface AdapterSummary {
  host: GpuHost;
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
  features: string[];
  limits: Record<string, number>;
}

export interface DeviceLostEvent {
  reason: string; // 'destroyed' | 'unknown'
  message: string;
}

export interface AcquireOptions {
  /** The `GPU` object to use; defaults to `navigator.gpu`. */
  gpu?: GPU;
  powerPreference?: GPUPowerPreference;
  /** Label of the device; every GPU object of ours carries a label. */
  label?: string;
  /** Do not request `shader-f16` even where offered (forces the f32 paths). */
  disableF16?: boolean;
  /**
   * Report at most this many bytes as maxStorageBufferBindingSize (a multiple of 4, ≥ 256), so
   * tests run the paths that bind large tensors a range at a time on tiny models. The device is
   * still requested with the adapter's own limits; only what `GpuContext.limit` tells the engine
   * (and so what the Recorder lets a dispatch bind) is lowered.
   */
  maxStorageBufferBindingSize?: number;
  /**
   * Which kernel configurations to run: 'software' (big register tiles, few barriers, narrow
   * reductions: what llvmpipe and SwiftShader want) or 'gpu' (shared-memory tiles, 256-wide
   * reductions: what real GPUs want). Default: by the adapter. Tests force 'gpu' on the software
   * adapters so the code users' GPUs run is exercised here too. Device workarounds that are
   * about correctness or availability on an adapter (llvmpipe's loop limit, its texture reads:
   * `GpuContext.quirks`) follow the adapter's `kind`, not this setting.
   */
  tuning?: KernelTuning;
}

export type { KernelTuning } from './quirks/mod.ts';

/** Optional features we request when the adapter offers them. */
const WANTED_FEATURES: readonly GPUFeatureName[] = ['shader-f16', 'timestamp-query'];

/** Limit names defined by the WebGPU spec; used when the limits object does not enumerate. */
const LIMIT_NAMES = [
  'maxTextureDimension1D', 'maxTextureDimension2D', 'maxTextureDimension3D', 'maxTextureArrayLayers',
  'maxBindGroups', 'maxBindGroupsPlusVertexBuffers', 'maxBindingsPerBindGroup',
  'maxDynamicUniformBuffersPerPipelineLayout', 'maxDynamicStorageBuffersPerPipelineLayout',
  'maxSampledTexturesPerShaderStage', 'maxSamplersPerShaderStage', 'maxStorageBuffersPerShaderStage',
  'maxStorageTexturesPerShaderStage', 'maxUniformBuffersPerShaderStage', 'maxUniformBufferBindingSize',
  'maxStorageBufferBindingSize', 'minUniformBufferOffsetAlignment', 'minStorageBufferOffsetAlignment',
  'maxVertexBuffers', 'maxBufferSize', 'maxVertexAttributes', 'maxVertexBufferArrayStride',
  'maxInterStageShaderVariables', 'maxColorAttachments', 'maxColorAttachmentBytesPerSample',
  'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ', 'maxComputeWorkgroupsPerDimension',
] as const;

/** Where this code runs. */
export function detectHost(): GpuHost {
  const g = globalThis as Record<string, unknown>;
  const isWorker = typeof g.WorkerGlobalScope === 'function' && globalThis instanceof (g.WorkerGlobalScope as typeof Object);
  if (typeof g.Deno === 'object') return isWorker ? 'deno-worker' : 'deno';
  if (isWorker) return 'worker';
  if (typeof g.window === 'object') return 'window';
  if (typeof g.process === 'object') return 'node';
  return 'unknown';
}

/** What a person should install to get WebGPU on this host. */
export function installHint(host: GpuHost = detectHost()): string {
  switch (host) {
    case 'deno':
    case 'deno-worker':
      return 'under Deno, install a Vulkan driver (Debian: apt-get install mesa-vulkan-drivers) and set DENO_WEBGPU_BACKEND=vulkan, or use a machine with a GPU';
    case 'window':
    case 'worker':
      return 'use a browser with WebGPU (Chromium 113+); without a GPU start Chromium with --enable-unsafe-webgpu --enable-unsafe-swiftshader --use-webgpu-adapter=swiftshader';
    case 'node':
      return 'Node has no WebGPU: run the GPU code under Deno (npx deno) or in a browser';
    default:
      return 'run under Deno or in a WebGPU-capable browser';
  }
}

function readLimits(limits: GPUSupportedLimits): Record<string, number> {
  const out: Record<string, number> = {};
  const rec = limits as unknown as Record<string, unknown>;
  for (const k in limits) if (typeof rec[k] === 'number') out[k] = rec[k] as number;
  for (const k of LIMIT_NAMES) if (typeof rec[k] === 'number') out[k] = rec[k] as number;
  return out;
}

export { type AdapterKind, adapterKind } from './adapter_kind.ts';

export function summarizeAdapter(adapter: GPUAdapter, host: GpuHost = detectHost()): AdapterSummary {
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  return {
    host,
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter ??
      (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter),
    features: [...adapter.features].map(String).sort(),
    limits: readLimits(adapter.limits),
  };
}

/** One device with its pool, pipeline cache and event hooks. Create with `acquireGpu`. */
export class GpuContext {
  readonly device: GPUDevice;
  readonly adapter: AdapterSummary;
  readonly hasF16: boolean;
  /** llvmpipe / swiftshader / other software / hardware: what `quirks` are picked by. */
  readonly kind: AdapterKind;
  /** The adapter's workarounds (src/gpu/quirks/): by `kind`, whatever the tuning. */
  readonly quirks: DeviceQuirks;
  readonly hasTimestamps: boolean;
  /** Storage buffers: tensors. */
  readonly pool: BufferPool;
  /** Uniform arenas of recorders. */
  readonly uniformPool: BufferPool;
  /** Staging buffers for reads back to the host. */
  readonly readbackPool: BufferPool;
  /** Resolve targets of timestamp queries. */
  readonly queryPool: BufferPool;
  readonly pipelines: PipelineCache;
  /** Scratch textures of finished recordings, kept for the next (Recorder.tempTexture). */
  readonly textureCache = new TextureCache();
  /** Texture copies of weights kept between recordings (Recorder.texels, `Tensor.keepTexels`). */
  readonly keptTexels: KeptTexelStore = new KeptTexelStore(this);
  /** When set, every submission times each dispatch on its own (see KernelProfiler). */
  profiler: KernelProfiler | null = null;
  /** Resolves when the device is lost (including by `destroy()`). */
  readonly lost: Promise<DeviceLostEvent>;
  #lostListeners = new Set<(e: DeviceLostEvent) => void>();
  #errorListeners = new Set<(e: GPUError) => void>();
  #isLost = false;
  /** Limits reported lower than the device's (AcquireOptions.maxStorageBufferBindingSize). */
  readonly #caps: Readonly<Record<string, number>>;
  readonly #tuning: KernelTuning | undefined;
  /** The kernel configurations of `tuning` (src/gpu/quirks/). */
  readonly tunings: KernelTunings;

  constructor(device: GPUDevice, adapter: AdapterSummary, caps: Readonly<Record<string, number>> = {}, tuning?: KernelTuning) {
    this.device = device;
    this.#caps = { ...caps };
    this.#tuning = tuning;
    this.adapter = adapter;
    this.hasF16 = device.features.has('shader-f16');
    this.kind = adapterKind(adapter);
    this.quirks = quirksFor(this.kind);
    this.tunings = tuningsFor(this.tuning);
    this.hasTimestamps = device.features.has('timestamp-query');
    this.pool = new BufferPool(device);
    this.uniformPool = new BufferPool(device, BufferUsage.UNIFORM | BufferUsage.COPY_DST);
    this.readbackPool = new BufferPool(device, BufferUsage.MAP_READ | BufferUsage.COPY_DST);
    this.queryPool = new BufferPool(device, BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC);
    this.pipelines = pipelineCacheFor(device);
    this.lost = device.lost.then((info) => {
      this.#isLost = true;
      const e: DeviceLostEvent = { reason: String(info.reason ?? 'unknown'), message: info.message };
      for (const f of this.#lostListeners) f(e);
      return e;
    });
    device.addEventListener('uncapturederror', (ev) => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      for (const f of this.#errorListeners) f(err);
    });
  }

  /** True on a software adapter (no GPU): barriers and shared memory cost more than they save. */
  get isSoftware(): boolean {
    return this.kind !== 'hardware';
  }

  /**
   * The kernel configurations to pick: `AcquireOptions.tuning`, else 'software' on a software
   * adapter and 'gpu' on a real one. Tile shapes, workgroup widths and kernel variants come from
   * its `tunings`, never from `isSoftware`.
   */
  get tuning(): KernelTuning {
    return this.#tuning ?? defaultTuning(this.kind);
  }

  get isLost(): boolean {
    return this.#isLost;
  }

  /** Subscribe to device loss; returns an unsubscribe function. */
  onLost(f: (e: DeviceLostEvent) => void): () => void {
    this.#lostListeners.add(f);
    return () => this.#lostListeners.delete(f);
  }

  /** Subscribe to GPU errors no error scope caught; returns an unsubscribe function. */
  onUncapturedError(f: (e: GPUError) => void): () => void {
    this.#errorListeners.add(f);
    return () => this.#errorListeners.delete(f);
  }

  /** The device's limit `name`, or the lower cap the context was acquired with. */
  limit(name: string): number {
    const v = this.adapter.limits[name] ?? (this.device.limits as unknown as Record<string, number>)[name];
    const cap = this.#caps[name];
    return cap === undefined ? v : Math.min(v, cap);
  }

  /** Destroys the device (every buffer with it). The `lost` promise resolves with reason 'destroyed'. */
  destroy(): void {
    for (const p of [this.pool, this.uniformPool, this.readbackPool, this.queryPool]) p.trim();
    this.keptTexels.forgetAll();
    this.textureCache.trim();
    this.device.destroy();
  }
}

/**
 * Acquire an adapter and a device with the adapter's maximum limits.
 * Throws WebGpuUnavailableError (with an install hint) where WebGPU or an adapter is missing.
 */
export async function acquireGpu(opts: AcquireOptions = {}): Promise<GpuContext> {
  const host = detectHost();
  const cap = opts.maxStorageBufferBindingSize;
  if (cap !== undefined && !(Number.isSafeInteger(cap) && cap >= 256 && cap % 4 === 0)) {
    throw new ConfigError('maxStorageBufferBindingSize', `must be an integer ≥ 256 and a multiple of 4, got ${cap}`);
  }
  if (opts.tuning !== undefined && opts.tuning !== 'software' && opts.tuning !== 'gpu') {
    throw new ConfigError('tuning', `must be 'software' or 'gpu', got ${JSON.stringify(opts.tuning)}`);
  }
  const gpu = opts.gpu ?? (globalThis.navigator as Navigator | undefined)?.gpu;
  if (!gpu) throw new WebGpuUnavailableError(`WebGPU is not available here (host: ${host}, navigator.gpu is missing)`, installHint(host));
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter(opts.powerPreference ? { powerPreference: opts.powerPreference } : undefined);
  } catch (cause) {
    throw new WebGpuUnavailableError(`requestAdapter failed (host: ${host}): ${String(cause)}`, installHint(host), { cause });
  }
  if (!adapter) throw new WebGpuUnavailableError(`no WebGPU adapter found (host: ${host})`, installHint(host));
  const summary = summarizeAdapter(adapter, host);
  const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f) && !(opts.disableF16 && f === 'shader-f16'));
  const requiredLimits: Record<string, number> = {};
  for (const [k, v] of Object.entries(summary.limits)) requiredLimits[k] = v;
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ label: opts.label ?? 'webtinker', requiredFeatures, requiredLimits });
  } catch (cause) {
    throw new WebGpuUnavailableError(`requestDevice failed (host: ${host}, adapter: ${summary.description || summary.vendor}): ${String(cause)}`, installHint(host), { cause });
  }
  return new GpuContext(device, summary, cap === undefined ? {} : { maxStorageBufferBindingSize: cap }, opts.tuning);
}
