// e2e global setup: build the demos (the suite tests what `npm run build` ships, built from this
// checkout), serve dist-demos/ with `vite preview`, and hand the tests its URL.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { preview } from 'vite';
import type { TestProject } from 'vitest/node';
// @ts-expect-error: a plain .mjs build script without type declarations
import { buildDemos } from '../../scripts/build-demos.mjs';
import { chromiumPath } from '../../scripts/chromium.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    demosUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!existsSync(chromiumPath())) {
    throw new Error(`the e2e suite needs Chromium at ${chromiumPath()}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`);
  }
  const root = join(import.meta.dirname, '..', '..');
  const outDir: string = await buildDemos();
  const server = await preview({
    configFile: join(root, 'demos', 'vite.config.ts'),
    logLevel: 'warn',
    build: { outDir },
    preview: { port: 4730, strictPort: false, host: '127.0.0.1' },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');
  project.provide('demosUrl', url);
  return async () => {
    await server.close();
  };
}
