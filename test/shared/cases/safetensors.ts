/**
 * safetensors cases shared by the Node, Deno and Chromium suites. Each suite passes `open`, which
 * puts the bytes where that host reads them from (memory, a file by path, a Blob/File) under the
 * given file name and opens them with openSafetensors.
 */
import { assert } from 'chai';
import { SafetensorsError } from '../../../src/model/errors.ts';
import { f32ToF16Bits } from '../../../src/model/f16.ts';
import type { SafetensorsFile } from '../../../src/model/safetensors.ts';
import { writeSafetensors } from '../../../src/model/safetensors_write.ts';

export type OpenBytes = (bytes: Uint8Array, fileName: string) => Promise<SafetensorsFile>;

export interface PlainCase {
  name: string;
  fn: () => Promise<void>;
}

/** A file from a header (object or raw text) and data bytes, without our writer. */
export function buildFile(header: unknown, data: Uint8Array = new Uint8Array(0), declaredLength?: number): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(out.buffer).setUint32(0, declaredLength ?? json.byteLength, true);
  out.set(json, 8);
  out.set(data, 8 + json.byteLength);
  return out;
}

async function expectError(p: Promise<unknown>, kind: string, file: string, tensor?: string): Promise<SafetensorsError> {
  try {
    await p;
  } catch (e) {
    assert.instanceOf(e, SafetensorsError, String(e));
    const err = e as SafetensorsError;
    assert.strictEqual(err.kind, kind, err.message);
    assert.strictEqual(err.file, file);
    assert.include(err.message, file);
    if (tensor !== undefined) {
      assert.strictEqual(err.tensor, tensor, err.message);
      assert.include(err.message, tensor);
    }
    return err;
  }
  throw new Error(`expected SafetensorsError(${kind})`);
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

export function safetensorsCases(open: OpenBytes): PlainCase[] {
  const a = Float32Array.from({ length: 12 }, (_, i) => (i - 5) * 0.375);
  const halfVals = Float32Array.of(1, -2.5, 65504, 1e-7, 0.1, -0);
  const bits = Uint16Array.of(0x3c00, 0xc000, 0x7bff, 0x0001);
  const written = () =>
    writeSafetensors([
      { name: 'model.layers.0.w', shape: [3, 4], dtype: 'F32', data: a },
      { name: 'half_from_f32', shape: [6], dtype: 'F16', data: halfVals },
      { name: 'half_bits', shape: [2, 2], dtype: 'F16', data: bits },
      { name: 'empty', shape: [0, 5], dtype: 'F32', data: new Float32Array(0) },
    ], { metadata: { format: 'pt', note: 'héllo' } });

  return [
    {
      name: 'round trip: F32 exact, F16 from values and from bits, metadata, shapes, dtypes',
      fn: async () => {
        const f = await open(written(), 'model.safetensors');
        try {
          assert.deepEqual(f.names().sort(), ['empty', 'half_bits', 'half_from_f32', 'model.layers.0.w']);
          assert.deepEqual({ ...f.metadata }, { format: 'pt', note: 'héllo' });
          assert.deepEqual(f.info('model.layers.0.w').shape, [3, 4]);
          assert.strictEqual(f.info('half_bits').dtype, 'F16');
          assert.deepEqual([...(await f.getF32('model.layers.0.w'))], [...a]);
          assert.deepEqual([...(await f.getF16Bits('half_from_f32'))], [...halfVals].map(f32ToF16Bits));
          const back = await f.getF32('half_from_f32');
          assert.deepEqual([...back.slice(0, 3)], [1, -2.5, 65504]);
          assert.approximately(back[3], 1e-7, 6e-8 * 0.5);
          assert.approximately(back[4], 0.1, 1e-4);
          assert.isTrue(Object.is(back[5], -0));
          assert.deepEqual([...(await f.getF16Bits('half_bits'))], [...bits]);
          assert.deepEqual([...(await f.getF32('half_bits'))], [1, -2, 65504, 2 ** -24]);
          assert.strictEqual((await f.getF32('empty')).length, 0);
          // Reads return fresh arrays: writing to one does not change the next read.
          const w = await f.getF32('model.layers.0.w');
          w[0] = 42;
          assert.strictEqual((await f.getF32('model.layers.0.w'))[0], a[0]);
        } finally {
          await f.close();
        }
      },
    },
    {
      name: 'BF16 and F64 convert to f32; integer dtypes open but refuse getF32',
      fn: async () => {
        const bf = Uint16Array.of(0x3f80, 0xc040, 0x7f80, 0x0000, 0x3e80); // 1, -3, inf, 0, 0.25
        const f64 = Float64Array.of(Math.PI, -1e-3);
        const i64 = new BigInt64Array([5n, -7n]);
        const data = new Uint8Array(10 + 16 + 16);
        data.set(bytesOf(bf), 0);
        data.set(bytesOf(f64), 10);
        data.set(bytesOf(i64), 26);
        const file = buildFile({
          b: { dtype: 'BF16', shape: [5], data_offsets: [0, 10] },
          d: { dtype: 'F64', shape: [2, 1], data_offsets: [10, 26] },
          n: { dtype: 'I64', shape: [2], data_offsets: [26, 42] },
        }, data);
        const f = await open(file, 'mixed.safetensors');
        assert.deepEqual([...(await f.getF32('b'))], [1, -3, Infinity, 0, 0.25]);
        assert.deepEqual([...(await f.getF32('d'))], [Math.fround(Math.PI), Math.fround(-1e-3)]);
        assert.deepEqual([...(await f.bytes('n'))], [...bytesOf(i64)]);
        await expectError(f.getF32('n'), 'dtype', 'mixed.safetensors', 'n');
        await expectError(f.getF16Bits('b'), 'dtype', 'mixed.safetensors', 'b');
        await expectError(f.getF32('nope'), 'missing', 'mixed.safetensors', 'nope');
        await f.close();
      },
    },
    {
      name: 'the writer is deterministic, 8-byte aligned and space-padded',
      fn: async () => {
        const x = written();
        const tensors = [
          { name: 'half_bits', shape: [2, 2], dtype: 'F16' as const, data: bits },
          { name: 'empty', shape: [0, 5], dtype: 'F32' as const, data: new Float32Array(0) },
          { name: 'half_from_f32', shape: [6], dtype: 'F16' as const, data: halfVals },
          { name: 'model.layers.0.w', shape: [3, 4], dtype: 'F32' as const, data: a },
        ];
        assert.deepEqual([...writeSafetensors(tensors, { metadata: { note: 'héllo', format: 'pt' } })], [...x]);
        const n = new DataView(x.buffer).getUint32(0, true);
        assert.strictEqual((8 + n) % 8, 0);
        const header = new TextDecoder().decode(x.subarray(8, 8 + n));
        assert.match(header, /^\{"__metadata__":\{"format":"pt","note":"héllo"\},"empty":/);
        assert.match(header, /\} *$/);
        const f = await open(x, 'det.safetensors');
        assert.strictEqual(f.dataOffset, 8 + n);
        for (const name of f.names()) assert.strictEqual(f.info(name).begin % (f.info(name).dtype === 'F32' ? 4 : 2), 0);
        await f.close();
      },
    },
    {
      name: 'truncated file: typed error naming the file and the tensor that runs past the end',
      fn: async () => {
        const x = written();
        await expectError(open(x.subarray(0, x.byteLength - 3), 'cut.safetensors'), 'offsets', 'cut.safetensors', 'half_from_f32');
        await expectError(open(x.subarray(0, 5), 'tiny.safetensors'), 'truncated', 'tiny.safetensors');
      },
    },
    {
      name: 'header longer than the file, broken JSON, non-UTF-8: typed errors',
      fn: async () => {
        await expectError(open(buildFile({}, new Uint8Array(0), 1000), 'long.safetensors'), 'truncated', 'long.safetensors');
        await expectError(open(buildFile('{"a": {', new Uint8Array(0)), 'json.safetensors'), 'header', 'json.safetensors');
        const bad = buildFile('{"x":1}');
        bad[10] = 0xff;
        await expectError(open(bad, 'utf8.safetensors'), 'header', 'utf8.safetensors');
        await expectError(open(buildFile('[]'), 'array.safetensors'), 'header', 'array.safetensors');
      },
    },
    {
      name: '__proto__, constructor and prototype keys are refused at any depth',
      fn: async () => {
        const d = new Uint8Array(4);
        await expectError(open(buildFile('{"__proto__": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', d), 'p.safetensors'), 'forbidden-key', 'p.safetensors');
        await expectError(open(buildFile('{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "constructor": 1}}', d), 'c.safetensors'), 'forbidden-key', 'c.safetensors');
        await expectError(open(buildFile('{"__metadata__": {"prototype": "x"}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', d), 'm.safetensors'), 'forbidden-key', 'm.safetensors');
        assert.strictEqual(({} as Record<string, unknown>).dtype, undefined);
      },
    },
    {
      name: 'overlapping, gapped and out-of-range offsets, unknown dtype, shape/size mismatch: typed errors naming the tensor',
      fn: async () => {
        const d8 = new Uint8Array(8);
        const e = (w: unknown, v: unknown) => buildFile({ w, v }, d8);
        await expectError(open(e({ dtype: 'F32', shape: [2], data_offsets: [0, 8] }, { dtype: 'F32', shape: [1], data_offsets: [4, 8] }), 'o.safetensors'), 'offsets', 'o.safetensors', 'v');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, d8), 'g.safetensors'), 'offsets', 'g.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, d8), 'tail.safetensors'), 'offsets', 'tail.safetensors');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, d8), 'r.safetensors'), 'offsets', 'r.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'F17', shape: [2], data_offsets: [0, 8] } }, d8), 'dt.safetensors'), 'dtype', 'dt.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'toString', shape: [2], data_offsets: [0, 8] } }, d8), 'dt2.safetensors'), 'dtype', 'dt2.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, d8), 's.safetensors'), 'shape', 's.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [-2], data_offsets: [0, 8] } }, d8), 'neg.safetensors'), 'shape', 'neg.safetensors', 'w');
        await expectError(open(buildFile({ w: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, d8), 'rev.safetensors'), 'offsets', 'rev.safetensors', 'w');
      },
    },
  ];
}
