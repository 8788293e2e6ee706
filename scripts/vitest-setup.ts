// vitest global setup: bundle kernels/*.wgsl before any test imports src/gpu, and fail the
// browser project early, with what to install, when no Chromium is there. For the browser
// project it also starts nats-server with a WebSocket listener (the fleet's browser tests read
// its URL with inject('natsWsUrl')); without nats-server those tests fail with what to install.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { type NatsServer, startNatsServer } from '../test/shared/nats_server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** ws://127.0.0.1:PORT of the suite's nats-server, or '' when it could not start. */
    natsWsUrl: string;
    /** Why there is no nats-server ('' when there is one). */
    natsError: string;
  }
}

interface Project {
  config: { name?: string; browser?: { enabled?: boolean } };
  provide(key: 'natsWsUrl' | 'natsError', value: string): void;
}

export default async function setup(project: Project): Promise<(() => Promise<void>) | void> {
  execFileSync(process.execPath, ['scripts/gen-kernels.mjs'], { stdio: 'inherit' });
  if (project.config.browser?.enabled) {
    const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
    if (!existsSync(chromium)) {
      throw new Error(`the browser suite needs Chromium at ${chromium}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH`);
    }
    let server: NatsServer | null = null;
    try {
      server = await startNatsServer({ websocket: true });
      project.provide('natsWsUrl', server.wsUrl!);
      project.provide('natsError', '');
    } catch (e) {
      project.provide('natsWsUrl', '');
      project.provide('natsError', (e as Error).message);
    }
    return async () => {
      await server?.stop();
    };
  }
}
