// Helpers of the e2e suite: the system Chromium with SwiftShader WebGPU (the browser suite's
// flags), screenshots under test-results/e2e/, page errors collected for the tests to assert on.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright';
import { chromiumArgs, chromiumPath } from '../../scripts/chromium.ts';

export const artifacts = join(import.meta.dirname, '..', '..', 'test-results', 'e2e');

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: [...chromiumArgs] });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifacts, { recursive: true });
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Uncaught errors and console errors of a page, as they happen. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  return errors;
}

/** A documentation page that embeds the widget the way the README says: one script tag, one element. */
export function docsPage(element: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>docs</title></head>
<body><h1>Some documentation page</h1><p>A live training run:</p>
<script type="module" src="./webtinker-demo.js"></script>
${element}
</body></html>`;
}

/** Makes the page see a browser without WebGPU: no navigator.gpu at all, or one that finds no adapter. */
export function withoutWebGpu(kind: 'no-api' | 'no-adapter'): string {
  return kind === 'no-api'
    ? `Object.defineProperty(Navigator.prototype, 'gpu', { get() { return undefined; }, configurable: true });`
    : `GPU.prototype.requestAdapter = async function () { return null; };`;
}
