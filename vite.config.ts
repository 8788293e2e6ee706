/// <reference types="vitest/config" />
// The vitest projects (the library build has scripts/build.mjs, the demos demos/vite.config.ts,
// the end-to-end suite test/e2e/vitest.config.ts):
//   node    — pure logic (algorithms, environments, parsers, pool accounting with a fake device)
//   browser — headless Chromium on SwiftShader: WebGPU, Web Workers, IndexedDB
import { defineConfig } from 'vite';
import { playwright } from '@vitest/browser-playwright';
import { chromiumArgs, chromiumPath } from './scripts/chromium.ts';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['scripts/vitest-setup.ts'],
        },
      },
      {
        // Pre-bundle what the browser tests import, so Vite does not discover it mid-run and reload.
        optimizeDeps: { include: ['comlink', 'idb-keyval', 'chai', '@tensorflow/tfjs', '@nats-io/nats-core', '@nats-io/jetstream', '@nats-io/kv', '@nats-io/obj'] },
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['scripts/vitest-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: {
                executablePath: chromiumPath(),
                args: [...chromiumArgs],
              },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
