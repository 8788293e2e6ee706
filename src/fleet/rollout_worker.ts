/**
 * A rollout worker: samples slices of other hosts' RL steps (rollout_protocol.ts) on this host's
 * device — `npm run fleet -- rollout-worker --nats URL`, or any process or browser tab (over a
 * WebSocket connection, browser.ts) that runs `new RolloutWorker(nc, ...)`. Browser-safe.
 *
 * It answers the trainers' probe, takes tasks from the shared queue group, says `taken` at once
 * and `alive` every second (from a thread of its own under Deno: `keepAlive`), and runs its tasks
 * one at a time (one device): it loads the task's
 * policy version from the shared store — a LoRA adapter on the job's base, or every parameter —
 * keeping the versions it has loaded (the last two per job; the base per job), samples the
 * slice's episodes under their own ids with rolloutPart, exactly as the trainer would, and
 * returns the part as a lossless frame (rollout_wire.ts).
 */
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { acquireGpu, type GpuContext } from '../gpu/device.ts';
import { ByteTokenizer } from '../model/tokenizer/byte.ts';
import type { SamplingClient } from '../runtime/clients.ts';
import { type AgentSettings, type RolloutPart, rolloutPart } from '../runtime/evaluate.ts';
import { jobEnv, type JobEnv } from '../runtime/job_envs.ts';
import { LocalService } from '../runtime/local_service.ts';
import type { KvStore } from '../runtime/store/kv.ts';
import { ROLLOUT_HELLO_SUBJECT, ROLLOUT_QUEUE, ROLLOUT_TASK_SUBJECT, type RolloutTask, TASK_FORMAT, type TaskReply } from './rollout_protocol.ts';
import { packFrame, unpackFrame } from './rollout_wire.ts';
import { openStore } from './store.ts';

export interface RolloutWorkerOptions {
  readonly name: string;
  /** The device to sample on (default: acquired at the first task, destroyed by stop()). */
  readonly gpu?: GpuContext;
  /** The shared store (default: the fleet's, over `nc`). */
  readonly store?: KvStore;
  readonly log?: (line: string) => void;
  /**
   * Who says `alive` for the tasks taken (default: a timer on this thread). A Deno host passes a
   * LeaseKeeper (lease.ts): its thread keeps talking while this one compiles pipelines for seconds.
   */
  readonly keepAlive?: { hold(id: string, reply: string): void; release(id: string): void };
}

/** What a worker keeps of one job: its base model, its loaded versions, its agent. */
interface JobState {
  readonly key: string;
  readonly env: JobEnv;
  readonly agent: AgentSettings;
  baseId: string | null;
  readonly versions: Map<string, { sampler: SamplingClient; modelId: string | null }>;
}

export class RolloutWorker {
  readonly nc: NatsConnection;
  readonly o: RolloutWorkerOptions;
  /** Tasks answered with a part, and tasks that failed. */
  readonly counts = { served: 0, failed: 0 };
  #subs: Subscription[] = [];
  #store: KvStore | null;
  #gpu: GpuContext | null;
  #service: LocalService | null = null;
  #jobs: JobState[] = [];
  #chain: Promise<void> = Promise.resolve();
  /** Reply subjects of the tasks taken and not yet answered (they hear `alive`). */
  #open = new Set<string>();
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(nc: NatsConnection, o: RolloutWorkerOptions) {
    this.nc = nc;
    this.o = o;
    this.#store = o.store ?? null;
    this.#gpu = o.gpu ?? null;
  }

