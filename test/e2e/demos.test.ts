/**
 * End to end on the built demos (dist-demos/, served by vite preview; see setup.ts), in headless
 * Chromium with SwiftShader WebGPU:
 *   - train: on its defaults (gpt2-100k from the shipped warm start, 10 GRPO steps of 8 × 4) the
 *     agent visibly learns — held-out success rises — and the run is saved; after a reload the
 *     adapter is still listed with its curves, loads into the GPU worker and plays, exports as a
 *     PEFT zip, and deletes;
 *   - chat: on its defaults a reply comes from the RL policy after some optimizer steps while the
 *     run goes on, and the device-time panel shows both jobs;
 *   - arena: on its defaults (the sale game from its shipped warm start, 12 GRPO steps of 8 × 4)
 *     both agents train with their reward curves and the step's transcript drawn as they go, and
 *     the seller does better against its fixed opponent (a truthful buyer) than before;
 *   - the widget, embedded with one script tag and no attributes, trains on its defaults and
 *     held-out success rises; the embed page renders its widgets;
 *   - without WebGPU (no navigator.gpu; no adapter) the widget and the train page say so plainly.
 * Screenshots: test-results/e2e/*.png; the default runs' seconds and successes:
 * test-results/e2e/learning.json (recorded, never asserted). On SwiftShader a page's first step
 * compiles its kernels (tens of seconds on 2 cores).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** How much better than before each arena agent must do against its fixed opponent. */
const ARENA_MARGIN = 0.03;

const num = async (page: Page, selector: string, attr: string) => Number(await page.locator(selector).first().getAttribute(attr));

/** The safetensors header (u64 little-endian length, then JSON). */
function safetensorsHeader(bytes: Uint8Array): Record<string, { shape: number[] }> {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  return JSON.parse(strFromU8(bytes.subarray(8, 8 + n)));
}

/** Seconds a page's default run took, kept for the record (test-results/e2e/learning.json) — never asserted. */
const learning: Record<string, { seconds: number; successBefore: number; successAfter: number }> = {};
afterAll(() => {
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(join(artifacts, 'learning.json'), JSON.stringify(learning, null, 2) + '\n');
});

