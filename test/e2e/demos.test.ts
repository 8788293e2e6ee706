/**
 * End to end on the built demos (dist-demos/, served by vite preview; see setup.ts), in headless
 * Chromium with SwiftShader WebGPU:
 *   - train: a short run trains (the curve gains a point per step), finishes, and is saved;
 *     after a reload the adapter is still listed, loads into the GPU worker and plays, exports as
 *     a PEFT zip, and deletes;
 *   - chat: a reply comes back while a training run goes on, and the device-time panel shows
 *     both jobs with device time;
 *   - the widget, embedded with one script tag on a plain page, renders and trains; the embed
 *     page renders its widgets;
 *   - without WebGPU (no navigator.gpu; no adapter) the widget and the train page say so plainly.
 * Screenshots: test-results/e2e/*.png. Sizes are the smallest that still show each behaviour: on
 * SwiftShader a page's first step compiles its kernels (tens of seconds on 2 cores).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { strFromU8, unzipSync } from 'fflate';
import type { Browser, BrowserContext, Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { artifacts, docsPage, launch, pageErrors, screenshot, withoutWebGpu } from './browser.ts';

const base = inject('demosUrl');
let browser: Browser;
let context: BrowserContext;

beforeAll(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  await context.route((url) => url.pathname.startsWith('/e2e-docs-'), (route) => {
    const url = new URL(route.request().url());
    const element = url.searchParams.get('element') ?? '';
    return route.fulfill({ contentType: 'text/html', body: docsPage(element) });
  });
});

afterAll(async () => {
  await browser?.close();
});

const num = async (page: Page, selector: string, attr: string) => Number(await page.locator(selector).first().getAttribute(attr));

/** The safetensors header (u64 little-endian length, then JSON). */
function safetensorsHeader(bytes: Uint8Array): Record<string, { shape: number[] }> {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  return JSON.parse(strFromU8(bytes.subarray(8, 8 + n)));
}

