// The end-to-end suite: the BUILT demo pages (dist-demos/, built by the global setup) served by
// `vite preview` and driven in the system Chromium through Playwright, with SwiftShader WebGPU.
// `npm test -- e2e` runs it; screenshots go to test-results/e2e/.
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'e2e',
    root: resolve(import.meta.dirname, '../..'),
    include: ['test/e2e/**/*.test.ts'],
    environment: 'node',
    globalSetup: ['test/e2e/setup.ts'],
    // A first step on SwiftShader compiles every kernel it uses: tens of seconds on 2 cores.
    testTimeout: 240_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
