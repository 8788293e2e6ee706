// Kernel layouts reflected from WGSL (src/gpu/kernel_layout.ts): uniform structs packed by field
// name against byte offsets written out by hand from WGSL's layout rules, bindings by name, and
// the typed errors a mismatch raises at dispatch, before anything is recorded.
import { describe, expect, it } from 'vitest';
import { KernelLayout } from '../../src/gpu/kernel_layout.ts';
import { bundledKernel, bundledKernelNames } from '../../src/gpu/pipelines.ts';
import { Recorder } from '../../src/gpu/recorder.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { KernelBindingError } from '../../src/errors.ts';
import { fakeDevice } from './fake_gpu.ts';

// Mixed scalars, a padding field, a vec3 (align 16), a scalar packed into the vec3's tail, an
// array of vec4 (stride 16) and a scalar after it; uniform structs round up to 16.
const MIXED = `
struct Params {
  a: u32,
  b: f32,
  c: i32,
  _pad0: u32,
  v: vec3f,
  d: u32,
  arr: array<vec4<f32>, 2>,
  e: f32,
}
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var tex: texture_2d<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(1) fn main() { dst[0] = src[0] * p.b + p.e + p.arr[1].w + p.v.z + f32(p.a + p.d) + f32(p.c); }
@compute @workgroup_size(1) fn from_tex() { dst[0] = textureLoad(tex, vec2u(0u), 0).x * p.b; }
@compute @workgroup_size(1) fn clear() { dst[0] = 0.0; }
`;

/** The bytes of MIXED's Params, written field by field at WGSL's offsets. */
function mixedOracle(): Uint8Array {
  const dv = new DataView(new ArrayBuffer(80)); // 68 bytes of fields, rounded up to 16
  dv.setUint32(0, 0xfffffffe, true); // a = -2 as a u32 wraps
  dv.setFloat32(4, 0.1, true); // b rounds to f32
  dv.setInt32(8, -7, true); // c
  // _pad0 at 12 stays 0
  dv.setFloat32(16, 1.5, true); // v.x (vec3f: align 16, size 12)
  dv.setFloat32(20, -2.25, true);
  dv.setFloat32(24, 3, true);
  dv.setUint32(28, 9, true); // d in the vec3's tail
  for (let i = 0; i < 8; i++) dv.setFloat32(32 + 4 * i, i < 5 ? i + 0.5 : 0, true); // arr: 5 given, rest 0
  dv.setFloat32(64, 1e30, true); // e
  return new Uint8Array(dv.buffer);
}

const mixedValues = { a: -2, b: 0.1, c: -7, v: [1.5, -2.25, 3], d: 9, arr: [0.5, 1.5, 2.5, 3.5, 4.5], e: 1e30 };

