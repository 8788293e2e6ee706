/**
 * The in-page scheduler: one GPU, many jobs, one quantum at a time.
 *
 * A job is ordinary async code (an inference server, an RL loop) that asks for device time with
 * `await scheduler.quantum(jobId, fn)`, where `fn` records and submits one quantum of GPU work —
 * a chunk of decode tokens, a forward/backward micro-batch, an optimizer step — usually a call
 * into the GPU worker. Between quanta the job does its CPU work (environments, advantages), and
 * the device serves other jobs meanwhile: that is how CPU and GPU work overlap.
 *
 * Which request runs next, at every quantum boundary:
 *   1. priority class: 'interactive' before 'normal' before 'background';
 *   2. within a class, start-time fair queuing (Goyal, Vin & Cheng, SIGCOMM 1996) by weight: a
 *      job's head request gets the start tag S = max(v, F), where F is the finish tag of the job's
 *      last quantum (S + device time / weight) and v the class's virtual time (the start tag of the
 *      quantum last dispatched); the smallest S goes first. A job that was idle re-enters at v, so
 *      idling earns no credit, and shares converge to the weights.
 *   Anticipation: most jobs ask for one quantum at a time (await forwardBackward, then ask for
 *   optimStep), and their next request comes a few promise ticks after the last one ends. For a
 *   moment after a job's quantum, a request that would not beat that job's next one (its class
 *   and start tag) waits for it — otherwise strict alternation would give every such job an equal
 *   share whatever its weight. The wait ends at the job's next request, or after `anticipationMs`
 *   (2 ms: enough for a GPU worker's next decode-chunk request to arrive, small beside a quantum).
 * Device time is measured per quantum (the quantum's own GPU time when it reports one, else wall
 * time) and charged to its job.
 *
 * Admission control: every job declares its estimated GPU bytes. A job larger than the budget is
 * refused with an AdmissionError naming the numbers; one that fits the budget but not the space
 * left waits (state 'waiting') until earlier jobs finish. Nothing is started that cannot fit.
 */
import { AdmissionError, JobCancelledError, JobStateError } from './errors.ts';

export type JobKind = 'inference' | 'sft' | 'lora_rl' | 'full_rl';
export type PriorityClass = 'interactive' | 'normal' | 'background';
export type JobState = 'waiting' | 'active' | 'paused' | 'finished' | 'cancelled';

const CLASS_RANK: Record<PriorityClass, number> = { interactive: 0, normal: 1, background: 2 };

export interface JobSpec {
  id: string;
  kind: JobKind;
  priority?: PriorityClass;
  /** Relative share of device time within its class (default 1). */
  weight?: number;
  /** Estimated peak GPU bytes (weights it owns, optimizer state, activations, KV cache). */
  memoryBytes: number;
}

export interface JobStats {
  id: string;
  kind: JobKind;
  priority: PriorityClass;
  weight: number;
  state: JobState;
  memoryBytes: number;
  quanta: number;
  deviceMs: number;
  /** Fraction of all device time spent so far that went to this job. */
  share: number;
  /** Why the job was paused, when it was paused for an error (cleared by resume). */
  error?: string;
}

/** What a quantum may report; anything else it returns is passed through. */
export interface QuantumReport {
  /** GPU time of the quantum in ms (from timestamp queries); wall time is used when absent. */
  deviceMs?: number;
}

export interface SchedulerOptions {
  /** GPU bytes the jobs may use together. */
  memoryBudgetBytes: number;
  /** Clock in ms (injectable for tests). */
  now?: () => number;
  /** How long a finished job's next request is anticipated (see the header), in ms. Default 2. */
  anticipationMs?: number;
}

export type SchedulerEvent =
  | { type: 'quantum'; jobId: string; deviceMs: number; label?: string }
  | { type: 'state'; jobId: string; state: JobState; error?: string };

interface Request {
  run: () => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  label?: string;
}

interface Job {
  spec: Required<JobSpec>;
  state: JobState;
  queue: Request[];
  /** Finish tag of its last quantum (virtual time). */
  vtime: number;
  /** Start tag of its head request (valid while the queue is not empty). */
  start: number;
  quanta: number;
  deviceMs: number;
  error?: string;
  admitted: Promise<void>;
  admit: () => void;
  refuse: (e: unknown) => void;
}

