// Deno suite: safetensors read by path (files written to a temp dir), through node:fs.
import { openSafetensors } from '../../src/model/safetensors.ts';
import { safetensorsCases } from '../shared/cases/safetensors.ts';

const dir = await Deno.makeTempDir({ prefix: 'wt-st-' });

for (const c of safetensorsCases(async (bytes, name) => {
  const path = `${dir}/${name}`;
  await Deno.writeFile(path, bytes);
  return openSafetensors(path, { name });
})) {
  Deno.test({ name: `path: ${c.name}`, fn: c.fn });
}

Deno.test('path: a file: URL opens like its path', async () => {
  const { writeSafetensors } = await import('../../src/model/safetensors_write.ts');
  const path = `${dir}/url.safetensors`;
  await Deno.writeFile(path, writeSafetensors([{ name: 'w', shape: [2], dtype: 'F32', data: Float32Array.of(3, 4) }]));
  const f = await openSafetensors(new URL(`file://${path}`));
  const got = [...(await f.getF32('w'))];
  await f.close();
  if (got.join() !== '3,4') throw new Error(`got ${got}`);
});
