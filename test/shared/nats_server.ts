/**
 * Starts Debian's nats-server for a Deno test or the fleet benchmark (Deno only): JetStream on,
 * loopback only, a free port, a temporary store folder; stopped by its PID. A missing nats-server fails the test, naming the package —
 * `.ci/run` installs it (apt-get install nats-server); the suite never skips the fleet silently.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly dir: string;
  stop(): Promise<void>;
}

function findNatsServer(): string {
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

export async function startNatsServer(): Promise<NatsServer> {
  const bin = findNatsServer();
  const dir = await Deno.makeTempDir({ prefix: 'wt-nats-' });
  const port = await freePort();
  const child: ChildProcess = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => (log += String(d)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; !(await accepts(port)); i++) {
    if (child.exitCode !== null || i > 200) {
      child.kill('SIGKILL');
      throw new Error(`nats-server did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    dir,
    async stop() {
      if (child.exitCode === null) process.kill(child.pid!, 'SIGKILL');
      await exited;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
