/**
 * What a kernel declares, read from its WGSL: the names and @binding indices of its storage
 * buffers and textures, its uniform struct's fields and byte offsets, and which of them each entry
 * point uses. Dispatches give bindings and uniform fields by name (Recorder.dispatch); a name the
 * kernel does not declare, a missing field, or a binding the entry point uses but was not given
 * fails with a KernelBindingError before anything is recorded, where positional packing would
 * have corrupted results silently after a struct or binding was reordered.
 *
 * The reflection is webgpu-utils' (`makeShaderDataDefinitions`, wgsl_reflect's parser and its
 * entry-point call graph; `makeStructuredView` for the field views), parsed once per source text
 * and process. Two parser gaps of wgsl_reflect 1.x are worked around here rather than in our
 * kernels: a `>>` closing two template lists (`ptr<function, array<array<f32, N>, N>>`) is read
 * as a shift, so such pairs get a space before parsing (the parsed text only; what compiles is the
 * kernel's own source); and `write` is a keyword to it (policy_loss.wgsl's parameter was renamed).
 */
import { float16Placeholder } from './wgsl_reflect_env.ts';
import { makeShaderDataDefinitions, makeStructuredView, type ShaderDataDefinitions } from 'webgpu-utils';
import { KernelBindingError } from '../errors.ts';
import type { BindingValue } from './recorder.ts';

if (float16Placeholder) delete (globalThis as Record<string, unknown>).Float16Array;

/** A storage buffer or texture the kernel declares at @group(0). */
export interface BindingSlot {
  readonly name: string;
  readonly binding: number;
  readonly kind: 'buffer' | 'texture';
  /** Declared `var<storage, read_write>`: a dispatch may write it (src/gpu/kept_texels.ts). */
  readonly writable: boolean;
}

/** What one entry point uses: 'auto' layouts hold exactly these bindings. */
export interface EntryLayout {
  /** The storage buffers and textures it uses, by binding index. */
  readonly slots: readonly BindingSlot[];
  /** Whether it reads the uniform struct. */
  readonly usesUniform: boolean;
}

/** A binding of a dispatch, resolved against its kernel's layout. */
export interface Bound {
  readonly slot: BindingSlot;
  readonly value: BindingValue;
}

export type ParamValue = number | ArrayLike<number>;
/** Values of a kernel's uniform struct by field name; fields named `_…` (padding) stay 0. */
export type ParamValues = Readonly<Record<string, ParamValue>>;

type View = Float32Array | Uint32Array | Int32Array;
const U32 = 0, I32 = 1, F32 = 2;
interface Field {
  readonly name: string;
  readonly offset: number;
  readonly type: typeof U32 | typeof I32 | typeof F32;
  readonly view: View;
}

/**
 * A kernel's uniform struct: packs field values by name into its bytes. One staging buffer per
 * kernel; `pack` writes every field (all are required) and copies the bytes out.
 */
export class UniformLayout {
  readonly name: string;
  readonly binding: number;
  /** Bytes bound: the struct's size rounded up to 16 (at least 16). */
  readonly byteLength: number;
  /** Fields a dispatch must give (the padding fields `_…` are left out). */
  readonly fields: readonly string[];
  /**
   * The settable fields in struct order (padding fields keep their zeros): scalars are written
   * through one DataView at their offsets (cheaper per dispatch than a typed-array view per
   * field), vectors and arrays through their views.
   */
  readonly #fields: readonly Field[];
  readonly #buffer: ArrayBuffer;
  readonly #data: DataView;

  constructor(kernel: string, name: string, defs: ShaderDataDefinitions) {
    const def = defs.uniforms[name];
    this.name = name;
    this.binding = def.binding;
    this.byteLength = Math.max(16, Math.ceil(def.size / 16) * 16);
    let view;
    try {
      view = makeStructuredView(def, new ArrayBuffer(this.byteLength));
    } catch (cause) {
      throw new KernelBindingError(kernel, name, `its uniform struct cannot be packed: ${(cause as Error).message ?? cause}`);
    }
    this.#buffer = view.arrayBuffer;
    this.#data = new DataView(this.#buffer);
    const fields: Field[] = [];
    for (const [field, v] of Object.entries(view.views)) {
      if (!(v instanceof Float32Array || v instanceof Uint32Array || v instanceof Int32Array)) {
        throw new KernelBindingError(kernel, `${name}.${field}`, 'only u32, i32 and f32 scalars, vectors and arrays of them are supported in uniform structs');
      }
      const type = v instanceof Float32Array ? F32 : v instanceof Int32Array ? I32 : U32;
      if (!field.startsWith('_')) fields.push({ name: field, offset: v.byteOffset, type, view: v });
    }
    this.#fields = fields;
    this.fields = fields.map((f) => f.name);
  }

