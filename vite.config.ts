/// <reference types="vitest/config" />
// One config for the library build, the demos and both vitest projects:
//   node    — pure logic (algorithms, environments, parsers, pool accounting with a fake device)
//   browser — headless Chromium on SwiftShader: WebGPU, Web Workers, IndexedDB
import { defineConfig } from 'vite';
import { playwright } from '@vitest/browser-playwright';

const chromiumArgs = [
  '--enable-unsafe-webgpu',
  '--enable-unsafe-swiftshader',
  '--use-webgpu-adapter=swiftshader',
  '--enable-features=Vulkan',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

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
        optimizeDeps: { include: ['comlink', 'idb-keyval', 'chai', '@tensorflow/tfjs'] },
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
                executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
                args: chromiumArgs,
              },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
