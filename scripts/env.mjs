// Shared by the npm entry points: make sure dependencies are installed, and give Deno's WebGPU
// the environment it wants (Vulkan where a Vulkan driver is installed, a runtime dir).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `npm ci` when node_modules is missing or older than the lock file's packages. */
export function ensureInstalled() {
  if (!existsSync(join(root, 'node_modules', '.package-lock.json'))) {
    console.error('webtinker: installing dependencies (npm ci) ...');
    execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  }
}

function hasVulkanDriver() {
  for (const d of ['/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d', '/usr/local/share/vulkan/icd.d']) {
    try {
      if (readdirSync(d).some((f) => f.endsWith('.json'))) return true;
    } catch { /* no such dir */ }
  }
  return false;
}

/** Environment for a Deno process that uses WebGPU. */
export function denoEnv(base = process.env) {
  const env = { ...base };
  if (!env.XDG_RUNTIME_DIR) {
    env.XDG_RUNTIME_DIR = join(tmpdir(), `webtinker-xdg-${process.getuid?.() ?? 'user'}`);
    mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
  }
  if (!env.DENO_WEBGPU_BACKEND && process.platform === 'linux' && hasVulkanDriver()) env.DENO_WEBGPU_BACKEND = 'vulkan';
  // No colour codes in CI or when the output goes to a file or a pipe (logs stay plain text).
  env.NO_COLOR ??= env.CI || !process.stdout.isTTY || !process.stderr.isTTY ? '1' : undefined;
  if (env.NO_COLOR === undefined) delete env.NO_COLOR;
  return env;
}

/** The Deno binary installed by the `deno` npm package. */
export function denoBin() {
  const exe = join(root, 'node_modules', 'deno', process.platform === 'win32' ? 'deno.exe' : 'deno');
  return existsSync(exe) ? exe : join(root, 'node_modules', '.bin', 'deno');
}
