/**
 * End to end: the train page's model picker with a pretrained checkpoint (issue 20's browser
 * "Done when"). A fake Hub on 127.0.0.1 (fake_hub.ts, CORS for the page's origin) serves the Qwen3
 * tool twin (test/shared/hub_twin.ts: the golden's weights, Qwen3's chat template, Qwen's tool-call
 * tokens). The page judges the listed Hub models against SwiftShader's limits, reads the custom
 * repo's config.json alone, downloads the checkpoint with progress, trains LoRA on calculator in
 * the native <tool_call> syntax (an SFT warm-start step on its demonstrations, a GRPO step), and
 * shows the result. After a reload the model is
 * in the cache panel and trains again with no request reaching the Hub; then it is deleted.
 */
import type { Browser, Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { qwen3ToolTwin } from '../shared/hub_twin.ts';
import { launch, screenshot } from './browser.ts';
import { FakeHub } from './fake_hub.ts';

const REPO = 'tiny-org/qwen3-tools';
const base = inject('demosUrl');
let browser: Browser;
let hub: FakeHub;
let files: Record<string, Uint8Array>;

beforeAll(async () => {
  hub = new FakeHub();
  await hub.start();
  files = await qwen3ToolTwin();
  hub.commit(REPO, files);
  browser = await launch();
});

afterAll(async () => {
  await browser?.close();
  await hub?.stop();
});

/**
 * Uncaught errors and console errors of a page, except Chromium's "Failed to load resource" line
 * for the Hub's 404 on an optional file the repo lacks (chat_template.jinja,
 * special_tokens_map.json: the loader asks for them as Python's does, and a browser logs every
 * 404 a fetch gets).
 */
const OPTIONAL = ['chat_template.jinja', 'special_tokens_map.json'];
function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const at = m.location().url;
    const optional404 = /status of 404/.test(m.text()) && at.startsWith(hub.url) && OPTIONAL.some((f) => at.endsWith(`/${f}`));
    if (!optional404) errors.push(`console.error: ${m.text()} (${at})`);
  });
  return errors;
}

const attr = async (page: Page, selector: string, name: string) => (await page.locator(selector).first().getAttribute(name)) ?? '';
const weightRequests = () => hub.log.filter((r) => r.path.endsWith('.safetensors') || r.path.startsWith('/cdn/'));

describe('train page: model picker', () => {
  it('judges the listed Hub models, picks a custom repo by its config.json, downloads it with progress, trains LoRA GRPO in native tool calls; after a reload it trains from the cache with no request to the Hub', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    const errors = pageErrors(page);
    const url = `${base}train.html?hub=${encodeURIComponent(hub.url)}&env=calculator&algo=grpo&steps=1&groups=1&groupSize=2&evalEpisodes=0`;
    await page.goto(url);
    await expect.poll(() => page.locator('body').getAttribute('data-webgpu')).toBe('yes');

    // The six listed models, each judged before any download; on SwiftShader (no shader-f16, the
    // page's 1 GiB budget) Llama-3.2-1B's f32 base alone is over the budget: refused, with the numbers.
    await expect.poll(() => page.locator('#hub-models tr[data-repo]').count()).toBe(6);
    const llama = page.locator('#hub-models tr[data-repo="meta-llama/Llama-3.2-1B-Instruct"]');
    expect(await llama.getAttribute('data-fit')).toBe('refused');
    expect(await llama.locator('td.fit').textContent()).toMatch(/refused: .*(budget|maxBufferSize)/);
    expect(await llama.locator('button.pick').isDisabled()).toBe(true);
    expect(hub.log).toEqual([]);

    // A custom repo id: its config.json alone is read, it fits, and becomes the form's model.
    await page.fill('#custom-repo', REPO);
    await page.click('#check-repo');
    await page.waitForSelector(`#hub-models tr[data-repo="${REPO}"][data-fit="fits"]`);
    await expect.poll(() => page.locator('select[name="model"]').inputValue()).toBe(REPO);
    expect(await page.locator('input[name="warmstart"]').inputValue()).toBe('0');
    expect(weightRequests()).toEqual([]);
    expect(hub.log.every((r) => r.path.endsWith('/config.json'))).toBe(true);

    // Download (progress shown), then a LoRA SFT step on the calculator's demonstrations in Qwen's
    // <tool_call> syntax and a LoRA GRPO step. (SwiftShader compiles the backward's kernels on
    // their first use, tens of seconds per page: the second run below takes the GRPO step alone.)
    await page.fill('input[name="warmstart"]', '1');
    await page.click('#start');
    await page.waitForSelector('#download[data-from-cache="false"]');
    await page.waitForSelector('#progress[data-phase="done"]', { timeout: 120_000 });
    const total = Object.values(files).reduce((s, b) => s + b.byteLength, 0);
    expect(Number(await attr(page, '#download', 'data-total'))).toBe(total);
    expect(Number(await attr(page, '#download', 'data-loaded'))).toBe(total);
    expect(await attr(page, '#opened', 'data-tool-syntax')).toBe('hermes'); // Qwen's <tool_call>{"name": …}</tool_call>
    expect(await attr(page, '#progress', 'data-done')).toBe('2');
    expect(await attr(page, '#curve', 'data-points')).toBe('2');
    expect(await page.locator('#result').textContent()).toMatch(/Held-out success/);
    expect(await page.locator('#message').textContent()).toContain(`Trained a LoRA adapter on ${REPO}`);
    const weightGets = weightRequests().filter((r) => r.method === 'GET');
    expect(weightGets.some((r) => r.path.startsWith('/cdn/'))).toBe(true);
    await page.waitForSelector(`#hub-cache tr[data-cached="${REPO}"]`);
    await screenshot(page, 'picker-trained');
    expect(errors).toEqual([]);

    // A reload: the model is listed in the cache panel, and a second run reads it from there alone.
    hub.log.length = 0;
    const again = await context.newPage();
    const errors2 = pageErrors(again);
    await again.goto(`${url}&model=${encodeURIComponent(REPO)}&warmstart=0`);
    await again.waitForSelector(`#hub-cache tr[data-cached="${REPO}"]`);
    expect(await again.locator(`#hub-cache tr[data-cached="${REPO}"] td.size`).textContent()).toMatch(/KiB|MiB/);
    await page.close();
    await again.click('#start');
    await again.waitForSelector('#progress[data-phase="done"]', { timeout: 120_000 });
    expect(await attr(again, '#download', 'data-from-cache')).toBe('true');
    expect(await attr(again, '#progress', 'data-done')).toBe('1');
    expect(weightRequests()).toEqual([]);
    expect(hub.log).toEqual([]); // not even config.json: the cache answered for every file
    await screenshot(again, 'picker-from-cache');

    // The cache panel deletes it.
    await again.click(`#hub-cache tr[data-cached="${REPO}"] button.delete-cached`);
    await again.waitForSelector('#no-cached');
    expect(errors2).toEqual([]);
    await context.close();
  });
});