describe('uniform packing by field name', () => {
  it('packs mixed u32 / i32 / f32 / vec3 / array fields at the WGSL offsets, padding left 0', () => {
    const l = new KernelLayout('mixed', MIXED);
    expect(l.uniform!.fields).toEqual(['a', 'b', 'c', 'v', 'd', 'arr', 'e']);
    expect(l.uniform!.byteLength).toBe(80);
    expect([...l.uniform!.pack('mixed', mixedValues)]).toEqual([...mixedOracle()]);
    // A second pack with a shorter array leaves no stale values behind.
    const again = l.uniform!.pack('mixed', { ...mixedValues, arr: [0.5] });
    expect(new DataView(again.buffer).getFloat32(36, true)).toBe(0);
  });

  it('packs rope.wgsl and matmul.wgsl as the old ordered chains did', () => {
    const rope = new KernelLayout('rope', bundledKernel('rope')!);
    const inv = new Float32Array([1, 0.5, 0.25]);
    const bytes = rope.uniform!.pack('rope', { n_pairs: 12, row_threads: 256, H: 2, half: 3, sign: -1, inv_freq: inv });
    const dv = new DataView(bytes.buffer);
    expect(bytes.byteLength).toBe(32 + 128 * 4);
    expect([0, 4, 8, 12].map((o) => dv.getUint32(o, true))).toEqual([12, 256, 2, 3]);
    expect(dv.getFloat32(16, true)).toBe(-1);
    expect([20, 24, 28].map((o) => dv.getUint32(o, true))).toEqual([0, 0, 0]);
    expect([0, 1, 2, 3].map((i) => dv.getFloat32(32 + 4 * i, true))).toEqual([1, 0.5, 0.25, 0]);

    const mm = new KernelLayout('matmul', bundledKernel('matmul')!);
    const order = ['M', 'N', 'K', 'R', 'a_sm', 'a_sk', 'b_sk', 'b_sn', 'v_sr', 'v_sn', 'a_bstride', 'b_bstride', 'c_bstride', 'alpha',
      'lora_scale', 'flags', 'wg_off_x', 'wg_off_y', 'wg_off_z', 'a_off', 'b_off', 'c_off', 'c_ld', 'bias_off'];
    expect(mm.uniform!.fields).toEqual(order);
    const values = Object.fromEntries(order.map((f, i) => [f, f === 'alpha' || f === 'lora_scale' ? i + 0.25 : i + 1]));
    const mb = new DataView(mm.uniform!.pack('matmul', values).buffer);
    expect(mb.byteLength).toBe(96);
    order.forEach((f, i) => expect(f === 'alpha' || f === 'lora_scale' ? mb.getFloat32(4 * i, true) : mb.getUint32(4 * i, true), f).toBe(values[f]));
  });

  it('refuses a misspelt field, a missing one, a padding field and an over-long array, naming kernel and field', () => {
    const u = new KernelLayout('mixed', MIXED).uniform!;
    const fails = (values: Record<string, number | number[]>, field: string, why: RegExp) => {
      let err: unknown;
      try {
        u.pack('mixed', values);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(KernelBindingError);
      expect((err as KernelBindingError).kernel).toBe('mixed');
      expect((err as KernelBindingError).field).toBe(field);
      expect((err as Error).message).toMatch(why);
    };
    fails({ ...mixedValues, bb: 1 }, 'bb', /kernel "mixed": bb: no such field in its uniform struct; fields: a, b, c, v, d, arr, e/);
    const { d: _d, ...noD } = mixedValues;
    fails(noD, 'd', /kernel "mixed": d: missing/);
    fails({ ...mixedValues, _pad0: 1 }, '_pad0', /no such field/);
    fails({ ...mixedValues, arr: new Array(9).fill(1) }, 'arr', /holds 8 values, got 9/);
    fails({ ...mixedValues, v: 1 }, 'v', /is 3 values, got one number/);
  });
});

describe('bindings by name', () => {
  const K = new KernelLayout('mixed', MIXED);
  const limits = { maxComputeWorkgroupsPerDimension: 65535, maxStorageBufferBindingSize: 1 << 20, minUniformBufferOffsetAlignment: 256 };
  const ctx = {
    device: fakeDevice(limits), hasTimestamps: false, limit: (n: string) => (limits as Record<string, number>)[n],
    pipelines: { get: () => new Promise(() => {}), layout: () => K },
  } as unknown as GpuContext;
  const t = (label: string) => new Tensor(ctx, {} as GPUBuffer, [64], 'f32', 'o', label);
  const [src, dst] = [t('src'), t('dst')];
  const texture = { textureView: {} as GPUTextureView };
  const params = mixedValues;

  const error = (f: () => void): KernelBindingError => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(KernelBindingError);
      return e as KernelBindingError;
    }
    throw new Error('no error');
  };

  it('knows which bindings each entry point uses, and which are writable', () => {
    expect(K.entry('mixed', 'main').slots.map((s) => s.name)).toEqual(['src', 'dst']);
    expect(K.entry('mixed', 'from_tex').slots.map((s) => s.name)).toEqual(['dst', 'tex']);
    expect(K.entry('mixed', 'clear')).toEqual({ slots: [K.slots.get('dst')], usesUniform: false });
    expect([...K.slots.values()].filter((s) => s.writable).map((s) => s.name)).toEqual(['dst']);
  });

  it('records a dispatch given the used bindings only; unused ones may be absent', () => {
    const rec = new Recorder(ctx);
    rec.dispatch({ kernel: 'mixed', bindings: { src, dst }, params, workgroups: [1] });
    rec.dispatch({ kernel: 'mixed', entryPoint: 'from_tex', bindings: { dst, tex: texture }, params, workgroups: [1] });
    rec.dispatch({ kernel: 'mixed', entryPoint: 'clear', bindings: { dst }, workgroups: [1] });
    // A declared binding the entry point does not use may be given; it is not bound.
    rec.dispatch({ kernel: 'mixed', entryPoint: 'clear', bindings: { src, dst }, workgroups: [1] });
    expect(rec.pending).toBe(4);
  });

  it('refuses a wrong binding name, a missing used binding, a wrong kind, a missing struct and a wrong entry point', () => {
    const rec = new Recorder(ctx);
    let e = error(() => rec.dispatch({ kernel: 'mixed', bindings: { src, dts: dst }, params, workgroups: [1] }));
    expect([e.kernel, e.field]).toEqual(['mixed', 'dts']);
    expect(e.message).toMatch(/kernel "mixed": dts: no such binding; bindings: src, dst, tex/);
    e = error(() => rec.dispatch({ kernel: 'mixed', bindings: { src }, params, workgroups: [1] }));
    expect(e.field).toBe('dst');
    expect(e.message).toMatch(/dst: missing: entry point "main" uses this binding/);
    e = error(() => rec.dispatch({ kernel: 'mixed', bindings: { src, dst: null }, params, workgroups: [1] }));
    expect(e.field).toBe('dst');
    e = error(() => rec.dispatch({ kernel: 'mixed', entryPoint: 'from_tex', bindings: { dst, tex: src }, params, workgroups: [1] }));
    expect(e.message).toMatch(/tex: is a texture, got a buffer/);
    e = error(() => rec.dispatch({ kernel: 'mixed', bindings: { src, dst }, workgroups: [1] }));
    expect(e.message).toMatch(/p: missing: entry point "main" reads the uniform struct/);
    e = error(() => rec.dispatch({ kernel: 'mixed', bindings: { src, dst }, params: { ...params, E: 1 }, workgroups: [1] }));
    expect(e.field).toBe('E');
    e = error(() => rec.dispatch({ kernel: 'mixed', entryPoint: 'mian', bindings: { src, dst }, params, workgroups: [1] }));
    expect(e.message).toMatch(/mian: no such entry point; entry points: main, from_tex, clear/);
    expect(rec.pending).toBe(0);
  });
});

describe('every bundled kernel', () => {
  it('reflects, with one uniform struct, and its writable bindings are its read_write declarations', () => {
    for (const name of bundledKernelNames()) {
      const src = bundledKernel(name)!;
      const l = new KernelLayout(name, src);
      expect(l.uniform, name).not.toBeNull();
      // Oracle: the names declared `var<storage, read_write>`, read by a regex (comments dropped).
      const code = src.replace(/\/\/[^\n]*/g, '');
      const declared = [...code.matchAll(/var\s*<\s*storage\s*,\s*read_write\s*>\s*(\w+)/g)].map((m) => m[1]).sort();
      const writable = [...l.slots.values()].filter((s) => s.writable).map((s) => s.name).sort();
      expect(writable, name).toEqual(declared);
    }
    const mm = new KernelLayout('matmul', bundledKernel('matmul')!);
    expect([...mm.slots.values()].filter((s) => s.writable).map((s) => s.name)).toEqual(['C']);
    expect(mm.entry('matmul', 'main_tex').slots.map((s) => s.name)).toEqual(['bias', 'U', 'V', 'V4', 'C', 'A_tex', 'B_tex']);
  });
});