describe('train page', () => {
  let saved = '';

  it('trains a few steps: the curve gains a point per step, progress reaches done, the run is saved and listed', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}train.html?warmstart=2&steps=1&groups=1&groupSize=2&evalEpisodes=0`);
    await expect.poll(() => page.locator('body').getAttribute('data-webgpu')).toBe('yes');
    await page.click('#start');
    await page.waitForSelector('#curve[data-points="1"]');
    await page.waitForSelector('#curve[data-points="2"]');
    await page.waitForSelector('#progress[data-phase="done"]', { timeout: 180_000 });
    expect(await num(page, '#curve', 'data-points')).toBe(3); // 2 warm-start steps + 1 RL step
    expect(await num(page, '#progress', 'data-done')).toBe(3);
    expect(await page.locator('#curve canvas').count()).toBeGreaterThan(0);
    const row = page.locator('#adapters tr[data-adapter]');
    await row.first().waitFor();
    saved = (await row.first().getAttribute('data-adapter')) ?? '';
    expect(saved).toMatch(/^calculator-grpo-\d+$/);
    await expect.poll(() => num(page, 'tr[data-group^="training 1"]', 'data-quanta')).toBeGreaterThan(0);
    await screenshot(page, 'train-done');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('after a reload the adapter is still listed; it loads and plays, exports as PEFT files, and deletes', async () => {
    expect(saved).not.toBe('');
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}train.html`);
    await page.reload();
    const row = page.locator(`#adapters tr[data-adapter="${saved}"]`);
    await row.waitFor();
    await screenshot(page, 'train-after-reload');

    await row.locator('button.try').click();
    await page.waitForSelector(`#tried[data-adapter="${saved}"] .episode pre`, { timeout: 180_000 });
    expect(await page.locator('#tried .episode').count()).toBe(3);

    const [download] = await Promise.all([page.waitForEvent('download'), row.locator('button.export').click()]);
    expect(download.suggestedFilename()).toBe(`${saved}-peft.zip`);
    const zipPath = join(artifacts, download.suggestedFilename());
    await download.saveAs(zipPath);
    const files = unzipSync(readFileSync(zipPath));
    const dir = `${saved}-peft/`;
    expect(Object.keys(files).filter((f) => !f.endsWith('/')).sort()).toEqual(
      ['README.md', 'adapter_config.json', 'adapter_model.safetensors', 'base/config.json', 'base/model.safetensors'].map((f) => dir + f),
    );
    const config = JSON.parse(strFromU8(files[`${dir}adapter_config.json`]));
    expect(config.peft_type).toBe('LORA');
    const adapterHeader = safetensorsHeader(files[`${dir}adapter_model.safetensors`]);
    expect(Object.keys(adapterHeader)).toContain('base_model.model.transformer.h.0.attn.c_proj.lora_A.weight');
    const baseHeader = safetensorsHeader(files[`${dir}base/model.safetensors`]);
    expect(Object.keys(baseHeader)).toContain('transformer.wte.weight');
    expect(JSON.parse(strFromU8(files[`${dir}base/config.json`])).model_type).toBe('gpt2');

    await row.locator('button.delete').click();
    await row.waitFor({ state: 'detached' });
    await page.reload();
    await page.waitForSelector('#no-adapters, #adapters');
    expect(await page.locator(`tr[data-adapter="${saved}"]`).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('chat page', () => {
  it('answers while a training run goes on; the device-time panel shows both jobs', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}chat.html?warmstart=40&steps=40`);
    await page.click('#train-start');
    await page.waitForSelector('#progress[data-phase="warmstart"]');
    await page.fill('#chat-input', 'What is 7*8?');
    await page.click('#send');
    const reply = page.locator('.msg.agent[data-source="live"]');
    await reply.waitFor({ timeout: 180_000 });
    expect(await reply.getAttribute('data-while-training')).toBe('yes');
    expect(await page.locator('#progress').getAttribute('data-phase')).toMatch(/^(warmstart|eval-before|rl)$/);
    expect((await reply.locator('.bubble').innerText()).length).toBeGreaterThan(0);
    await expect.poll(() => num(page, 'tr[data-group^="training"]', 'data-quanta')).toBeGreaterThan(0);
    await expect.poll(() => num(page, 'tr[data-group="chat"]', 'data-quanta')).toBeGreaterThan(0);
    await screenshot(page, 'chat-while-training');
    await page.click('#train-stop');
    await page.waitForSelector('#progress[data-phase="stopped"]', { timeout: 120_000 });
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('widget', () => {
  it('embedded with one script tag, it renders, trains and draws its curve', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    const element = '<webtinker-demo env="calculator" steps="1" warmstart="1" autostart></webtinker-demo>';
    await page.goto(`${base}e2e-docs-widget.html?element=${encodeURIComponent(element)}`);
    await page.waitForSelector('webtinker-demo[data-state="running"]');
    await page.waitForSelector('webtinker-demo[data-state="done"]', { timeout: 180_000 });
    expect(await num(page, 'webtinker-demo .curve', 'data-points')).toBe(2);
    expect(await page.locator('webtinker-demo .line').innerText()).toMatch(/^done in \d+ s/);
    await screenshot(page, 'widget-done');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the embed page renders its widgets, ready to train', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}embed.html`);
    await page.waitForSelector('#widget-calculator[data-state="ready"]');
    await page.waitForSelector('#widget-nim[data-state="ready"]');
    expect(await page.locator('#widget-nim button').innerText()).toBe('Train');
    await screenshot(page, 'embed-page');
    expect(errors).toEqual([]);
    await page.close();
  });

  for (const kind of ['no-api', 'no-adapter'] as const) {
    it(`without WebGPU (${kind}) the widget and the train page say so plainly`, async () => {
      const ctx = await browser.newContext({ viewport: { width: 1000, height: 700 } });
      try {
        await ctx.addInitScript(withoutWebGpu(kind));
        await ctx.route((url) => url.pathname.startsWith('/e2e-docs-'), (route) => route.fulfill({ contentType: 'text/html', body: docsPage('<webtinker-demo env="nim" steps="20"></webtinker-demo>') }));
        const page = await ctx.newPage();
        const errors = pageErrors(page);
        await page.goto(`${base}e2e-docs-nogpu.html`);
        await page.waitForSelector('webtinker-demo[data-state="no-webgpu"]');
        const text = await page.locator('webtinker-demo .message').innerText();
        expect(text).toMatch(kind === 'no-api' ? /WebGPU is not available in this browser/ : /offers no GPU adapter/);
        expect(await page.locator('webtinker-demo button').count()).toBe(0);
        await screenshot(page, `widget-${kind}`);

        await page.goto(`${base}train.html`);
        await page.waitForSelector('[data-testid="no-webgpu"]');
        expect(await page.locator('#start').isDisabled()).toBe(true);
        await screenshot(page, `train-${kind}`);
        expect(errors).toEqual([]);
      } finally {
        await ctx.close();
      }
    });
  }
});