export class Scheduler {
  readonly memoryBudgetBytes: number;
  #now: () => number;
  #anticipationMs: number;
  #jobs = new Map<string, Job>();
  #order: string[] = []; // admission order (FIFO for waiting jobs)
  #running: Job | null = null;
  /** Virtual time per class: the start tag of the quantum last dispatched in it. */
  #vsys: Record<PriorityClass, number> = { interactive: 0, normal: 0, background: 0 };
  /** The job whose next request is anticipated (see the header), until its macrotask ends. */
  #favored: Job | null = null;
  #totalDeviceMs = 0;
  #busyMs = 0;
  #startedAt: number;
  #listeners = new Set<(e: SchedulerEvent) => void>();

  constructor(opts: SchedulerOptions) {
    if (!(opts.memoryBudgetBytes > 0)) throw new JobStateError(`memoryBudgetBytes must be positive, got ${opts.memoryBudgetBytes}`);
    this.memoryBudgetBytes = opts.memoryBudgetBytes;
    this.#now = opts.now ?? (() => performance.now());
    this.#anticipationMs = opts.anticipationMs ?? 2;
    this.#startedAt = this.#now();
  }

  on(f: (e: SchedulerEvent) => void): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  #emit(e: SchedulerEvent): void {
    for (const f of this.#listeners) f(e);
  }