describe('train page', () => {
  let saved = '';

  it('on its defaults the agent visibly learns: held-out success rises over the RL steps; the run is saved with its curves', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}train.html`);
    await expect.poll(() => page.locator('body').getAttribute('data-webgpu')).toBe('yes');
    // SwiftShader is a software adapter: the page says what the full run would cost here.
    expect(await page.locator('#software-note').innerText()).toMatch(/software one.*about 3 minutes.*full run/s);
    const t0 = Date.now();
    await page.click('#start');
    await page.waitForSelector('#curve[data-points="1"]', { timeout: 240_000 });
    await page.waitForSelector('#progress[data-phase="done"]', { timeout: 480_000 });
    const seconds = (Date.now() - t0) / 1000;
    // The shipped warm start: no SFT steps in the tab, one curve point per RL step.
    expect(await num(page, '#curve', 'data-points')).toBe(10);
    const before = await num(page, '#result', 'data-success-before');
    const after = await num(page, '#result', 'data-success-after');
    learning['train page'] = { seconds, successBefore: before, successAfter: after };
    expect(before).toBeGreaterThan(0); // the shipped warm start already answers some tasks
    expect(after).toBeGreaterThan(before + 0.05); // RL improved the agent, by more than a few episodes' noise
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
    // The finished run's curves come back with it: curve.svg's specification, drawn in the page.
    const curves = page.locator('#saved-curve');
    expect(await curves.getAttribute('data-run')).toBe(saved);
    expect(await num(page, '#saved-curve', 'data-rl-steps')).toBe(10);
    expect(await num(page, '#saved-curve', 'data-success-after')).toBe(learning['train page']?.successAfter);
    expect(await curves.locator('svg text', { hasText: 'held-out success' }).count()).toBeGreaterThan(0);
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
  it('on its defaults a reply comes from the RL policy while it trains; the device-time panel shows both jobs', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}chat.html`);
    await page.click('#train-start');
    // From the shipped warm start straight to RL: wait for two optimizer steps, then ask.
    await page.waitForSelector('#progress[data-phase="rl"]', { timeout: 240_000 });
    await page.waitForSelector('#curve[data-points="2"]', { timeout: 240_000 });
    await page.fill('#chat-input', 'What is 7*8?');
    await page.click('#send');
    const reply = page.locator('.msg.agent[data-source="live"]');
    await reply.waitFor({ timeout: 180_000 });
    expect(await reply.getAttribute('data-while-training')).toBe('yes');
    expect(Number(await reply.getAttribute('data-steps'))).toBeGreaterThanOrEqual(2);
    expect(await reply.locator('.who').innerText()).toMatch(/LoRA policy after \d+ optimizer steps/);
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

describe('arena page', () => {
  it('on its defaults the sale game trains both agents live; the seller does better against its fixed opponent than before', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}arena.html`);
    await expect.poll(() => page.locator('body').getAttribute('data-webgpu')).toBe('yes');
    const t0 = Date.now();
    await page.click('#start');
    await page.waitForSelector('#rewards[data-points="1"]', { timeout: 240_000 });
    // What each agent said in the step's first game: a price, then the buyer's answer.
    expect(await page.locator('#transcript').innerText()).toMatch(/seller: <answer>\d<\/answer>/);
    // ~500 s on 2 cores here (about 40 s a step on SwiftShader); CI's machines are slower.
    await page.waitForSelector('#arena-status[data-phase="done"]', { timeout: 780_000 });
    const seconds = (Date.now() - t0) / 1000;
    expect(await num(page, '#rewards', 'data-points')).toBe(12);
    await page.waitForSelector('#measured[data-state="done"]');
    const score = (seat: string, when: 'before' | 'after') => num(page, `#measured tr[data-seat="${seat}"]`, `data-${when}`);
    const [sellerBefore, sellerAfter, buyerBefore, buyerAfter] = [await score('seller', 'before'), await score('seller', 'after'), await score('buyer', 'before'), await score('buyer', 'after')];
    learning['arena page (seller vs truthful buyer)'] = { seconds, successBefore: sellerBefore, successAfter: sellerAfter };
    learning['arena page (buyer vs random prices)'] = { seconds, successBefore: buyerBefore, successAfter: buyerAfter };
    // Mean returns a game over the page's 64 held-out games (sd of a mean about 0.02). The seller
    // learns to price (0.049 → 0.113 here, and bitwise the same on llvmpipe); the buyer's return
    // against random prices does not move in 12 steps (0.050 → 0.050: recorded, not asserted — the
    // open part of issue 25).
    expect(sellerAfter).toBeGreaterThan(sellerBefore + ARENA_MARGIN);
    expect([buyerBefore, buyerAfter].every(Number.isFinite)).toBe(true); // the page measured the buyer too
    await screenshot(page, 'arena-done');
    expect(errors).toEqual([]);
    await page.close();
  }, 900_000);
});

describe('widget', () => {
  it('embedded with one script tag and no attributes, it trains on its defaults and held-out success rises', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    const element = '<webtinker-demo autostart></webtinker-demo>';
    await page.goto(`${base}e2e-docs-widget.html?element=${encodeURIComponent(element)}`);
    await page.waitForSelector('webtinker-demo[data-state="running"]');
    const t0 = Date.now();
    await page.waitForSelector('webtinker-demo[data-state="done"]', { timeout: 480_000 });
    const seconds = (Date.now() - t0) / 1000;
    expect(await num(page, 'webtinker-demo .curve', 'data-points')).toBe(10);
    const before = await num(page, 'webtinker-demo', 'data-success-before');
    const after = await num(page, 'webtinker-demo', 'data-success-after');
    learning.widget = { seconds, successBefore: before, successAfter: after };
    expect(after).toBeGreaterThan(before + 0.05);
    expect(await page.locator('webtinker-demo .line').innerText()).toMatch(/^done in \d+ s · 10 RL steps, mean reward [\d.]+ → [\d.]+ · held-out success \d+% → \d+%$/);
    await screenshot(page, 'widget-done');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the embed page renders its widgets, ready to train', async () => {
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}embed.html`);
    await page.waitForSelector('#widget-calculator[data-state="ready"]');
    await page.waitForSelector('#widget-rloo[data-state="ready"]');
    expect(await page.locator('#widget-rloo button').innerText()).toBe('Train');
    expect(await page.locator('#widget-rloo .line').innerText()).toMatch(/^gpt2-100k from its shipped warm start, then 10 RLOO steps of 8 × 4, held-out success before and after \(64 episodes\), in this tab$/);
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
