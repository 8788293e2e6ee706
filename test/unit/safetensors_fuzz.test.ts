// Fuzzing the safetensors parser with fast-check: random bytes, random mutations of valid files,
// random headers (structured and free-form JSON). The only outcomes allowed: a valid file (every
// tensor readable, the data section tiled exactly) or a SafetensorsError — nothing else, no hang.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from '../../src/model/errors.ts';
import { DTYPE_BITS, DTYPE_BYTES, FLOAT_DTYPES, openSafetensors, tensorByteSize } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { buildFile } from '../shared/cases/safetensors.ts';

const stats = { valid: 0, rejected: 0 };

/** Opens `bytes`; on success checks the result is usable and consistent. Throws on any other outcome. */
async function check(bytes: Uint8Array): Promise<void> {
  let f;
  try {
    f = await openSafetensors(bytes, { name: 'fuzz.safetensors' });
  } catch (e) {
    if (!(e instanceof SafetensorsError)) throw new Error(`not a SafetensorsError: ${String(e)}`, { cause: e });
    expect(e.file).toBe('fuzz.safetensors');
    stats.rejected++;
    return;
  }
  stats.valid++;
  let covered = 0;
  for (const name of f.names()) {
    const t = f.info(name);
    const raw = await f.bytes(name);
    const n = t.shape.reduce((a, b) => a * b, 1);
    expect(raw.byteLength).toBe(tensorByteSize(t.dtype, n));
    covered += raw.byteLength;
    if (FLOAT_DTYPES.has(t.dtype)) expect((await f.getF32(name)).length).toBe(n);
    else await expect(f.getF32(name)).rejects.toBeInstanceOf(SafetensorsError);
  }
  expect(covered).toBe(bytes.byteLength - f.dataOffset);
  expect(Object.getPrototypeOf(f.metadata)).toBe(null);
}

const valid = writeSafetensors([
  { name: 'a', shape: [2, 3], dtype: 'F32', data: Float32Array.of(1, 2, 3, 4, 5, 6) },
  { name: 'b', shape: [4], dtype: 'F16', data: Uint16Array.of(1, 2, 3, 4) },
  { name: 'c.weight', shape: [0], dtype: 'F32', data: new Float32Array(0) },
], { metadata: { format: 'pt' } });

const dtypeArb = fc.oneof(fc.constantFrom(...DTYPE_BITS.keys()), fc.constantFrom('F17', '', 'f32', '__proto__', 'toString'), fc.string({ maxLength: 6 }));
const dimArb = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constantFrom(-1, 1.5, 2 ** 53, 1e300), fc.constant('3' as unknown as number));
const nameArb = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype', '__metadata__', 'hasOwnProperty', 'toString'));
const entryArb = fc.record({
  dtype: dtypeArb,
  shape: fc.array(dimArb, { maxLength: 3 }),
  data_offsets: fc.oneof(fc.tuple(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 64 })), fc.array(fc.integer({ min: -2, max: 70 }), { maxLength: 3 })),
}, { requiredKeys: [] });

describe('safetensors parser fuzz', () => {
  it('random bytes', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 96 }), (b) => check(b)), { numRuns: 400, seed: 1 });
    // Random bytes with a plausible length prefix reach the JSON stage too.
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 80 }), fc.nat(90), (body, n) => {
      const b = new Uint8Array(8 + body.byteLength);
      new DataView(b.buffer).setUint32(0, n, true);
      b.set(body, 8);
      return check(b);
    }), { numRuns: 400, seed: 2 });
  });

  it('random mutations of a valid file', async () => {
    await check(valid);
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(valid.byteLength - 1), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat(valid.byteLength) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(valid.byteLength), bytes: fc.uint8Array({ minLength: 1, maxLength: 9 }) }),
    );
    await fc.assert(fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (ms) => {
      let b = valid.slice();
      for (const m of ms) {
        if (m.kind === 'flip') b[Math.min(m.at, b.byteLength - 1)] = m.value;
        else if (m.kind === 'cut') b = b.slice(0, Math.min(m.at, b.byteLength));
        else b = Uint8Array.from([...b.subarray(0, m.at), ...m.bytes, ...b.subarray(m.at)]);
        if (b.byteLength === 0) break;
      }
      await check(b);
    }), { numRuns: 600, seed: 3 });
  });

  it('random structured headers', async () => {
    const header = fc.dictionary(nameArb, fc.oneof({ weight: 5, arbitrary: entryArb }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }), { maxKeys: 4 });
    await fc.assert(fc.asyncProperty(header, fc.nat(72), async (h, dataLen) => {
      await check(buildFile(h, new Uint8Array(dataLen)));
    }), { numRuns: 800, seed: 4 });
    // Free-form JSON text, including forbidden keys spliced in.
    await fc.assert(fc.asyncProperty(fc.json({ maxDepth: 3 }), fc.boolean(), async (text, proto) => {
      await check(buildFile(proto ? text.replace(/^\{/, '{"__proto__":{},') : text, new Uint8Array(8)));
    }), { numRuns: 400, seed: 5 });
  });

  it('random valid files open, and one perturbed field is caught or harmless', async () => {
    const tensor = fc.record({
      name: fc.string({ minLength: 1, maxLength: 6 }).filter((n) => !['__proto__', 'constructor', 'prototype', '__metadata__'].includes(n)),
      dtype: fc.constantFrom(...DTYPE_BYTES.keys()),
      shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
    });
    const files = fc.tuple(fc.uniqueArray(tensor, { selector: (t) => t.name, maxLength: 5 }), fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.nat(20)).map(([ts, seed, pad]) => {
      // Lay the tensors out in a seed-driven order (not necessarily the header's), padding the header with spaces.
      const order = ts.map((_, i) => i).sort((a, b) => ((a * 7919 + seed) % 13) - ((b * 7919 + seed) % 13));
      const header: Record<string, unknown> = {};
      let at = 0;
      for (const i of order) {
        const t = ts[i];
        const len = t.shape.reduce((x, y) => x * y, 1) * (DTYPE_BYTES.get(t.dtype) as number);
        header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + len] };
        at += len;
      }
      const data = Uint8Array.from({ length: at }, (_, i) => (i * 31 + seed) & 0xff);
      return { bytes: buildFile(JSON.stringify(header) + ' '.repeat(pad), data), header, data };
    });
    await fc.assert(fc.asyncProperty(files, async ({ bytes }) => {
      const before = stats.valid;
      await check(bytes);
      expect(stats.valid).toBe(before + 1);
    }), { numRuns: 300, seed: 6 });
    const field = fc.constantFrom('dtype', 'shape', 'data_offsets', 'extra');
    await fc.assert(fc.asyncProperty(files, field, fc.jsonValue({ maxDepth: 1 }), async ({ header, data }, f, value) => {
      const names = Object.keys(header);
      if (names.length === 0) return;
      const h = JSON.parse(JSON.stringify(header));
      h[names[0]][f] = value;
      await check(buildFile(h, data));
    }), { numRuns: 300, seed: 7 });
  });

  it('reached both outcomes', () => {
    // Guards against a fuzz run that only ever hits one branch.
    expect(stats.valid).toBeGreaterThan(20);
    expect(stats.rejected).toBeGreaterThan(1000);
  });
});