  #setState(job: Job, state: JobState): void {
    job.state = state;
    this.#emit({ type: 'state', jobId: job.spec.id, state, ...(job.error !== undefined ? { error: job.error } : {}) });
  }

  /** Bytes of the jobs holding memory (active or paused). */
  get usedBytes(): number {
    let b = 0;
    for (const j of this.#jobs.values()) if (j.state === 'active' || j.state === 'paused') b += j.spec.memoryBytes;
    return b;
  }

  /**
   * Register a job. Resolves when it is admitted (memory reserved); throws AdmissionError at once
   * when it can never fit.
   */
  submit(spec: JobSpec): Promise<void> {
    const old = this.#jobs.get(spec.id);
    if (old && old.state !== 'finished' && old.state !== 'cancelled') throw new JobStateError(`a job with id "${spec.id}" already exists (${old.state})`);
    if (old) {
      // An ended job's id may be used again (a job re-created after a device loss): the new job replaces its record.
      this.#jobs.delete(spec.id);
      this.#order = this.#order.filter((id) => id !== spec.id);
    }
    const weight = spec.weight ?? 1;
    if (!(weight > 0) || !Number.isFinite(weight)) throw new JobStateError(`job "${spec.id}": weight must be a positive number, got ${weight}`);
    if (!(spec.memoryBytes >= 0)) throw new JobStateError(`job "${spec.id}": memoryBytes must be ≥ 0, got ${spec.memoryBytes}`);
    if (spec.memoryBytes > this.memoryBudgetBytes) {
      throw new AdmissionError(spec.id, `needs an estimated ${fmtBytes(spec.memoryBytes)} of GPU memory, more than the ${fmtBytes(this.memoryBudgetBytes)} budget of this device — use a smaller model, LoRA instead of full fine-tuning, a smaller batch, or recomputation`, {
        neededBytes: spec.memoryBytes, limitBytes: this.memoryBudgetBytes, limit: 'memoryBudgetBytes',
      });
    }
    let admit!: () => void;
    let refuse!: (e: unknown) => void;
    const admitted = new Promise<void>((res, rej) => {
      admit = res;
      refuse = rej;
    });
    const job: Job = {
      spec: { id: spec.id, kind: spec.kind, priority: spec.priority ?? (spec.kind === 'inference' ? 'interactive' : 'normal'), weight, memoryBytes: spec.memoryBytes },
      state: 'waiting',
      queue: [],
      vtime: 0,
      start: 0,
      quanta: 0,
      deviceMs: 0,
      admitted,
      admit,
      refuse,
    };
    this.#jobs.set(spec.id, job);
    this.#order.push(spec.id);
    this.#emit({ type: 'state', jobId: spec.id, state: 'waiting' });
    this.#admitWaiting();
    return admitted;
  }

  #admitWaiting(): void {
    for (const id of this.#order) {
      const j = this.#jobs.get(id)!;
      if (j.state !== 'waiting') continue;
      if (this.usedBytes + j.spec.memoryBytes > this.memoryBudgetBytes) break; // FIFO: no overtaking
      j.vtime = this.#vsys[j.spec.priority];
      this.#setState(j, 'active');
      j.admit();
    }
  }

  /** The start tag a job's next request would get now. */
  #startTag(j: Job): number {
    return Math.max(this.#vsys[j.spec.priority], j.vtime);
  }

  /** Run `fn` on the device as one quantum of job `jobId`, when the scheduler gives it its turn. */
  quantum<T>(jobId: string, fn: () => Promise<T>, label?: string): Promise<T> {
    const job = this.#jobs.get(jobId);
    if (!job) return Promise.reject(new JobStateError(`no job "${jobId}"`));
    if (job.state === 'cancelled' || job.state === 'finished') return Promise.reject(new JobCancelledError(jobId, `is ${job.state}`));
    if (job.state === 'waiting') return Promise.reject(new JobStateError(`job "${jobId}" is not admitted yet: await submit() first`));
    return new Promise<T>((resolve, reject) => {
      if (job.queue.length === 0) job.start = this.#startTag(job); // no credit for idling
      job.queue.push({ run: fn, resolve: resolve as (v: unknown) => void, reject, label });
      this.#pump();
    });
  }

  #pick(): Job | null {
    let best: Job | null = null;
    for (const j of this.#jobs.values()) {
      if (j.state !== 'active' || j.queue.length === 0) continue;
      if (!best) {
        best = j;
        continue;
      }
      const c = CLASS_RANK[j.spec.priority] - CLASS_RANK[best.spec.priority];
      if (c < 0 || (c === 0 && j.start < best.start)) best = j;
    }
    return best;
  }

  /** Whether queued job `j` goes before the anticipated next request of `f`. */
  #beats(j: Job, f: Job): boolean {
    const c = CLASS_RANK[j.spec.priority] - CLASS_RANK[f.spec.priority];
    return c < 0 || (c === 0 && j.start < this.#startTag(f));
  }

  #pump(): void {
    if (this.#running) return;
    const job = this.#pick();
    if (!job) return;
    const f = this.#favored;
    if (f && job !== f && f.state === 'active' && !this.#beats(job, f)) return; // anticipating f
    this.#favored = null;
    const req = job.queue.shift()!;
    this.#running = job;
    const start = job.start;
    this.#vsys[job.spec.priority] = start;
    const t0 = this.#now();
    Promise.resolve().then(req.run).then(
      (value) => {
        const reported = (value as QuantumReport | null)?.deviceMs;
        this.#charge(job, start, typeof reported === 'number' ? reported : this.#now() - t0, this.#now() - t0, req.label);
        req.resolve(value);
      },
      (err) => {
        this.#charge(job, start, this.#now() - t0, this.#now() - t0, req.label);
        req.reject(err);
      },
    ).finally(() => {
      this.#running = null;
      if (job.state === 'active' && job.queue.length === 0) {
        this.#favored = job; // anticipation (see the header)
        setTimeout(() => {
          if (this.#favored !== job) return;
          this.#favored = null;
          this.#pump();
        }, this.#anticipationMs);
      }
      this.#pump();
    });
  }

  /** Charge a quantum that started at virtual time `start`. */
  #charge(job: Job, start: number, deviceMs: number, wallMs: number, label?: string): void {
    job.quanta++;
    job.deviceMs += deviceMs;
    job.vtime = start + deviceMs / job.spec.weight;
    if (job.queue.length > 0) job.start = this.#startTag(job);
    this.#totalDeviceMs += deviceMs;
    this.#busyMs += wallMs;
    this.#emit({ type: 'quantum', jobId: job.spec.id, deviceMs, ...(label ? { label } : {}) });
  }

  /**
   * Stop giving the job quanta (its queued requests wait); it keeps its memory. `error` says why
   * when a fault paused it (in its stats and the state event, until resume).
   */
  pause(jobId: string, error?: string): void {
    const j = this.#get(jobId);
    if (j.state !== 'active') throw new JobStateError(`job "${jobId}" is ${j.state}; only an active job can be paused`);
    if (error !== undefined) j.error = error;
    this.#setState(j, 'paused');
  }

  resume(jobId: string): void {
    const j = this.#get(jobId);
    if (j.state !== 'paused') throw new JobStateError(`job "${jobId}" is ${j.state}; only a paused job can be resumed`);
    if (j.queue.length > 0) j.start = this.#startTag(j);
    delete j.error;
    this.#setState(j, 'active');
    this.#pump();
  }

  /** Change a job's class or weight; takes effect at the next quantum boundary. */
  reprioritize(jobId: string, change: { priority?: PriorityClass; weight?: number }): void {
    const j = this.#get(jobId);
    if (change.weight !== undefined) {
      if (!(change.weight > 0)) throw new JobStateError(`job "${jobId}": weight must be positive, got ${change.weight}`);
      j.spec.weight = change.weight;
    }
    if (change.priority !== undefined && change.priority !== j.spec.priority) {
      j.spec.priority = change.priority;
      j.vtime = this.#vsys[change.priority];
      if (j.queue.length > 0) j.start = j.vtime;
    }
  }

  /** Cancel: queued requests reject with JobCancelledError; a running quantum completes; memory is freed. */
  cancel(jobId: string): void {
    this.#end(jobId, 'cancelled');
  }

  /** The job is done: frees its memory reservation so waiting jobs can be admitted. */
  finish(jobId: string): void {
    this.#end(jobId, 'finished');
  }

  #end(jobId: string, state: 'cancelled' | 'finished'): void {
    const j = this.#get(jobId);
    if (j.state === 'cancelled' || j.state === 'finished') return;
    const wasWaiting = j.state === 'waiting';
    this.#setState(j, state);
    for (const r of j.queue.splice(0)) r.reject(new JobCancelledError(jobId, state === 'cancelled' ? 'was cancelled' : 'has finished'));
    if (wasWaiting) j.refuse(new JobCancelledError(jobId, state === 'cancelled' ? 'was cancelled before admission' : 'finished before admission'));
    this.#admitWaiting();
    this.#pump();
  }

  #get(jobId: string): Job {
    const j = this.#jobs.get(jobId);
    if (!j) throw new JobStateError(`no job "${jobId}"`);
    return j;
  }

  stats(jobId: string): JobStats {
    const j = this.#get(jobId);
    return {
      id: j.spec.id,
      kind: j.spec.kind,
      priority: j.spec.priority,
      weight: j.spec.weight,
      state: j.state,
      memoryBytes: j.spec.memoryBytes,
      quanta: j.quanta,
      deviceMs: j.deviceMs,
      share: this.#totalDeviceMs > 0 ? j.deviceMs / this.#totalDeviceMs : 0,
      ...(j.error !== undefined ? { error: j.error } : {}),
    };
  }

  jobs(): JobStats[] {
    return [...this.#jobs.keys()].map((id) => this.stats(id));
  }

  /** Device time (ms) charged to all jobs so far. */
  get totalDeviceMs(): number {
    return this.#totalDeviceMs;
  }

  /** Wall time (ms) quanta have run for since construction (busy fraction over a window: Δ busyMs / Δ time). */
  get busyMs(): number {
    return this.#busyMs;
  }

  /** Fraction of wall time since construction during which a quantum was running. */
  busyFraction(): number {
    const elapsed = this.#now() - this.#startedAt;
    return elapsed > 0 ? Math.min(1, this.#busyMs / elapsed) : 0;
  }
}

function fmtBytes(b: number): string {
  if (b >= 2 ** 30) return `${(b / 2 ** 30).toFixed(2)} GiB`;
  if (b >= 2 ** 20) return `${(b / 2 ** 20).toFixed(1)} MiB`;
  return `${b} B`;
}
