// `npm test`: the one test command. Runs, in order, the type check, the Node suite (vitest), the
// Chromium suite (vitest browser mode, SwiftShader WebGPU), the Deno suite (deno test, Deno's
// WebGPU) and the end-to-end suite (the built demo pages in Chromium, test/e2e/), then prints one
// summary line per suite and a closing "N passed, N failed" line.
// A suite that ran no test counts as a failure: none may pass vacuously.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { denoBin, denoEnv, ensureInstalled, root } from './env.mjs';

ensureInstalled();
spawnSync(process.execPath, ['scripts/gen-kernels.mjs'], { cwd: root, stdio: 'inherit' });
const only = process.argv.slice(2); // e.g. `npm test -- node deno`
const want = (s) => only.length === 0 || only.includes(s);
const out = mkdtempSync(join(tmpdir(), 'webtinker-test-'));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const results = [];

function run(name, cmd, args, env = process.env) {
  console.log(`\n=== ${name}: ${[cmd.replace(root + '/', ''), ...args].join(' ')}`);
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  return { status: r.status ?? 1, seconds: (Date.now() - t0) / 1000 };
}

function vitestCounts(file) {
  try {
    const j = JSON.parse(readFileSync(file, 'utf8'));
    return { passed: j.numPassedTests, failed: j.numFailedTests + (j.numTotalTestSuites === 0 ? 1 : 0), skipped: j.numPendingTests + j.numTodoTests };
  } catch {
    return null;
  }
}

function junitCounts(file) {
  try {
    const x = readFileSync(file, 'utf8');
    const m = /<testsuites[^>]*tests="(\d+)"[^>]*failures="(\d+)"[^>]*errors="(\d+)"/.exec(x);
    if (!m) return null;
    const tests = Number(m[1]);
    const failed = Number(m[2]) + Number(m[3]);
    const skipped = (x.match(/<skipped/g) ?? []).length;
    return { passed: tests - failed - skipped, failed, skipped };
  } catch {
    return null;
  }
}

if (want('typecheck')) {
  const r = run('typecheck', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
  results.push({ suite: 'typecheck', ...r, counts: null });
}
for (const project of ['node', 'browser']) {
  if (!want(project)) continue;
  const file = join(out, `${project}.json`);
  const r = run(project, bin('vitest'), ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${file}`]);
  results.push({ suite: project, ...r, counts: vitestCounts(file) });
}
if (want('deno')) {
  const file = join(out, 'deno.xml');
  const r = run('deno', denoBin(), ['test', '--allow-read', '--allow-write', '--allow-env', '--allow-net=127.0.0.1', '--allow-run', `--junit-path=${file}`, 'test/deno/'], denoEnv());
  results.push({ suite: 'deno', ...r, counts: junitCounts(file) });
}
if (want('e2e')) {
  const file = join(out, 'e2e.json');
  const r = run('e2e', bin('vitest'), ['run', '--config', 'test/e2e/vitest.config.ts', '--reporter=default', '--reporter=json', `--outputFile.json=${file}`]);
  results.push({ suite: 'e2e', ...r, counts: vitestCounts(file) });
}

let passed = 0;
let failed = 0;
let ok = true;
console.log('\n=== summary');
for (const { suite, status, seconds, counts } of results) {
  let line = `${suite.padEnd(10)} exit ${status}  ${seconds.toFixed(1)}s`;
  if (suite !== 'typecheck') {
    if (!counts || counts.passed + counts.failed === 0) {
      line += '  ran no test — counted as a failure';
      failed++;
      ok = false;
    } else {
      line += `  ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
      passed += counts.passed;
      failed += counts.failed;
    }
  }
  if (status !== 0) ok = false;
  console.log(line);
}
if (!ok && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(ok ? 0 : 1);