  async start(): Promise<void> {
    this.#store ??= await openStore(this.nc);
    this.#subs.push(this.nc.subscribe(ROLLOUT_HELLO_SUBJECT, { queue: ROLLOUT_QUEUE, callback: (_e, m) => void m.respond(packFrame({ worker: this.o.name })) }));
    this.#subs.push(this.nc.subscribe(ROLLOUT_TASK_SUBJECT, { queue: ROLLOUT_QUEUE, callback: (_e, m) => this.#take(m.data, m.reply) }));
    if (!this.o.keepAlive) {
      this.#timer = setInterval(() => {
        for (const r of this.#open) this.#say(r, { type: 'alive', worker: this.o.name });
      }, 1000);
    }
    await this.nc.flush();
  }

  /** Stop taking tasks; the one running ends first. Releases the device when this worker acquired it. */
  async stop(): Promise<void> {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    await this.#chain;
    if (this.#timer) clearInterval(this.#timer);
    for (const j of this.#jobs.splice(0)) await this.#release(j);
    await this.#service?.close();
    if (!this.o.gpu) this.#gpu?.destroy();
  }

  #say(reply: string, r: TaskReply): void {
    try {
      this.nc.publish(reply, packFrame(r));
    } catch { /* the connection closed: the trainer samples the slice itself */ }
  }

  #take(data: Uint8Array, reply: string | undefined): void {
    if (!reply) return;
    let task: RolloutTask;
    try {
      task = unpackFrame<RolloutTask>(data);
      if (task.format !== TASK_FORMAT) throw new Error(`expected a ${TASK_FORMAT} task, got ${JSON.stringify(task.format)}`);
    } catch (e) {
      return this.#say(reply, { type: 'error', worker: this.o.name, message: (e as Error).message });
    }
    this.#say(reply, { type: 'taken', worker: this.o.name });
    if (this.o.keepAlive) this.o.keepAlive.hold(reply, reply);
    else this.#open.add(reply);
    this.#chain = this.#chain.then(async () => {
      try {
        const part = await this.#sample(task);
        const bytes = packFrame({ type: 'result', worker: this.o.name, version: task.version, part } satisfies TaskReply);
        // A part larger than a message may be (the server's max_payload) goes through the store.
        if (bytes.length > this.nc.info!.max_payload - 4096) {
          const key = `rollouts/${task.job}/e${task.epoch}/parts/${task.step}.${task.slice}`;
          await this.#store!.setMany([[key, packFrame(part)]]);
          this.#say(reply, { type: 'stored', worker: this.o.name, version: task.version, key });
        } else {
          this.nc.publish(reply, bytes);
        }
        this.counts.served++;
        this.o.log?.(`${task.job}: step ${task.step} slice ${task.slice} (${task.indices.length} episodes, version ${task.version}) sampled`);
      } catch (e) {
        this.counts.failed++;
        this.o.log?.(`${task.job}: step ${task.step} slice ${task.slice} failed: ${(e as Error).stack ?? e}`);
        this.#say(reply, { type: 'error', worker: this.o.name, message: (e as Error).message });
      } finally {
        this.#open.delete(reply);
        this.o.keepAlive?.release(reply);
      }
    });
  }

  async #sample(t: RolloutTask): Promise<RolloutPart> {
    this.o.log?.(`${t.job}: step ${t.step} slice ${t.slice} taken`);
    const service = await this.#serviceOf();
    const job = await this.#job(t);
    let v = job.versions.get(t.policy);
    if (!v) {
      const tensors = await this.#load(t.policy);
      if (t.lora) {
        if (t.base === null) throw new Error('a LoRA task without a base in the store (a pretrained job samples on its trainer)');
        if (!job.baseId) job.baseId = await service.createModel(t.cfg, { params: await this.#load(t.base), id: `${job.key}/base` });
        v = { sampler: await service.createSamplingClient(job.baseId, { lora: t.lora, tensors, id: `${job.key}@${t.version}` }), modelId: null };
      } else {
        const modelId = await service.createModel(t.cfg, { params: tensors, id: `${job.key}@${t.version}` });
        v = { sampler: await service.createSamplingClient(modelId), modelId };
      }
      job.versions.set(t.policy, v);
      // The last two versions stay loaded (a stale-bounded trainer may still ask for the older).
      for (const [k, old] of [...job.versions].slice(0, -2)) {
        job.versions.delete(k);
        await old.sampler.close();
        if (old.modelId) await service.releaseModel(old.modelId);
      }
    }
    const episodes = t.episodes.map(([seed, groupId]) => ({ seed, groupId }));
    return await rolloutPart(job.env, v.sampler.sample, episodes, t.seed, job.agent, t.indices);
  }

  async #load(key: string): Promise<Record<string, Float32Array>> {
    const b = await this.#store!.get<ArrayBuffer>(key);
    if (!b) throw new Error(`"${key}" is not in the store (the job moved on)`);
    return unpackFrame<Record<string, Float32Array>>(new Uint8Array(b));
  }

  async #serviceOf(): Promise<LocalService> {
    if (this.#service) return this.#service;
    this.#gpu ??= await acquireGpu({ label: `rollout worker ${this.o.name}` });
    const tok = new ByteTokenizer();
    // As a fleet worker's service samples (stop strings decoded by the byte tokenizer).
    this.#service = new LocalService(this.#gpu, { decode: (ids) => tok.decode(ids) });
    return this.#service;
  }

  /** The job's state (its trainer's delivery: a redelivered job starts afresh); two jobs kept. */
  async #job(t: RolloutTask): Promise<JobState> {
    const key = `${t.job}.e${t.epoch}`;
    const hit = this.#jobs.find((j) => j.key === key);
    if (hit) return hit;
    const base = jobEnv(t.agent.env);
    const env: JobEnv = { ...base, maxTurns: t.agent.maxTurns };
    const agent: AgentSettings = {
      tokenizer: new ByteTokenizer(), maxNewTokens: t.agent.maxNewTokens, maxSequenceTokens: t.agent.maxSequenceTokens, temperature: t.agent.temperature,
      ...(t.agent.stepTimeoutMs !== undefined ? { stepTimeoutMs: t.agent.stepTimeoutMs } : {}), ...(env.format ? { format: env.format } : {}),
    };
    const j: JobState = { key, env, agent, baseId: null, versions: new Map() };
    this.#jobs.push(j);
    for (const old of this.#jobs.splice(0, Math.max(0, this.#jobs.length - 2))) await this.#release(old);
    return j;
  }

  async #release(j: JobState): Promise<void> {
    for (const v of j.versions.values()) {
      await v.sampler.close();
      if (v.modelId) await this.#service?.releaseModel(v.modelId);
    }
    if (j.baseId) await this.#service?.releaseModel(j.baseId);
  }
}
