/**
 * Starts Debian's nats-server for a test or the fleet benchmark (Deno, and Node for the browser
 * suite's global setup): JetStream on, loopback only, free ports, a temporary store folder, and
 * with `websocket` a WebSocket listener for browsers; stopped by its PID. A missing nats-server
 * fails, naming the package — `.ci/run` installs it (apt-get install nats-server); the suites
 * never skip the fleet silently.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** ws://127.0.0.1:PORT when started with `websocket`. */
  readonly wsUrl?: string;
  readonly pid: number;
  readonly dir: string;
  stop(): Promise<void>;
}

/** The nats-server on PATH, or an Error naming the package. */
export function findNatsServer(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('nats-server is not on PATH: install it (Debian: apt-get install nats-server; .ci/run does) — the fleet tests need it');
  }
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function accepts(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const sock = new Socket();
    sock.once('connect', () => (sock.destroy(), resolve(true)));
    sock.once('error', () => (sock.destroy(), resolve(false)));
    sock.connect(port, '127.0.0.1');
  });
}

export async function startNatsServer(opts: { websocket?: boolean } = {}): Promise<NatsServer> {
  const bin = findNatsServer();
  const dir = await mkdtemp(join(tmpdir(), 'wt-nats-'));
  const port = await freePort();
  const wsPort = opts.websocket ? await freePort() : 0;
  const conf = join(dir, 'nats.conf');
  await writeFile(conf, [
    `listen: "127.0.0.1:${port}"`,
    `jetstream { store_dir: "${join(dir, 'js')}" }`,
    ...(opts.websocket ? [`websocket { listen: "127.0.0.1:${wsPort}", no_tls: true }`] : []),
  ].join('\n') + '\n');
  const child: ChildProcess = spawn(bin, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => (log += String(d)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; !(await accepts(port)) || (opts.websocket && !(await accepts(wsPort))); i++) {
    if (child.exitCode !== null || i > 200) {
      child.kill('SIGKILL');
      throw new Error(`nats-server did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    ...(opts.websocket ? { wsUrl: `ws://127.0.0.1:${wsPort}` } : {}),
    pid: child.pid!,
    dir,
    async stop() {
      // Once only: a second stop must not signal the PID again (it may belong to another process by then).
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
