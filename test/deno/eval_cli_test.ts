// Deno suite: `npm run eval -- RUN_DIR` re-measures a trained run from its folder alone. With the
// run's seed and episode count it measures the run's own final evaluation again: the same success
// bitwise (LoRA on a from-scratch base read back from base/, and a full-parameter run).
import { assert } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { evalRun } from '../../src/cli/eval.ts';

const TRAIN = fileURLToPath(new URL('../../src/cli/train.ts', import.meta.url));
const EVAL = fileURLToPath(new URL('../../src/cli/eval.ts', import.meta.url));
const CHAT = fileURLToPath(new URL('../../src/cli/chat.ts', import.meta.url));

/** `npm run chat -- ARGS` with `input` on stdin. */
function chat(args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = execFile(Deno.execPath(), ['run', '--allow-read', '--allow-write', '--allow-env', CHAT, ...args], { env: { ...Deno.env.toObject(), NO_COLOR: '1' } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
    p.stdin!.end(input);
  });
}

function deno(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(Deno.execPath(), ['run', '--allow-read', '--allow-write', '--allow-env', script, ...args], { env: { ...Deno.env.toObject(), NO_COLOR: '1' } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

Deno.test('eval: a run folder re-measured gives its final evaluation again (LoRA and full); bad input is refused', async () => {
  const root = await mkdtemp(join(tmpdir(), 'wt-eval-'));
  try {
    for (const mode of [[], ['--full']]) {
      const dir = join(root, mode.length ? 'full' : 'lora');
      const flags = ['--model', 'tiny-gpt2', '--steps', '2', '--warmstart-steps', '20', '--groups', '2', '--group-size', '2', '--eval-episodes', '12', '--seed', '5', ...mode, '--out', dir, '-q'];
      const t = await deno(TRAIN, flags);
      assert.strictEqual(t.code, 0, t.stderr);
      const summary = JSON.parse(await readFile(join(dir, 'summary.json'), 'utf8'));
      const r = await evalRun(dir);
      assert.strictEqual(r.episodes, 12);
      assert.strictEqual(r.seed, 5);
      assert.strictEqual(r.success, summary.successAfter, `${mode.join('') || 'lora'}: the run's final evaluation again`);
      assert.strictEqual(r.meanReward, summary.rewardAfter);
    }
    const cli = await deno(EVAL, [join(root, 'lora'), '--episodes', '4', '--seed', '9']);
    assert.strictEqual(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^calculator: held-out success \(reward > 0\) \d+\.\d% over 4 episodes \(seed 9\), mean reward \d\.\d{3} \(the run's final evaluation said \d+\.\d%\)\n$/);
    const bad = await deno(EVAL, [join(root, 'nope')]);
    assert.strictEqual(bad.code, 2);
    assert.match(bad.stderr, /run\.json cannot be read/);
    assert.strictEqual((await deno(EVAL, [join(root, 'lora'), '--episodes', '0'])).code, 2);
    // chat: one reply per prompt line, greedy by default (the same replies twice).
    const said = await chat([join(root, 'lora')], 'What is 2+3?\n\nWhat is 12*7?\n');
    assert.strictEqual(said.code, 0, said.stderr);
    assert.isAbove(said.stdout.length, 0);
    assert.strictEqual((await chat([join(root, 'lora')], 'What is 2+3?\n\nWhat is 12*7?\n')).stdout, said.stdout);
    assert.strictEqual((await chat([join(root, 'lora'), '--temperature', '-1'], '')).code, 2);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
