// The static demo pages: a Vite build of demos/ (demos/vite.config.ts) into dist-demos/ — every
// page, its GPU worker chunk, and the widget as dist-demos/webtinker-demo.js. Used by
// `npm run build` and by the e2e suite (which builds what it tests).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { build } from 'vite';
import { root } from './env.mjs';

export const demosOut = join(root, 'dist-demos');

export async function buildDemos({ outDir = demosOut, logLevel = 'warn' } = {}) {
  // The pages import the library from source, which imports the generated kernel bundle.
  execFileSync(process.execPath, [join(root, 'scripts', 'gen-kernels.mjs')], { cwd: root, stdio: 'inherit' });
  await build({ configFile: join(root, 'demos', 'vite.config.ts'), logLevel, build: { outDir } });
  return outDir;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await buildDemos({ logLevel: 'info' });
}
