/**
 * Leases of the jobs a worker runs: in-progress acks sent from a separate thread (lease_thread.ts)
 * with its own NATS connection, every third of the ack wait, while the main thread says it is
 * alive at least every `maxSilenceMs`. The main thread of a Deno GPU host can be busy for seconds
 * at a time (llvmpipe compiles a pipeline synchronously), which must not cost a job its lease;
 * a host that is really gone (killed, stopped, or hung past the silence limit) still loses it.
 */
export type LeaseCommand =
  | { type: 'init'; servers: string[]; intervalMs: number; maxSilenceMs: number }
  | { type: 'hold'; id: string; reply: string }
  | { type: 'release'; id: string }
  | { type: 'alive' }
  | { type: 'close' };

export class LeaseKeeper {
  #thread: Worker;
  #alive: ReturnType<typeof setInterval>;
  #ready: Promise<void>;

  constructor(servers: string[], ackWaitMs: number, maxSilenceMs = Math.max(60_000, 10 * ackWaitMs)) {
    this.#thread = new Worker(new URL('./lease_thread.ts', import.meta.url), { type: 'module', name: 'webtinker-lease' });
    this.#ready = new Promise((resolve, reject) => {
      this.#thread.onmessage = (e: MessageEvent<{ type: string }>) => e.data.type === 'ready' && resolve();
      this.#thread.onerror = (e) => reject(new Error(`the lease thread failed: ${e.message}`));
    });
    const intervalMs = Math.max(100, Math.floor(ackWaitMs / 3));
    this.#post({ type: 'init', servers, intervalMs, maxSilenceMs });
    this.#alive = setInterval(() => this.#post({ type: 'alive' }), Math.min(intervalMs, 1000));
  }

  #post(c: LeaseCommand): void {
    this.#thread.postMessage(c);
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  /** Renew the lease of message `reply` (its ack subject) until released. */
  hold(id: string, reply: string): void {
    this.#post({ type: 'hold', id, reply });
  }

  release(id: string): void {
    this.#post({ type: 'release', id });
  }

  async close(): Promise<void> {
    clearInterval(this.#alive);
    const closed = new Promise<void>((r) => (this.#thread.onmessage = (e: MessageEvent<{ type: string }>) => e.data.type === 'closed' && r()));
    this.#post({ type: 'close' });
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
    this.#thread.terminate();
  }
}
