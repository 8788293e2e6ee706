// Chromium suite: safetensors read from a File (a Blob, read by slices) and from an in-page Blob URL
// (fetched, with progress).
import { expect, it } from 'vitest';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { safetensorsCases } from '../shared/cases/safetensors.ts';

for (const c of safetensorsCases((bytes, name) => openSafetensors(new File([bytes as Uint8Array<ArrayBuffer>], name)))) it(`blob: ${c.name}`, c.fn);

it('blob URL: fetched with progress', async () => {
  const bytes = writeSafetensors([{ name: 'w', shape: [3], dtype: 'F16', data: Float32Array.of(1, 2, 3) }]);
  const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>]));
  const seen: number[] = [];
  const f = await openSafetensors(url, { onProgress: (loaded) => seen.push(loaded) });
  expect([...(await f.getF32('w'))]).toEqual([1, 2, 3]);
  expect(seen.at(-1)).toBe(bytes.byteLength);
  URL.revokeObjectURL(url);
});