  /**
   * The struct's bytes for `values`: every field of `fields`, none other. A scalar field takes a
   * number (converted as a typed array stores it: u32 wraps modulo 2³², f32 rounds); a vector or
   * array field an array-like of at most its length, the rest zero.
   */
  pack(kernel: string, values: ParamValues): Uint8Array {
    // Every field given and as many keys as fields means no unknown key (checked by name only
    // when the counts differ or a field is missing, so a dispatch pays one pass over its fields).
    const keys = Object.keys(values).length;
    const data = this.#data;
    for (const { name: field, offset, type, view } of this.#fields) {
      const v = values[field];
      if (typeof v === 'number') {
        if (view.length !== 1) throw new KernelBindingError(kernel, field, `is ${view.length} values, got one number`);
        // As a typed array stores it: u32 modulo 2³² (>>> 0), i32 (| 0), f32 rounded.
        if (type === U32) data.setUint32(offset, v >>> 0, true);
        else if (type === F32) data.setFloat32(offset, v, true);
        else data.setInt32(offset, v | 0, true);
      } else if (v === undefined) {
        this.#refuseUnknown(kernel, values); // a misspelt name is the likelier mistake
        throw new KernelBindingError(kernel, field, 'missing: the uniform struct declares it and no value was given');
      } else {
        if (v.length > view.length) throw new KernelBindingError(kernel, field, `holds ${view.length} values, got ${v.length}`);
        view.set(v);
        view.fill(0, v.length);
      }
    }
    if (keys !== this.#fields.length) this.#refuseUnknown(kernel, values);
    return new Uint8Array(this.#buffer.slice(0));
  }

  #refuseUnknown(kernel: string, values: ParamValues): void {
    for (const key in values) {
      if (!this.fields.includes(key)) throw new KernelBindingError(kernel, key, `no such field in its uniform struct; fields: ${this.fields.join(', ')}`);
    }
  }
}

/** A kernel's bindings and uniform struct, parsed from its source. */
export class KernelLayout {
  readonly slots: ReadonlyMap<string, BindingSlot>;
  readonly uniform: UniformLayout | null;
  readonly #entries: ReadonlyMap<string, EntryLayout>;

  constructor(kernel: string, source: string) {
    const defs = reflect(kernel, source);
    const nonZeroGroup = [...Object.entries(defs.storages), ...Object.entries(defs.textures), ...Object.entries(defs.uniforms)].find(([, d]) => d.group !== 0);
    if (nonZeroGroup) throw new KernelBindingError(kernel, nonZeroGroup[0], `declared in @group(${nonZeroGroup[1].group}); kernels use @group(0) only`);
    const uniforms = Object.keys(defs.uniforms);
    if (uniforms.length > 1) throw new KernelBindingError(kernel, uniforms[1], `a second uniform struct (${uniforms.join(', ')}); kernels have one`);
    this.uniform = uniforms.length === 1 ? new UniformLayout(kernel, uniforms[0], defs) : null;
    // Access modes come from the entry points' layout entries ('storage' is read_write).
    const writable = new Set<string>();
    for (const ep of Object.values(defs.entryPoints)) {
      for (const r of ep.resources) if (r.entry.buffer?.type === 'storage') writable.add(r.name);
    }
    const slots = new Map<string, BindingSlot>();
    for (const [name, d] of Object.entries(defs.storages)) slots.set(name, { name, binding: d.binding, kind: 'buffer', writable: writable.has(name) });
    for (const [name, d] of Object.entries(defs.textures)) slots.set(name, { name, binding: d.binding, kind: 'texture', writable: false });
    this.slots = slots;
    const entries = new Map<string, EntryLayout>();
    for (const [name, ep] of Object.entries(defs.entryPoints)) {
      const used = ep.resources.map((r) => slots.get(r.name)).filter((s): s is BindingSlot => s !== undefined);
      used.sort((a, b) => a.binding - b.binding);
      entries.set(name, { slots: used, usesUniform: this.uniform !== null && ep.resources.some((r) => r.name === this.uniform!.name) });
    }
    this.#entries = entries;
  }

