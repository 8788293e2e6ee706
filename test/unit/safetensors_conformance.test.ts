// safetensors conformance with the reference implementation (the Rust crate): each header below
// was opened with the Python `safetensors` package 0.8.0 (42 headers) (scripts/goldens/safetensors_conformance.py,
// `safe_open`), and its verdict is the fourth column. We must reach the same verdict — the one
// deliberate departure, marked `departs`, is a tensor name given twice, which the reference
// silently resolves to the last entry and we refuse as "duplicate". Accepted files must list the
// same tensors and metadata (null metadata reads as empty); refusals are SafetensorsErrors whose
// message says why.
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from '../../src/model/errors.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { buildFile } from '../shared/cases/safetensors.ts';

type Ours = { keys: string[]; metadata: Record<string, string> } | { ours: RegExp; departs?: true };

// [label, header text, data bytes, the reference's verdict, what we give]
const TABLE: [string, string, number, 'accept' | 'refuse', Ours][] = [
  ["plain F32", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["shape 2.0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /shape entry 2\.0 is not a non-negative integer/ }],
  ["shape 2e0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /shape entry 2e0/ }],
  ["shape 2E0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2E0],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /shape entry 2E0/ }],
  ["shape -0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}}", 0, 'refuse', { ours: /shape entry -0 / }],
  ["shape -1", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, 'refuse', { ours: /shape entry -1 / }],
  ["offset 8.0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]}}", 8, 'refuse', { ours: /got \[0, 8\.0\]/ }],
  ["offset 8e0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8e0]}}", 8, 'refuse', { ours: /got \[0, 8e0\]/ }],
  ["offset -0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-0,8]}}", 8, 'refuse', { ours: /got \[-0, 8\]/ }],
  ["offset 0.0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.0,8]}}", 8, 'refuse', { ours: /got \[0\.0, 8\]/ }],
  ["BOM before header", "\ufeff{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /byte order mark/ }],
  ["leading space", " {\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["trailing spaces", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["duplicate __metadata__", "{\"__metadata__\":{\"x\":\"1\"},\"__metadata__\":{\"y\":\"2\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /duplicate field "__metadata__"/ }],
  ["duplicate tensor name", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { ours: /duplicate tensor name/, departs: true }],
  ["duplicate field in an entry", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /duplicate field "dtype"/ }],
  ["__metadata__ null", "{\"__metadata__\":null,\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["__metadata__ number value", "{\"__metadata__\":{\"x\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /__metadata__ value of "x" must be a string/ }],
  ["extra field in an entry", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["unknown dtype", "{\"a\":{\"dtype\":\"F12\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /unknown dtype "F12"/ }],
  ["C64 [1]", "{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["F8_E8M0 [3]", "{\"a\":{\"dtype\":\"F8_E8M0\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, 'accept', { keys: ["a"], metadata: {} }],
  ["F8_E4M3FNUZ [3]", "{\"a\":{\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, 'accept', { keys: ["a"], metadata: {} }],
  ["F8_E5M2FNUZ [3]", "{\"a\":{\"dtype\":\"F8_E5M2FNUZ\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, 'accept', { keys: ["a"], metadata: {} }],
  ["F4 [2]", "{\"a\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1, 'accept', { keys: ["a"], metadata: {} }],
  ["F4 [4, 2]", "{\"a\":{\"dtype\":\"F4\",\"shape\":[4,2],\"data_offsets\":[0,4]}}", 4, 'accept', { keys: ["a"], metadata: {} }],
  ["F4 [3]", "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, 'refuse', { ours: /3 elements of F4 \(4 bits\) do not end on a byte boundary/ }],
  ["F4 [3] one byte", "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1, 'refuse', { ours: /do not end on a byte boundary/ }],
  ["F6_E2M3 [4]", "{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[0,3]}}", 3, 'accept', { keys: ["a"], metadata: {} }],
  ["F6_E3M2 [4]", "{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[0,3]}}", 3, 'accept', { keys: ["a"], metadata: {} }],
  ["F6_E2M3 [2]", "{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, 'refuse', { ours: /2 elements of F6_E2M3 \(6 bits\) do not end on a byte boundary/ }],
  ["F6_E3M2 [4] four bytes", "{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, 'refuse', { ours: /is 3 bytes but data_offsets span 4/ }],
  ["lone surrogate escape", "{\"__metadata__\":{\"x\":\"\\ud800\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'refuse', { ours: /lone leading surrogate/ }],
  ["paired surrogate escape", "{\"__metadata__\":{\"x\":\"\\ud83d\\ude00\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {"x": "😀"} }],
  ["duplicate key inside __metadata__", "{\"__metadata__\":{\"x\":\"1\",\"x\":\"2\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 'accept', { keys: ["a"], metadata: {"x": "2"} }],
  ["missing data_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, 'refuse', { ours: /missing field "data_offsets"/ }],
  ["empty header", "{}", 0, 'accept', { keys: [], metadata: {} }],
  ["NUL padding after the JSON", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\u0000\u0000", 8, 'refuse', { ours: /trailing characters/ }],
  ["tab and newline padding", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\t\n", 8, 'accept', { keys: ["a"], metadata: {} }],
  ["nested too deep in metadata", `{"__metadata__":{"x":${'['.repeat(200)}${']'.repeat(200)}},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8, 'refuse', { ours: /nesting deeper than 128/ }],
  ["F4 [0]", "{\"a\":{\"dtype\":\"F4\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, 'accept', { keys: ["a"], metadata: {} }],
  ["F4 beside F32", "{\"q\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}", 5, 'accept', { keys: ["q", "w"], metadata: {} }],
];

describe('safetensors headers: the reference verdicts', () => {
  for (const [label, header, dataBytes, reference, want] of TABLE) {
    const ourVerdict = 'keys' in want ? 'accept' : 'refuse';
    it(`${label}: reference ${reference}s, we ${ourVerdict}${'departs' in want ? ' (deliberate)' : ''}`, async () => {
      if (!('departs' in want)) expect(ourVerdict).toBe(reference);
      const bytes = buildFile(header, new Uint8Array(dataBytes).map((_, i) => i));
      const opened = openSafetensors(bytes, { name: 'c.safetensors' });
      if ('keys' in want) {
        const f = await opened;
        expect(f.names().sort()).toEqual(want.keys);
        expect({ ...f.metadata }).toEqual(want.metadata);
      } else {
        const e = await opened.then(() => expect.fail('expected a refusal'), (err: unknown) => err);
        expect(e).toBeInstanceOf(SafetensorsError);
        expect((e as Error).message).toMatch(want.ours);
      }
    });
  }
});

describe('safetensors: dtypes we cannot convert open, and are refused only when read', () => {
  it('an F4 tensor beside an F32 one: the F32 reads; the F4 refuses getF32 naming it and its dtype; raw bytes are given', async () => {
    const data = new Uint8Array(9);
    data[0] = 0x21;
    new DataView(data.buffer).setFloat32(1, 1.5, true);
    new DataView(data.buffer).setFloat32(5, -2, true);
    const f = await openSafetensors(buildFile({
      'q.packed': { dtype: 'F4', shape: [2], data_offsets: [0, 1] },
      w: { dtype: 'F32', shape: [2], data_offsets: [1, 9] },
    }, data), { name: 'mx.safetensors' });
    expect([...(await f.getF32('w'))]).toEqual([1.5, -2]);
    expect([...(await f.bytes('q.packed'))]).toEqual([0x21]);
    const e = await f.getF32('q.packed').then(() => expect.fail('expected a refusal'), (err: unknown) => err);
    expect(e).toBeInstanceOf(SafetensorsError);
    expect((e as SafetensorsError).kind).toBe('dtype');
    expect((e as SafetensorsError).tensor).toBe('q.packed');
    expect((e as Error).message).toMatch(/mx\.safetensors: tensor "q\.packed": dtype F4 cannot be read as f32/);
  });

  it('every dtype the reference lists opens; sizes follow its bits (C64 8 bytes, F6 three bytes per four)', async () => {
    for (const [dtype, shape, bytes] of [['C64', [2], 16], ['F8_E8M0', [5], 5], ['F8_E4M3FNUZ', [1], 1], ['F8_E5M2FNUZ', [2, 2], 4], ['F6_E2M3', [8], 6], ['F6_E3M2', [4], 3], ['F4', [6], 3]] as const) {
      const f = await openSafetensors(buildFile({ t: { dtype, shape, data_offsets: [0, bytes] } }, new Uint8Array(bytes)), { name: `${dtype}.safetensors` });
      expect(f.info('t')).toMatchObject({ dtype, begin: 0, end: bytes });
      await expect(f.getF32('t')).rejects.toThrow(new RegExp(`tensor "t": dtype ${dtype} cannot be read as f32`));
    }
  });
});
