// vitest global setup: bundle kernels/*.wgsl before any test imports src/gpu, and fail the
// browser project early, with what to install, when no Chromium is there.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export default function setup(project: { config: { name?: string; browser?: { enabled?: boolean } } }): void {
  execFileSync(process.execPath, ['scripts/gen-kernels.mjs'], { stdio: 'inherit' });
  if (project.config.browser?.enabled) {
    const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
    if (!existsSync(chromium)) {
      throw new Error(`the browser suite needs Chromium at ${chromium}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`);
    }
  }
}
