/// <reference types="vitest/config" />
// The Chromium side of `npm run bench -- --only paper` (not a test suite: no project of
// vite.config.ts includes it): one page on SwiftShader runs the jobs the bench hands it in
// BENCH_PAPER_CROSS and writes their results to a file (paper_cross.run.ts). BENCH_PAPER_TIMEOUT_MS
// bounds the run.
import { join } from 'node:path';
import { defineConfig } from 'vite';
import { playwright } from '@vitest/browser-playwright';
import { chromiumArgs, chromiumPath } from '../../../scripts/chromium.ts';

export default defineConfig({
  optimizeDeps: { include: ['comlink', 'idb-keyval'] },
  test: {
    name: 'bench-chromium',
    root: join(import.meta.dirname, '..', '..', '..'),
    include: ['test/bench/chromium/*.run.ts'],
    testTimeout: Number(process.env.BENCH_PAPER_TIMEOUT_MS ?? 4 * 3600_000),
    globalSetup: [join(import.meta.dirname, '..', '..', '..', 'scripts', 'vitest-setup.ts')],
    provide: { paperCross: process.env.BENCH_PAPER_CROSS ?? '{}' },
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({ launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs] } }),
      instances: [{ browser: 'chromium' }],
    },
  },
});
