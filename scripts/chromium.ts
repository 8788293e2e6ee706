// The system Chromium and the flags that give it a WebGPU adapter without a GPU (SwiftShader),
// shared by the browser suite (vite.config.ts) and the end-to-end suite (test/e2e/).
export const chromiumPath = (): string => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const chromiumArgs: readonly string[] = [
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