  /**
   * The bindings an entry point uses, from a dispatch's bindings by name: a name the kernel does
   * not declare, a used binding not given (or null) and a buffer for a texture (or the reverse)
   * are KernelBindingErrors. Declared bindings the entry point does not use are dropped: layout
   * 'auto' has no slot for them.
   */
  bind(kernel: string, entryPoint: string, bindings: Readonly<Record<string, BindingValue | null | undefined>>): Bound[] {
    const entry = this.entry(kernel, entryPoint);
    for (const name in bindings) {
      if (!this.slots.has(name)) throw new KernelBindingError(kernel, name, `no such binding; bindings: ${[...this.slots.keys()].join(', ')}`);
    }
    return entry.slots.map((slot) => {
      const value = bindings[slot.name];
      if (value === undefined || value === null) {
        throw new KernelBindingError(kernel, slot.name, `missing: entry point "${entryPoint}" uses this binding and none was given`);
      }
      const isTexture = 'textureView' in value;
      if (isTexture !== (slot.kind === 'texture')) {
        throw new KernelBindingError(kernel, slot.name, `is a ${slot.kind === 'texture' ? 'texture' : 'storage buffer'}, got a ${isTexture ? 'texture' : 'buffer'}`);
      }
      return { slot, value };
    });
  }

  /**
   * The uniform struct's bytes for a dispatch of `entryPoint`, or null where it reads no struct
   * (then it is not bound: 'auto' layouts drop it). Params for a kernel without a struct, or none
   * where the entry point reads it, are KernelBindingErrors; `UniformLayout.pack` checks the fields.
   */
  pack(kernel: string, entryPoint: string, values: ParamValues | undefined): Uint8Array | null {
    const entry = this.entry(kernel, entryPoint);
    if (values && !this.uniform) throw new KernelBindingError(kernel, 'params', 'the kernel declares no uniform struct');
    if (!values) {
      if (entry.usesUniform) throw new KernelBindingError(kernel, this.uniform!.name, `missing: entry point "${entryPoint}" reads the uniform struct and no params were given`);
      return null;
    }
    const bytes = this.uniform!.pack(kernel, values); // checked even where the entry point ignores them
    return entry.usesUniform ? bytes : null;
  }

  /** What an entry point uses; a KernelBindingError if the kernel has no such entry point. */
  entry(kernel: string, entryPoint: string): EntryLayout {
    const e = this.#entries.get(entryPoint);
    if (!e) throw new KernelBindingError(kernel, entryPoint, `no such entry point; entry points: ${[...this.#entries.keys()].join(', ')}`);
    return e;
  }
}

const parsed = new Map<string, ShaderDataDefinitions>();

/** webgpu-utils' definitions of a source, parsed once per process (sources are the cache key). */
function reflect(kernel: string, source: string): ShaderDataDefinitions {
  let defs = parsed.get(source);
  if (defs) return defs;
  // wgsl_reflect reads a `>>` that closes two template lists as a shift (see the header).
  const text = source.replace(/([\w>])>>(?=\s*[,);{>]|\s+=)/g, '$1> >');
  // It also reads GPUShaderStage to describe entry points, a WebGPU global missing in Node.
  const g = globalThis as Record<string, unknown>;
  const stageMissing = typeof g.GPUShaderStage === 'undefined';
  if (stageMissing) g.GPUShaderStage = { VERTEX: 1, FRAGMENT: 2, COMPUTE: 4 };
  try {
    defs = makeShaderDataDefinitions(text);
  } catch (cause) {
    throw new KernelBindingError(kernel, '<source>', `its WGSL could not be reflected: ${(cause as Error).message ?? cause}`);
  } finally {
    if (stageMissing) delete g.GPUShaderStage;
  }
  parsed.set(source, defs);
  return defs;
}
