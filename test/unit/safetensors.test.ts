// safetensors in Node: the shared cases from memory, from a path and from a URL (a local HTTP
// server, with download progress), plus per-tensor laziness and handle release.
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ByteSource, MemorySource } from '../../src/model/bytes.ts';
import { SafetensorsError } from '../../src/model/errors.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { safetensorsCases } from '../shared/cases/safetensors.ts';

const dir = mkdtempSync(join(tmpdir(), 'wt-st-'));
const served = new Map<string, Uint8Array>();
let server: Server;
let base = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const body = served.get(req.url ?? '');
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': String(body.byteLength) });
    // Several chunks, a few ms apart, so progress is reported more than once.
    const step = Math.max(1, Math.ceil(body.byteLength / 4));
    let i = 0;
    const next = () => {
      if (i >= body.byteLength) return void res.end();
      res.write(body.subarray(i, i + step));
      i += step;
      setTimeout(next, 5);
    };
    next();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('safetensors from memory', () => {
  for (const c of safetensorsCases((bytes, name) => openSafetensors(bytes, { name }))) it(c.name, c.fn);
});

describe('safetensors from a path', () => {
  for (const c of safetensorsCases((bytes, name) => {
    const p = join(dir, name);
    writeFileSync(p, bytes);
    return openSafetensors(p, { name });
  })) it(c.name, c.fn);

  it('a missing file is an io error naming the path', async () => {
    const p = join(dir, 'absent.safetensors');
    await expect(openSafetensors(p)).rejects.toMatchObject({ kind: 'io', file: p });
  });
});

describe('safetensors from a URL', () => {
  let n = 0;
  for (const c of safetensorsCases((bytes, name) => {
    const path = `/${n++}/${name}`;
    served.set(path, bytes);
    return openSafetensors(`${base}${path}`, { name });
  })) it(c.name, c.fn);

  it('reports download progress up to the total, and HTTP errors as io errors', async () => {
    const bytes = writeSafetensors([{ name: 'w', shape: [1000], dtype: 'F32', data: new Float32Array(1000).fill(2) }]);
    served.set('/progress.safetensors', bytes);
    const seen: [number, number | undefined][] = [];
    const f = await openSafetensors(`${base}/progress.safetensors`, { onProgress: (l, t) => seen.push([l, t]) });
    expect((await f.getF32('w'))[999]).toBe(2);
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.at(-1)).toEqual([bytes.byteLength, bytes.byteLength]);
    for (let i = 1; i < seen.length; i++) expect(seen[i][0]).toBeGreaterThanOrEqual(seen[i - 1][0]);
    await expect(openSafetensors(`${base}/missing.safetensors`)).rejects.toMatchObject({ kind: 'io', file: `${base}/missing.safetensors` });
  });
});

describe('safetensors laziness', () => {
  it('opening reads only the header; a tensor read reads only that tensor', async () => {
    const big = new Float32Array(50_000).fill(1);
    const bytes = writeSafetensors([
      { name: 'big', shape: [50_000], dtype: 'F32', data: big },
      { name: 'small', shape: [3], dtype: 'F32', data: Float32Array.of(1, 2, 3) },
    ]);
    const mem = new MemorySource(bytes, 'counted.safetensors');
    let read = 0;
    let closed = 0;
    const counted: ByteSource = {
      name: mem.name, size: mem.size, fresh: false,
      read: (o, l) => ((read += l), mem.read(o, l)),
      close: async () => void closed++,
    };
    const f = await openSafetensors(counted);
    expect(read).toBe(f.dataOffset);
    read = 0;
    expect([...(await f.getF32('small'))]).toEqual([1, 2, 3]);
    expect(read).toBe(12);
    await f.close();
    expect(closed).toBe(1);
  });

  it('a malformed file closes its source', async () => {
    let closed = 0;
    const bad = new MemorySource(new Uint8Array(16), 'zero.safetensors');
    const src: ByteSource = { name: bad.name, size: bad.size, fresh: false, read: (o, l) => bad.read(o, l), close: async () => void closed++ };
    await expect(openSafetensors(src)).rejects.toBeInstanceOf(SafetensorsError);
    expect(closed).toBe(1);
  });
});

describe('safetensors BF16 writing', () => {
  it('rounds f32 to nearest even as torch does, keeps raw bits, and reads back as the same f32', async () => {
    // Ties: 1 + 2^-8 → 1 (even), 1 + 3·2^-8 → 1 + 2^-6 (even); π → 0x4049 (3.140625); 2^-133 (an f32 subnormal) → its high half; NaN stays NaN.
    const values = Float32Array.of(1 + 2 ** -8, 1 + 3 * 2 ** -8, Math.PI, -2.5, 2 ** -133, Infinity, NaN);
    const want = Float32Array.of(1, 1 + 2 ** -6, 3.140625, -2.5, 2 ** -133, Infinity, NaN);
    const bytes = writeSafetensors([
      { name: 'f', shape: [7], dtype: 'BF16', data: values },
      { name: 'bits', shape: [2], dtype: 'BF16', data: Uint16Array.of(0x4049, 0xbf80) },
      { name: 'a', shape: [1], dtype: 'F32', data: Float32Array.of(7) },
    ]);
    const f = await openSafetensors(bytes, { name: 'bf16.safetensors' });
    expect(f.info('f').dtype).toBe('BF16');
    expect([...(await f.getF32('f'))]).toEqual([...want]);
    expect([...(await f.getF32('bits'))]).toEqual([3.140625, -1]);
    expect([...(await f.getF32('a'))]).toEqual([7]);
    // allF32: every tensor by name, as getF32 reads it.
    const all = await f.allF32();
    expect(Object.keys(all).sort()).toEqual(['a', 'bits', 'f']);
    expect([...all.f]).toEqual([...want]);
    expect([...all.bits]).toEqual([3.140625, -1]);
    // F32 first, then the 16-bit tensors by name, each on a multiple of its element size.
    const [a, bits, ff] = ['a', 'bits', 'f'].map((n) => f.info(n).begin);
    expect([a, bits, ff]).toEqual([0, 4, 8]);
  });

  it('refuses a dtype it cannot write, naming the tensor', () => {
    expect(() => writeSafetensors([{ name: 'x', shape: [1], dtype: 'I8' as 'F32', data: new Float32Array(1) }])).toThrow(/x.*F32, F16 or BF16/);
  });
});
