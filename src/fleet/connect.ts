/**
 * Connecting a Deno or Node process to the fleet's NATS server (TCP); browsers connect over
 * WebSocket instead (browser.ts). The shared store is opened over either by store.ts.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConfigError } from '../errors.ts';

export { API_TIMEOUT_MS, openStore } from './store.ts';

/** Connect to `url` (nats://host:port); a ConfigError naming --nats when it is unreachable. */
export async function connectFleet(url: string, name = 'webtinker'): Promise<NatsConnection> {
  try {
    return await connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
  } catch (e) {
    throw new ConfigError('--nats', `cannot connect to ${url}: ${(e as Error).message} (is nats-server running with -js?)`);
  }
}
