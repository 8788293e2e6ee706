/**
 * Fleet processes for the Deno suites and the fleet bench: `npm run fleet -- worker` (or
 * `rollout-worker`) as a child Deno process whose stderr is kept, a CLI run to its end, signals
 * by PID, and metrics lines without their timings (which differ between runs).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const FLEET_CLI = fileURLToPath(new URL('../../src/fleet/cli.ts', import.meta.url));
const DENO_FLAGS = ['run', '--allow-read', '--allow-write', '--allow-env', '--allow-net', '--allow-sys'];
/** Time measurements differ between runs; everything else in a metrics line must not. */
export const TIMING = new Set(['trainSeconds', 'sampleSeconds', 'tokensPerSecond']);

export interface FleetProc {
  name: string;
  proc: ChildProcess;
  log: string;
}

/** `npm run fleet -- COMMAND --nats URL --name NAME ...args` (default command: worker, ack wait 2 s, 3 attempts). */
export function startWorker(url: string, name: string, args: string[] = ['--ack-wait', '2', '--max-deliver', '3'], command: 'worker' | 'rollout-worker' = 'worker'): FleetProc {
  const proc = spawn(Deno.execPath(), [...DENO_FLAGS, FLEET_CLI, command, '--nats', url, '--name', name, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const w: FleetProc = { name, proc, log: '' };
  proc.stderr!.on('data', (d) => (w.log += String(d)));
  return w;
}

/** Run `npm run fleet -- ARGS` (the Deno entry) to its end. */
export function fleetCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(Deno.execPath(), [...DENO_FLAGS, FLEET_CLI, ...args], { env: { ...Deno.env.toObject(), NO_COLOR: '1' } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

export function signal(w: FleetProc, sig: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void {
  process.kill(w.proc.pid!, sig);
}

/** Kill every process still running (continued first, in case it was stopped) and wait for them. */
export async function stopAll(procs: readonly FleetProc[]): Promise<void> {
  for (const w of procs) {
    if (w.proc.exitCode === null && w.proc.signalCode === null) {
      try {
        signal(w, 'SIGCONT');
        signal(w, 'SIGKILL');
      } catch { /* exited */ }
    }
  }
  await Promise.all(procs.map((w) => (w.proc.exitCode !== null || w.proc.signalCode !== null ? undefined : new Promise((r) => w.proc.once('exit', r)))));
}

export function withoutTimings(jsonl: string): unknown[] {
  return jsonl.trim().split('\n').map((l) => Object.fromEntries(Object.entries(JSON.parse(l)).filter(([k]) => !TIMING.has(k))));
}
