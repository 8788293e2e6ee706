/**
 * Per-device compute pipeline cache, keyed by kernel name, entry point and `override` constants.
 *
 * Sources come from kernels/*.wgsl (bundled into wgsl.gen.ts) plus any kernel a user defines at
 * run time. A compile error or pipeline error becomes a KernelCompileError that names the kernel
 * and carries the compiler's messages with line:column; failed builds are not cached.
 */
import { KernelCompileError } from '../errors.ts';
import { KernelLayout } from './kernel_layout.ts';
import { WGSL_SOURCES } from './wgsl.gen.ts';

export type Constants = Readonly<Record<string, number>>;

/** The WGSL source of a bundled kernel, or undefined. */
export function bundledKernel(name: string): string | undefined {
  return Object.hasOwn(WGSL_SOURCES, name) ? WGSL_SOURCES[name] : undefined;
}

/** Names of the bundled kernels (the files in kernels/). */
export function bundledKernelNames(): string[] {
  return Object.keys(WGSL_SOURCES).sort();
}

export function pipelineKey(kernel: string, entryPoint: string, constants: Constants = {}): string {
  const c = Object.keys(constants).sort().map((k) => `${k}=${constants[k]}`).join(',');
  return `${kernel}:${entryPoint}{${c}}`;
}

export class PipelineCache {
  readonly device: GPUDevice;
  #defined = new Map<string, string>();
  #modules = new Map<string, Promise<GPUShaderModule>>();
  #pipelines = new Map<string, Promise<GPUComputePipeline>>();
  #layouts = new Map<string, KernelLayout>();

  constructor(device: GPUDevice) {
    this.device = device;
  }

  /** Add (or replace) a kernel by source, e.g. a user's own WGSL. Clears its cached pipelines. */
  define(kernel: string, source: string): void {
    this.#defined.set(kernel, source);
    this.#modules.delete(kernel);
    this.#layouts.delete(kernel);
    for (const k of [...this.#pipelines.keys()]) if (k.startsWith(`${kernel}:`)) this.#pipelines.delete(k);
  }

  source(kernel: string): string {
    const s = this.#defined.get(kernel) ?? bundledKernel(kernel);
    if (s === undefined) {
      throw new KernelCompileError(kernel, [`no such kernel; bundled kernels: ${bundledKernelNames().join(', ')}`]);
    }
    return s;
  }

  /**
   * The kernel's bindings and uniform struct, reflected from its source once (src/gpu/kernel_layout.ts):
   * what a dispatch names is checked against it, and what it may write is tracked with it.
   */
  layout(kernel: string): KernelLayout {
    let l = this.#layouts.get(kernel);
    if (!l) {
      l = new KernelLayout(kernel, this.source(kernel));
      this.#layouts.set(kernel, l);
    }
    return l;
  }

  /** Number of pipelines built (or being built). */
  get size(): number {
    return this.#pipelines.size;
  }

  /** The compiled pipeline for a kernel and its constants (built once per device). */
  get(kernel: string, constants: Constants = {}, entryPoint = 'main'): Promise<GPUComputePipeline> {
    const key = pipelineKey(kernel, entryPoint, constants);
    let p = this.#pipelines.get(key);
    if (!p) {
      p = this.#build(kernel, key, constants, entryPoint);
      this.#pipelines.set(key, p);
      p.catch(() => this.#pipelines.delete(key));
    }
    return p;
  }

  #module(kernel: string): Promise<GPUShaderModule> {
    let m = this.#modules.get(kernel);
    if (!m) {
      m = this.#compile(kernel);
      this.#modules.set(kernel, m);
      m.catch(() => this.#modules.delete(kernel));
    }
    return m;
  }

  async #compile(kernel: string): Promise<GPUShaderModule> {
    const code = this.source(kernel);
    this.device.pushErrorScope('validation');
    const module = this.device.createShaderModule({ code, label: kernel });
    const info = await module.getCompilationInfo();
    const scopeError = await this.device.popErrorScope();
    const errors = info.messages.filter((m) => m.type === 'error')
      .map((m) => `${kernel}.wgsl:${m.lineNum}:${m.linePos}: ${m.message}`);
    if (errors.length > 0) throw new KernelCompileError(kernel, errors);
    if (scopeError) throw new KernelCompileError(kernel, [scopeError.message]);
    return module;
  }

  async #build(kernel: string, key: string, constants: Constants, entryPoint: string): Promise<GPUComputePipeline> {
    const module = await this.#module(kernel);
    this.device.pushErrorScope('validation');
    let pipeline: GPUComputePipeline;
    try {
      pipeline = await this.device.createComputePipelineAsync({
        label: key,
        layout: 'auto',
        compute: { module, entryPoint, constants: { ...constants } },
      });
    } catch (cause) {
      await this.device.popErrorScope();
      throw new KernelCompileError(kernel, [`pipeline ${key}: ${(cause as Error).message ?? String(cause)}`], { cause });
    }
    const err = await this.device.popErrorScope();
    if (err) throw new KernelCompileError(kernel, [`pipeline ${key}: ${err.message}`]);
    return pipeline;
  }
}

const caches = new WeakMap<GPUDevice, PipelineCache>();

/** The pipeline cache of a device (one per device, dropped with it). */
export function pipelineCacheFor(device: GPUDevice): PipelineCache {
  let c = caches.get(device);
  if (!c) {
    c = new PipelineCache(device);
    caches.set(device, c);
  }
  return c;
}
