/**
 * End to end: the fleet page (issue 21, item 5). nats-server with JetStream and a WebSocket
 * listener (test/shared/nats_server.ts) and one fleet worker process (Deno, `src/fleet/cli.ts
 * worker`, on llvmpipe as the Deno suite runs it). The page says clearly when the server is not
 * reachable over WebSocket; refuses bad flags as `npm run fleet -- submit` does; submits a tiny
 * job, shows it running on the worker with a reward curve that gains a point per RL step, then
 * done; copies its adapter into IndexedDB, and the train page lists it after a reload; cancels a
 * second job; lends the tab as a rollout worker, which samples every slice of a third job. Every
 * process started here is stopped by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
// @ts-expect-error: a plain .mjs helper without type declarations
import { denoBin, denoEnv } from '../../scripts/env.mjs';
import { type NatsServer, startNatsServer } from '../shared/nats_server.ts';
import { launch, pageErrors, screenshot } from './browser.ts';

const base = inject('demosUrl');
const root = join(import.meta.dirname, '..', '..');
let browser: Browser;
let server: NatsServer;
let worker: ChildProcess;
let workerLog = '';

beforeAll(async () => {
  server = await startNatsServer({ websocket: true });
  worker = spawn(denoBin(), ['run', '--allow-read', '--allow-write', '--allow-env', '--allow-net', '--allow-sys', 'src/fleet/cli.ts', 'worker', '--nats', server.url, '--name', 'e2e-host'], {
    cwd: root, env: denoEnv(), stdio: ['ignore', 'ignore', 'pipe'],
  });
  worker.stderr!.on('data', (d) => (workerLog += String(d)));
  browser = await launch();
});

/** Stop the worker by its PID: SIGTERM (it hands its jobs back and exits), SIGKILL after 10 s. */
async function stopWorker(): Promise<void> {
  if (worker?.pid === undefined || worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((r) => worker.once('exit', r));
  process.kill(worker.pid, 'SIGTERM');
  const t = setTimeout(() => worker.exitCode === null && worker.signalCode === null && process.kill(worker.pid!, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

afterAll(async () => {
  await browser?.close();
  await stopWorker();
  await server?.stop(); // a no-op (but the folder's removal) when the test stopped it already
});

/** Each job card's (state, curve points) as they change, recorded in the page. */
async function recordCards(page: Page): Promise<void> {
  await page.evaluate(() => {
    const log: string[] = [];
    (window as unknown as { cardLog: string[] }).cardLog = log;
    const note = () => {
      for (const el of document.querySelectorAll<HTMLElement>('.job[data-job]')) {
        const s = `${el.dataset.job}:${el.dataset.state}:${el.querySelector<HTMLElement>('.curve')?.dataset.points}`;
        if (log[log.length - 1] !== s) log.push(s);
      }
    };
    new MutationObserver(note).observe(document.getElementById('jobs')!, { subtree: true, attributes: true, childList: true });
  });
}

describe('fleet page', () => {
  it('says when the server has no WebSocket listener, and refuses a URL that is not ws://', async () => {
    const page = await browser.newPage();
    const errors = pageErrors(page);
    // The server's TCP port speaks NATS, not WebSocket: as a server without a websocket listener looks.
    await page.goto(`${base}fleet.html?nats=${encodeURIComponent(`ws://127.0.0.1:${server.port}`)}`);
    await page.waitForSelector('#conn[data-state="error"]', { timeout: 60_000 });
    expect(await page.locator('#conn').innerText()).toMatch(/Cannot reach ws:\/\/127\.0\.0\.1:\d+ over WebSocket: .*no websocket listener/);
    expect(await page.locator('#submit').isDisabled()).toBe(true);
    await page.fill('#nats-url', 'http://127.0.0.1:1');
    await page.click('#connect');
    await expect.poll(() => page.locator('#conn').innerText()).toMatch(/^url: expected ws:\/\/host:port or wss:\/\/host:port, got "http:\/\/127\.0\.0\.1:1"/);
    // Chromium itself logs the refused WebSocket handshake; nothing else may be logged.
    expect(errors.filter((e) => !/WebSocket connection to 'ws:\/\/127\.0\.0\.1:\d+\/' failed/.test(e))).toEqual([]);
    await page.close();
  });

  it('submits a tiny job, shows it running with a growing curve, then done; its adapter goes to IndexedDB and the train page lists it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1200 } });
    const page = await context.newPage();
    const errors = pageErrors(page);
    await page.goto(`${base}fleet.html?nats=${encodeURIComponent(server.wsUrl!)}`);
    await page.waitForSelector('#conn[data-state="connected"]', { timeout: 60_000 });
    await page.waitForSelector('#submit:not([disabled])');

    // Flags are checked as `npm run fleet -- submit` checks them, naming the flag.
    await page.fill('input[name="flags"]', '--groups 0');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg[data-kind="error"]').innerText()).toMatch(/^--groups: must be at least 1, got 0/);
    await page.fill('input[name="flags"]', '--out runs/x');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg[data-kind="error"]').innerText()).toMatch(/^--out: is about local outputs/);
    await page.fill('input[name="flags"]', '--bogus 1');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg[data-kind="error"]').innerText()).toMatch(/^--bogus: Unknown option '--bogus'/);
    expect(await page.locator('.job').count()).toBe(0);

    await recordCards(page);
    await page.selectOption('select[name="model"]', 'tiny-gpt2');
    await page.fill('input[name="steps"]', '2');
    await page.fill('input[name="seed"]', '3');
    await page.fill('input[name="flags"]', '--id e2e-job --warmstart-steps 8 --groups 2 --group-size 2 --eval-episodes 0');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg').innerText()).toBe('Queued e2e-job.');
    const card = page.locator('.job[data-job="e2e-job"]');
    await card.waitFor();
    await page.waitForSelector('.job[data-job="e2e-job"][data-state="running"]', { timeout: 120_000 });
    expect(await card.locator('.host').innerText()).toBe('e2e-host');
    await page.waitForSelector('.job[data-job="e2e-job"][data-state="done"]', { timeout: 180_000 });
    expect(await card.locator('.curve').getAttribute('data-points')).toBe('2');
    expect(await card.locator('.progress').innerText()).toBe('RL step 2/2');
    expect(await card.locator('.reward').innerText()).toMatch(/^\d\.\d{3}$/);
    // Live, not replayed at the end: the card was seen running with one RL point before the second came.
    const log = await page.evaluate(() => (window as unknown as { cardLog: string[] }).cardLog);
    expect(log).toContain('e2e-job:running:1');
    expect(log.indexOf('e2e-job:running:1')).toBeLessThan(log.indexOf('e2e-job:done:2'));
    await screenshot(page, 'fleet-done');

    await card.locator('button.download').click();
    await page.waitForSelector('.job[data-job="e2e-job"][data-saved="yes"]', { timeout: 60_000 });
    expect(await card.locator('.job-msg').innerText()).toMatch(/^Saved as "e2e-job" \(version 1, \d+ KiB\) in this browser\.$/);

    // The train page (same origin, same IndexedDB) lists it after a reload, with the job's settings.
    const train = await context.newPage();
    const trainErrors = pageErrors(train);
    await train.goto(`${base}train.html`);
    const row = train.locator('tr[data-adapter="e2e-job"]');
    await row.waitFor({ timeout: 60_000 });
    expect(await row.locator('td').nth(1).innerText()).toBe('calculator');
    expect(await row.locator('td').nth(4).innerText()).toBe('8 SFT + 2 RL');
    await train.reload();
    await row.waitFor({ timeout: 60_000 });
    await screenshot(train, 'fleet-adapter-on-train-page');

    // A longer job, cancelled from its card: queued or running, it ends cancelled.
    await page.fill('input[name="steps"]', '50');
    await page.fill('input[name="flags"]', '--id e2e-cancel --warmstart-steps 50 --groups 2 --group-size 2 --eval-episodes 0');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg').innerText()).toBe('Queued e2e-cancel.');
    const second = page.locator('.job[data-job="e2e-cancel"]');
    await second.locator('button.cancel').click();
    await expect.poll(() => second.locator('.job-msg').innerText()).toMatch(/^(Cancelled \(it was queued\)|Cancel sent to its worker: it stops at its next step)\.$/);
    await page.waitForSelector('.job[data-job="e2e-cancel"][data-state="cancelled"]', { timeout: 120_000 });
    expect(await second.locator('button.cancel').count()).toBe(0);

    // A reloaded fleet page replays the finished job from the stream's start.
    await page.reload();
    await page.waitForSelector('.job[data-job="e2e-job"][data-state="done"]', { timeout: 60_000 });
    await page.waitForSelector('.job[data-job="e2e-cancel"][data-state="cancelled"]');
    expect(await card.locator('.curve').getAttribute('data-points')).toBe('2');
    expect(errors).toEqual([]);
    expect(trainErrors).toEqual([]);
    expect(workerLog).not.toMatch(/error/i);

    // The tab lends its device as a rollout worker: every slice of a job's RL steps is sampled here
    // (the trainer on llvmpipe, the tab on SwiftShader; the job's own seeds either way).
    await page.click('#lend');
    await page.waitForSelector('#lend-status[data-lending="yes"]');
    await page.fill('input[name="steps"]', '2');
    await page.fill('input[name="flags"]', '--id e2e-lend --warmstart-steps 4 --groups 2 --group-size 2 --eval-episodes 0');
    await page.click('#submit');
    await expect.poll(() => page.locator('#submit-msg').innerText()).toBe('Queued e2e-lend.');
    await page.waitForSelector('.job[data-job="e2e-lend"][data-state="done"]', { timeout: 240_000 });
    await expect.poll(() => page.locator('#lend-status').getAttribute('data-served')).toBe('4'); // 2 RL steps × 2 groups, a slice each
    expect(await page.locator('#lend-status').getAttribute('data-failed')).toBe('0');
    expect(workerLog).toMatch(/e2e-lend: RL step \d+'s rollout: 2 of 2 slices from rollout workers \(tab-[a-z0-9]+\) at version \d+, 0 sampled here/);
    expect(workerLog).not.toMatch(/e2e-lend: .*sampling it here/);
    expect(await page.locator('.job[data-job="e2e-lend"] .curve').getAttribute('data-points')).toBe('2');
    await page.click('#lend');
    await page.waitForSelector('#lend-status[data-lending="no"]'); // the tab's device is released
    // No screenshot here: page capture timed out (30 s, twice) once this tab had sampled on a WebGPU device of its own.
    expect(errors).toEqual([]);

    // The server goes away (the worker first): the page says it is reconnecting.
    await stopWorker();
    await server.stop();
    await page.waitForSelector('#conn[data-state="reconnecting"]', { timeout: 30_000 });
    expect(await page.locator('#conn').innerText()).toMatch(/^Lost the connection to ws:\/\/127\.0\.0\.1:\d+: reconnecting…$/);
    await context.close();
  });
});
