// `npm run build`: the library as ESM (Vite library mode) plus .d.ts declarations (tsc) in dist/,
// then the static demo pages in dist-demos/ (scripts/build-demos.mjs).
// Kernels are bundled into the JS from kernels/*.wgsl (scripts/gen-kernels.mjs), so the built
// package fetches nothing at run time. Dependencies stay external (resolved by the consumer).
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'vite';
import { buildDemos } from './build-demos.mjs';
import { ensureInstalled, root } from './env.mjs';

ensureInstalled();
execFileSync(process.execPath, ['scripts/gen-kernels.mjs'], { cwd: root, stdio: 'inherit' });
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const deps = Object.keys(pkg.dependencies ?? {});
rmSync(join(root, 'dist'), { recursive: true, force: true });
await build({
  root,
  configFile: false,
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: false,
    target: 'es2022',
    sourcemap: true,
    minify: false,
    lib: { entry: join(root, 'src/mod.ts'), formats: ['es'], fileName: () => 'webtinker.js' },
    rolldownOptions: {
      external: (id) => deps.some((d) => id === d || id.startsWith(`${d}/`)) || id.startsWith('node:'),
    },
  },
});
execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
console.log('built dist/webtinker.js and dist/mod.d.ts');
await buildDemos();
console.log('built the demo pages in dist-demos/ (the widget: dist-demos/webtinker-demo.js)');
