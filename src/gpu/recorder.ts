/**
 * Dispatch recorder: a whole step's work in one command buffer.
 *
 * Op wrappers call `dispatch()` synchronously; pipelines compile in the background and `submit()`
 * waits for them, encodes every dispatch (consecutive dispatches share one compute pass; WebGPU
 * orders each dispatch's writes before the next dispatch's reads), uploads every dispatch's
 * uniform parameters in one write to a single arena buffer, and submits once. Only tensors passed
 * to `read()` come back to the host, copied at that point of the recording.
 *
 * Bindings and uniform fields are given by the names the kernel's WGSL declares and checked
 * against its reflected layout (src/gpu/kernel_layout.ts) when the dispatch is recorded: a name it
 * does not declare, a missing field or a binding the entry point uses but was not given is a
 * KernelBindingError naming the kernel and the name.
 *
 * Validation and out-of-memory errors of the submission become a GpuValidationError naming the
 * kernels it contained. Binding sizes and offsets (a view binds a range of its buffer) and
 * workgroup counts are checked against the device's limits before anything is recorded, so bad
 * input fails with a LimitError naming the kernel.
 */
import { GpuValidationError, LimitError, WebtinkerError } from '../errors.ts';
import type { GpuContext } from './device.ts';
import type { Bound, ParamValues } from './kernel_layout.ts';
import type { Constants } from './pipelines.ts';
import { type AnyHostArray, type DType, emptyTensor, hostArray, Tensor } from './tensor.ts';
import { type TexelCommand, TexelCopies, type TexelTable } from './texel_copies.ts';
import { SubmitTimestamps } from './timestamps.ts';

export { type TexelTable, texelTableWidth } from './texel_copies.ts';

export type BindingValue = Tensor | GPUBuffer | TextureBinding;

export interface DispatchSpec {
  kernel: string;
  entryPoint?: string;
  /** Values of the kernel's `override` constants. */
  constants?: Constants;
  /**
   * Storage buffers (or sampled textures, see `tempTexture`) by the names the kernel declares. Every
   * binding the entry point uses must be given; those it does not use may be left out (or null),
   * and are not bound if given (layout 'auto' drops them). A tensor view is bound from its byte
   * offset.
   */
  bindings: Readonly<Record<string, BindingValue | null | undefined>>;
  /** The kernel's uniform struct, by field name: every field but the padding (`_…`) ones. */
  params?: ParamValues;
  workgroups: readonly [number, number?, number?];
}

/** A 1-D launch of `threads` threads in workgroups of `wg`, split over y past the x limit. */
export function grid1d(ctx: GpuContext, threads: number, wg: number): { workgroups: [number, number, number]; rowThreads: number } {
  const groups = Math.max(1, Math.ceil(threads / wg));
  const maxX = ctx.limit('maxComputeWorkgroupsPerDimension');
  if (groups <= maxX) return { workgroups: [groups, 1, 1], rowThreads: groups * wg };
  const y = Math.ceil(groups / maxX);
  if (y > maxX) throw new LimitError('grid1d', `${threads} threads in workgroups of ${wg} need ${groups} workgroups, over ${maxX}² (maxComputeWorkgroupsPerDimension)`);
  const x = Math.ceil(groups / y);
  return { workgroups: [x, y, 1], rowThreads: x * wg };
}

/** A texture bound to a `texture_2d<f32>` of a kernel. */
export interface TextureBinding {
  readonly textureView: GPUTextureView;
}

export interface SubmitResult {
  /** GPU time of the submission in nanoseconds where timestamp queries are available. */
  gpuNs?: number;
  dispatches: number;
}

type Command =
  | { kind: 'dispatch'; spec: DispatchSpec; pipeline: Promise<GPUComputePipeline>; bound: readonly Bound[]; paramBinding: number; paramOffset: number; paramBytes: number }
  | { kind: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; bytes: number }
  | TexelCommand
  | { kind: 'read'; tensor: Tensor; resolve: (a: AnyHostArray) => void; reject: (e: unknown) => void };

export class Recorder {
  readonly ctx: GpuContext;
  readonly label: string;
  readonly timing: boolean;
  #commands: Command[] = [];
  #params: Uint8Array[] = [];
  #paramBytes = 0;
  #submitted = false;
  #temps: Tensor[] = [];
  /** Texture copies (texture reads, src/gpu/texel_copies.ts). */
  readonly #texels: TexelCopies;

