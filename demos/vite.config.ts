// The demo pages (a Vite multi-page app): `npm run demo` serves them from source, `npm run build`
// writes them to dist-demos/ (scripts/build-demos.mjs). The pages import the library from
// ../src/mod.ts; the GPU worker (src/runtime/gpu_worker.ts) becomes a chunk of its own.
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig } from 'vite';

const here = import.meta.dirname;

export default defineConfig({
  root: here,
  base: './',
  appType: 'mpa',
  worker: { format: 'es' },
  // The fleet page checks a job's flags with the CLI's own parsers, which use node:util's
  // parseArgs: a browser implementation of it stands in (demos/src/lib/node_util.ts).
  resolve: { alias: { 'node:util': resolve(here, 'src/lib/node_util.ts') } },
  build: {
    outDir: resolve(here, '../dist-demos'),
    emptyOutDir: true,
    target: 'es2022',
    rolldownOptions: {
      // Every page in demos/, and the widget as a script of its own at a stable name.
      input: {
        ...Object.fromEntries(readdirSync(here).filter((f) => f.endsWith('.html')).map((f) => [f.slice(0, -5), resolve(here, f)])),
        'webtinker-demo': resolve(here, 'src/widget.ts'),
      },
      // The file backends of the stores and weight loaders (node:fs) are imported lazily, under Deno
      // or Node only; their externalized node: imports are never loaded by a page.
      onwarn(warning, warn) {
        if (/externalized for browser compatibility, imported by ".*\/src\/(runtime\/store\/fs_kv|model\/bytes_fs|hub\/fs_cache)\.ts"/.test(warning.message)) return;
        // The NATS Object Store (the fleet page) hashes with node:crypto only where it exists, by a dynamic import.
        if (/"node:crypto" has been externalized for browser compatibility, imported by ".*\/@nats-io\/obj\/lib\/sha256\.js"/.test(warning.message)) return;
        warn(warning);
      },
      // Plugin timing notes appear whenever the machine is busy; they are not about this build.
      checks: { bundlerTimings: false },
      output: {
        entryFileNames: (chunk) => (chunk.name === 'webtinker-demo' ? 'webtinker-demo.js' : 'assets/[name]-[hash].js'),
      },
    },
  },
});
