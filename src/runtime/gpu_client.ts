/**
 * The page's handle on the GPU worker: starts it, initializes its device, and recovers from the
 * two faults a long run meets —
 *   - device lost (driver reset, `device.destroy()`): the worker reports it; the client asks for
 *     a fresh device and emits 'recovered' so the runtime reloads its jobs from checkpoints;
 *   - worker crash (an uncaught error): the client terminates it, rejects the calls in flight with
 *     WorkerCrashedError (comlink alone would leave them pending forever), starts a new worker,
 *     and emits 'restarted'.
 * Calls go through `call(api => ...)`, which is what makes the in-flight rejection possible.
 */
import * as Comlink from 'comlink';
import { WebtinkerError } from '../errors.ts';
import type { AdapterSummary } from '../gpu/device.ts';
import type { GpuWorkerApi, WorkerEvent, WorkerInitOptions } from './protocol.ts';

export class WorkerCrashedError extends WebtinkerError {
  constructor(message: string) {
    super('worker-crashed', `the GPU worker crashed: ${message}`);
  }
}

export type GpuClientEvent =
  | { type: 'device-lost'; reason: string; message: string }
  | { type: 'recovered'; adapter: AdapterSummary }
  | { type: 'worker-crashed'; message: string }
  | { type: 'restarted'; adapter: AdapterSummary }
  | { type: 'gpu-error'; message: string };

export interface GpuClientOptions {
  init?: WorkerInitOptions;
  /** Re-acquire a device after a loss and restart a crashed worker (default true). */
  autoRecover?: boolean;
  /** Start a worker; the default runs src/runtime/gpu_worker.ts as a module Worker. */
  spawn?: () => Worker;
}

function defaultSpawn(): Worker {
  return new Worker(new URL('./gpu_worker.ts', import.meta.url), { type: 'module', name: 'webtinker-gpu' });
}

export class GpuClient {
  readonly options: GpuClientOptions;
  adapter!: AdapterSummary;
  #worker!: Worker;
  #api!: Comlink.Remote<GpuWorkerApi>;
  #crash!: Promise<never>;
  #listeners = new Set<(e: GpuClientEvent) => void>();
  #closed = false;
  /** Resolves when a recovery in progress is over. */
  #recovering: Promise<void> = Promise.resolve();

  private constructor(options: GpuClientOptions) {
    this.options = options;
  }

  /** Start the worker and acquire its device. */
  static async start(options: GpuClientOptions = {}): Promise<GpuClient> {
    const c = new GpuClient(options);
    await c.#startWorker();
    return c;
  }

  on(f: (e: GpuClientEvent) => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  #emit(e: GpuClientEvent): void {
    for (const f of this.#listeners) f(e);
  }

  async #startWorker(): Promise<void> {
    const worker = (this.options.spawn ?? defaultSpawn)();
    this.#worker = worker;
    this.#api = Comlink.wrap<GpuWorkerApi>(worker);
    this.#crash = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (ev: Event) => {
        ev.preventDefault(); // Deno would otherwise end the process
        const message = (ev as ErrorEvent).message || 'uncaught error';
        reject(new WorkerCrashedError(message));
        if (this.#worker === worker) this.#onCrash(message);
      });
    });
    this.#crash.catch(() => {});
    await this.#api.subscribe(Comlink.proxy((e: WorkerEvent) => this.#onWorkerEvent(e)));
    this.adapter = await this.call((api) => api.init(this.options.init));
  }

  // Each handler sets #recovering before emitting, so a listener may await settled() at once.
  #onWorkerEvent(e: WorkerEvent): void {
    if (e.type === 'device-lost' && this.options.autoRecover !== false && !this.#closed) {
      this.#recovering = (async () => {
        this.adapter = await this.call((api) => api.init(this.options.init));
        this.#emit({ type: 'recovered', adapter: this.adapter });
      })();
      this.#recovering.catch(() => {});
    }
    this.#emit(e);
  }

  #onCrash(message: string): void {
    this.#worker.terminate();
    if (this.options.autoRecover !== false && !this.#closed) {
      this.#recovering = (async () => {
        await this.#startWorker();
        this.#emit({ type: 'restarted', adapter: this.adapter });
      })();
      this.#recovering.catch(() => {});
    }
    this.#emit({ type: 'worker-crashed', message });
  }

  /** Call the worker; rejects with WorkerCrashedError if the worker dies during the call. */
  call<T>(f: (api: Comlink.Remote<GpuWorkerApi>) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new WebtinkerError('gpu-client-closed', 'the GPU client was closed'));
    return Promise.race([f(this.#api), this.#crash]);
  }

  /** Wait for a recovery in progress (after 'device-lost' or 'worker-crashed') to finish. */
  settled(): Promise<void> {
    return this.#recovering;
  }

  /** Stop the worker; every GPU buffer goes with it. */
  close(): void {
    this.#closed = true;
    this.#api[Comlink.releaseProxy]();
    this.#worker.terminate();
  }
}