  constructor(ctx: GpuContext, opts: { label?: string; timing?: boolean } = {}) {
    this.ctx = ctx;
    this.label = opts.label ?? 'step';
    this.timing = Boolean(opts.timing) && ctx.hasTimestamps;
    this.#texels = new TexelCopies(ctx, this.label, `recorder:${this.label}`, (c) => this.#commands.push(c));
  }

  get pending(): number {
    return this.#commands.length;
  }

  dispatch(spec: DispatchSpec): void {
    this.#assertOpen();
    const { kernel } = spec;
    const layout = this.ctx.pipelines.layout(kernel);
    const entryPoint = spec.entryPoint ?? 'main';
    const bound = layout.bind(kernel, entryPoint, spec.bindings);
    const maxBinding = this.ctx.limit('maxStorageBufferBindingSize');
    for (const { slot, value } of bound) {
      if (value instanceof Tensor) {
        value.assertLive();
        if (value.bindingBytes > maxBinding) {
          throw new LimitError(kernel, `binding ${slot.name} (${value}) is ${value.bindingBytes} bytes, over the device's maxStorageBufferBindingSize of ${maxBinding}`);
        }
        const align = value.byteOffset === 0 ? 1 : this.ctx.limit('minStorageBufferOffsetAlignment');
        if (value.byteOffset % align !== 0) {
          throw new LimitError(kernel, `binding ${slot.name} (${value}) starts at byte ${value.byteOffset}, not a multiple of the device's minStorageBufferOffsetAlignment of ${align}`);
        }
      }
    }
    const bytes = layout.pack(kernel, entryPoint, spec.params);
    const maxWg = this.ctx.limit('maxComputeWorkgroupsPerDimension');
    for (const w of spec.workgroups) {
      if (w !== undefined && (!Number.isInteger(w) || w < 0 || w > maxWg)) {
        throw new LimitError(kernel, `workgroup count ${w} outside [0, ${maxWg}] (workgroups [${spec.workgroups.join(', ')}])`);
      }
    }
    const pipeline = this.ctx.pipelines.get(kernel, spec.constants, spec.entryPoint);
    pipeline.catch(() => {}); // reported by submit()
    let paramOffset = 0;
    let paramBytes = 0;
    if (bytes) {
      const align = this.ctx.limit('minUniformBufferOffsetAlignment');
      paramOffset = Math.ceil(this.#paramBytes / align) * align;
      paramBytes = bytes.byteLength;
      this.#params.push(bytes);
      this.#paramBytes = paramOffset + paramBytes;
    }
    this.#commands.push({ kind: 'dispatch', spec, pipeline, bound, paramBinding: layout.uniform?.binding ?? -1, paramOffset, paramBytes });
  }

  /**
   * Scratch tensor for this recording only, released back to the pool once the work is
   * submitted. That is safe: WebGPU runs submissions in queue order, so a later submission that
   * reuses the buffer runs after this one. Contents start unspecified.
   */
  temp(shape: readonly number[], dtype: DType = 'f32', label = 'scratch'): Tensor {
    this.#assertOpen();
    const t = emptyTensor(this.ctx, shape, dtype, { owner: `recorder:${this.label}`, label: `${this.label}/${label}` });
    this.#temps.push(t);
    return t;
  }

  /**
   * The elements of `src` (f32 or other 32-bit types: a multiple of 4 of them; f16: as many as its
   * binding holds, a multiple of 4) as texels of a new 2-D texture for this recording only,
   * rgba32float (rgba16float for f16, whose values a texel fetch widens to f32 exactly): texel k
   * holds elements 4k .. 4k+3, at (k % width, k / width), copied at this point of the recording.
   * The width is `texelTableWidth(ctx)`. Once the work is submitted the texture goes to the
   * context's TextureCache for a later recording, and its bytes (charged to the recording's pool
   * owner meanwhile) are given back.
   * Why: on Mesa's llvmpipe a storage-buffer load runs a loop over the SIMD lanes with a bounds
   * check per component, while a texel fetch is a plain gather, a fraction of the cost per element;
   * so where the adapter wants texture reads (DeviceQuirks.textureReads) a kernel that reads a
   * large tensor several times reads it here.
   *
   * Reuse: a table given back with `releaseTexture` is the copy target of a later tempTexture of
   * this recording that fits it (same format, at least as many texel rows; the smallest such),
   * so a recording that copies many operands one after another (every weight of a training step,
   * the ranges of a vocabulary-sized head) holds only the textures in use at once, not all of
   * them until the submit. Safe by WebGPU's ordering: commands of a command buffer run as if one
   * after another, so the later copy into it follows every dispatch recorded before it.
   */
  tempTexture(src: Tensor, label = 'texels'): TexelTable {
    this.#assertOpen();
    src.assertLive();
    return this.#texels.temp(src, label);
  }

  /**
   * Gives back a table of this recording's tempTexture: no dispatch recorded after this call may
   * read it (a later tempTexture may copy other texels into it). Its memory stays charged until
   * the submit; what the call saves is a new texture for the next operand.
   */
  releaseTexture(table: TexelTable): void {
    this.#assertOpen();
    this.#texels.release(table);
  }

  /**
   * The elements of `src` as texels, like `tempTexture`, but for a tensor marked `keepTexels` (a
   * weight) the copy is kept by the context (src/gpu/kept_texels.ts): made at the first recording
   * that reads it and again only after something wrote the tensor, checked when the work is
   * submitted. Such a table is `kept` and is never given back (`releaseTexture` ignores it).
   * Other tensors, weights of under half a texture row (whole rows would be mostly padding, and
   * their copies cost little) and weights past the store's limit get a tempTexture.
   */
  texels(src: Tensor, label = 'texels'): TexelTable {
    this.#assertOpen();
    src.assertLive();
    return this.#texels.texels(src, label);
  }

  /** Copy a tensor's elements into another of at least the same byte length. */
  copy(src: Tensor, dst: Tensor): void {
    this.#assertOpen();
    src.assertLive();
    dst.assertLive();
    if (dst.byteLength < src.byteLength) {
      throw new LimitError('copy', `${dst} (${dst.byteLength} bytes) is smaller than ${src} (${src.byteLength} bytes)`);
    }
    this.#commands.push({ kind: 'copy', src: src.buffer, srcOffset: src.byteOffset, dst: dst.buffer, dstOffset: dst.byteOffset, bytes: src.bindingBytes });
  }

  /** The tensor's contents at this point of the recording, once `submit()` has run. */
  read(tensor: Tensor): Promise<AnyHostArray> {
    this.#assertOpen();
    tensor.assertLive();
    const p = new Promise<AnyHostArray>((resolve, reject) => this.#commands.push({ kind: 'read', tensor, resolve, reject }));
    // submit() reports the same error; a caller that awaits only submit() must not leave this
    // rejection unhandled (Deno ends the process on one). Awaiting the read still throws.
    p.catch(() => {});
    return p;
  }

  /** Encode everything into one command buffer, submit it, and deliver the reads. */
  async submit(): Promise<SubmitResult> {
    this.#assertOpen();
    this.#submitted = true;
    const { device } = this.ctx;
    const commands = this.#commands;
    const reads = commands.filter((c): c is Extract<Command, { kind: 'read' }> => c.kind === 'read');
    const kernels = [...new Set(commands.flatMap((c) => (c.kind === 'dispatch' ? [c.spec.kernel] : [])))];
    const fail = (e: unknown): never => {
      for (const r of reads) r.reject(e);
      throw e;
    };

    let pipelines: (GPUComputePipeline | null)[];
    try {
      pipelines = await Promise.all(commands.map((c) => (c.kind === 'dispatch' ? c.pipeline : null)));
    } catch (e) {
      this.#releaseTemps();
      return fail(e);
    }

    const owner = `recorder:${this.label}`;
    const uniform = this.#paramBytes > 0 ? this.ctx.uniformPool.acquire(this.#paramBytes, owner, `${this.label} params`) : null;
    if (uniform) {
      const arena = new Uint8Array(this.#paramBytes);
      let i = 0;
      for (const c of commands) if (c.kind === 'dispatch' && c.paramBytes > 0) arena.set(this.#params[i++], c.paramOffset);
      device.queue.writeBuffer(uniform.buffer, 0, arena);
    }
    const staging = reads.map((r) => this.ctx.readbackPool.acquire(r.tensor.bindingBytes, owner, `read ${r.tensor.label}`));
    const stamps = SubmitTimestamps.open(this.ctx, {
      label: this.label, owner, timing: this.timing, passCount: this.#countPasses(),
      dispatches: commands.flatMap((c) => (c.kind === 'dispatch' ? [c.spec] : [])),
    });
    const passPerDispatch = stamps?.passPerDispatch ?? false;

    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const enc = device.createCommandEncoder({ label: this.label });
    const kept = this.ctx.keptTexels;
    let pass: GPUComputePassEncoder | null = null;
    let passIndex = 0;
    let readIndex = 0;
    const endPass = () => {
      pass?.end();
      pass = null;
    };
    commands.forEach((c, ci) => {
      if (c.kind === 'dispatch') {
        if (passPerDispatch) endPass();
        if (!pass) {
          const timestampWrites = stamps?.passWrites(passIndex);
          const label = passPerDispatch ? `${this.label} ${c.spec.kernel}` : `${this.label} pass ${passIndex}`;
          pass = enc.beginComputePass({ label, ...(timestampWrites ? { timestampWrites } : {}) });
          passIndex++;
        }
        const pipeline = pipelines[ci]!;
        const entries: GPUBindGroupEntry[] = [];
        for (const { slot, value: b } of c.bound) {
          const resource = b instanceof Tensor ? { buffer: b.buffer, offset: b.byteOffset, size: b.bindingBytes } : 'textureView' in b ? b.textureView : { buffer: b };
          entries.push({ binding: slot.binding, resource });
        }
        if (c.paramBytes > 0) {
          entries.push({ binding: c.paramBinding, resource: { buffer: uniform!.buffer, offset: c.paramOffset, size: c.paramBytes } });
        }
        const group = device.createBindGroup({ label: c.spec.kernel, layout: pipeline.getBindGroupLayout(0), entries });
        const p = pass as GPUComputePassEncoder;
        p.setPipeline(pipeline);
        p.setBindGroup(0, group);
        const [x, y = 1, z = 1] = c.spec.workgroups;
        p.dispatchWorkgroups(x, y, z);
        for (const { slot, value: b } of c.bound) {
          if (!slot.writable) continue;
          if (b instanceof Tensor) kept.written(b.buffer);
          else if (!('textureView' in b)) kept.written(b);
        }
      } else if (c.kind === 'copy') {
        endPass();
        enc.copyBufferToBuffer(c.src, c.srcOffset, c.dst, c.dstOffset, c.bytes);
        kept.written(c.dst);
      } else if (c.kind === 'texels' || c.kind === 'kept') {
        this.#texels.encode(enc, c, endPass);
      } else {
        endPass();
        enc.copyBufferToBuffer(c.tensor.buffer, c.tensor.byteOffset, staging[readIndex++].buffer, 0, c.tensor.bindingBytes);
      }
    });
    endPass();
    stamps?.resolve(enc);
    device.queue.submit([enc.finish()]);
    this.#releaseTemps();
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();

    const cleanup = (readback: boolean) => {
      if (uniform) this.ctx.uniformPool.release(uniform.buffer);
      stamps?.release(readback);
    };
    if (validation || oom) {
      this.#texels.failed();
      await device.queue.onSubmittedWorkDone().catch(() => {});
      cleanup(true);
      for (const s of staging) this.ctx.readbackPool.release(s.buffer);
      const err = validation
        ? new GpuValidationError('validation', kernels, validation.message)
        : new GpuValidationError('out-of-memory', kernels, oom!.message);
      return fail(err);
    }

    const result: SubmitResult = { dispatches: commands.filter((c) => c.kind === 'dispatch').length };
    try {
      await Promise.all(reads.map(async (r, i) => {
        const s = staging[i].buffer;
        await s.mapAsync(GPUMapMode.READ, 0, r.tensor.bindingBytes);
        const copy = s.getMappedRange(0, r.tensor.bindingBytes).slice(0);
        s.unmap();
        this.ctx.readbackPool.release(s);
        r.resolve(hostArray(r.tensor.dtype, copy, r.tensor.size));
      }));
      if (stamps) {
        const gpuNs = await stamps.read();
        if (gpuNs !== undefined) result.gpuNs = gpuNs;
      } else if (reads.length === 0) {
        await device.queue.onSubmittedWorkDone();
      }
    } catch (e) {
      cleanup(false);
      return fail(e instanceof WebtinkerError ? e : new GpuValidationError('internal', kernels, String(e)));
    }
    cleanup(false);
    return result;
  }

  /** Scratch tensors back to the pool and scratch textures to the context's cache (safe after the submit, by queue order). */
  #releaseTemps(): void {
    for (const t of this.#temps.splice(0)) t.release();
    this.#texels.releaseAll();
  }

  #countPasses(): number {
    let n = 0;
    let open = false;
    for (const c of this.#commands) {
      if (c.kind === 'dispatch') {
        if (!open) n++;
        open = true;
      } else open = false;
    }
    return n;
  }

  #assertOpen(): void {
    if (this.#submitted) throw new WebtinkerError('recorder-submitted', `recorder "${this.label}" was already submitted; make a new one per step`);
  }
}

/** Read one tensor back to the host (one small submission). */
export async function readTensor(t: Tensor): Promise<AnyHostArray> {
  const rec = new Recorder(t.ctx, { label: `read ${t.label}` });
  const p = rec.read(t);
  await rec.submit();
  return p;
}
