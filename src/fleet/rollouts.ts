/**
 * Rollouts across hosts, the trainer's side: a StepRollouts (step_rollouts.ts) for one fleet job
 * that hands each RL step's episodes, a slice of its groups at a time, to rollout workers on other
 * hosts (protocol in rollout_protocol.ts) and gives runTraining back the parts, which it assembles
 * in episode order. Episodes are seeded per episode, never per worker, and the engine's tokens for
 * a request do not depend on the rest of its batch, so a part is the same whoever sampled it.
 *
 * A slice comes back from a worker, or is sampled here: when no rollout worker listens (no
 * responders: at once), when its worker reports an error, or when it has been silent for
 * `silenceMs` (a killed worker) — so no worker can stall the job.
 *
 * Staleness (the job's `rolloutStaleness`, s): a trajectory may come from a policy at most s
 * versions older than the one trained on it. s = 0: each step's tasks name the current version
 * and the trainer waits for them (a run equals the single-host run bitwise). s > 0: as a step's
 * rollout is collected, the tasks of the next s steps go out at once, naming the current version,
 * so workers sample them while the trainer trains (off-policy by up to s versions; the losses'
 * importance ratios use each trajectory's own sampling log-probs). A slice of such a step that
 * does not come back is sampled here with the then current policy. Results then depend on which
 * slices came back, so s > 0 runs are not bitwise reproducible; s = 0 runs are.
 */
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import type { EpisodeSpec } from '../env/batch.ts';
import type { RolloutPart } from '../runtime/evaluate.ts';
import { agentSettingsOf, type JobOptions } from '../runtime/rl_job.ts';
import type { PolicyWeights, StepRolloutRequest, StepRollouts } from '../runtime/step_rollouts.ts';
import type { KvStore } from '../runtime/store/kv.ts';
import { type AgentRecipe, ROLLOUT_HELLO_SUBJECT, ROLLOUT_TASK_SUBJECT, type RolloutTask, TASK_FORMAT, type TaskReply } from './rollout_protocol.ts';
import { packFrame, unpackFrame } from './rollout_wire.ts';

export interface FleetRolloutsOptions {
  readonly job: string;
  readonly epoch: number;
  readonly agent: AgentRecipe;
  /** Policy versions a trajectory may lag the trained one (the job's rolloutStaleness). */
  readonly staleness: number;
  /** A slice whose worker said nothing for this long is sampled here (default 30 s). */
  readonly silenceMs?: number;
  /**
   * Groups per task. Default: the step's groups in at most 8 tasks (one group each up to 8
   * groups) — more tasks spread better over workers, fewer keep a worker's sampling batches full.
   */
  readonly sliceGroups?: number;
  readonly log?: (line: string) => void;
}

interface Slice {
  readonly indices: readonly number[];
  heard: number;
  worker?: string;
  /** Settled: a part from a worker, or null (to be sampled here). */
  part?: RolloutPart | null;
}

/** One step's tasks in flight. */
interface Pending {
  readonly step: number;
  readonly version: number;
  readonly slices: Slice[];
  settled: Promise<void>;
  wake: () => void;
}

/** What a rollout worker needs to meet the environment as a from-scratch job's trainer does (agentSettingsOf). */
export function agentRecipeOf(o: Pick<JobOptions, 'env' | 'maxNewTokens' | 'model' | 'temperature' | 'stepTimeoutMs'>): AgentRecipe {
  const a = agentSettingsOf(o as JobOptions, null);
  return {
    env: o.env.name, maxTurns: o.env.maxTurns, maxNewTokens: a.maxNewTokens, maxSequenceTokens: a.maxSequenceTokens, temperature: a.temperature,
    ...(a.stepTimeoutMs !== undefined ? { stepTimeoutMs: a.stepTimeoutMs } : {}),
  };
}

/** The store keys of a job's rollout data (deleted when the job ends). */
const prefixOf = (job: string, epoch: number) => `rollouts/${job}/e${epoch}`;

export class FleetRollouts implements StepRollouts {
  readonly nc: NatsConnection;
  readonly store: KvStore;
  readonly o: FleetRolloutsOptions;
  /** Each step's rollout: the version its tasks named, slices that came back, slices sampled here (none sent: 0, 0). */
  readonly history: { step: number; version: number; remote: number; local: number }[] = [];
  #inbox = createInbox();
  #sub: Subscription;
  #pending = new Map<number, Pending>();
  #versions = new Map<number, string>();
  #base: string | null | undefined;
  #timer: ReturnType<typeof setInterval>;

  constructor(nc: NatsConnection, store: KvStore, o: FleetRolloutsOptions) {
    this.nc = nc;
    this.store = store;
    this.o = o;
    this.#sub = nc.subscribe(`${this.#inbox}.>`, { callback: (_e, m) => void this.#reply(m) });
    // Silence is checked on a clock of its own, as replies may never come.
    this.#timer = setInterval(() => this.#checkSilence(), 250);
  }

  get silenceMs(): number {
    return this.o.silenceMs ?? 30_000;
  }

  async rollout(r: StepRolloutRequest): Promise<readonly RolloutPart[]> {
    let p = this.#pending.get(r.step);
    if (!p) {
      if (!(await this.#anyWorker())) {
        this.history.push({ step: r.step, version: r.step, remote: 0, local: 0 });
        this.o.log?.(`${this.o.job}: RL step ${r.step}'s rollout: no rollout worker answered, all sampled here`);
        return [await r.local(r.episodes.map((_, k) => k))];
      }
      p = await this.#send(r.step, r.seed, r.episodes, r.step, r.weights);
    }
    // Sample ahead, within the staleness bound: the next steps' tasks name this version.
    for (let k = r.step + 1; k <= r.step + this.o.staleness; k++) {
      const next = r.plan(k);
      if (next && !this.#pending.has(k)) await this.#send(k, next.seed, next.episodes, r.step, r.weights);
    }
    await p.settled;
    this.#pending.delete(r.step);
    if (p.version < r.step - this.o.staleness) throw new Error(`step ${r.step}: tasks of version ${p.version} are beyond the staleness bound ${this.o.staleness}`);
    const parts = p.slices.filter((s) => s.part).map((s) => s.part!);
    const missing = p.slices.filter((s) => !s.part).flatMap((s) => [...s.indices]).sort((a, b) => a - b);
    this.history.push({ step: r.step, version: p.version, remote: parts.length, local: p.slices.length - parts.length });
    const workers = [...new Set(p.slices.filter((s) => s.part).map((s) => s.worker))].join(', ');
    this.o.log?.(`${this.o.job}: RL step ${r.step}'s rollout: ${parts.length} of ${p.slices.length} slices from rollout workers${workers ? ` (${workers})` : ''} at version ${p.version}, ${p.slices.length - parts.length} sampled here`);
    if (missing.length > 0) parts.push(await r.local(missing));
    this.#forget(r.step - this.o.staleness);
    return parts;
  }

  /** The job ended (or its attempt did): nothing more is awaited, its store keys go. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#sub.unsubscribe();
    for (const p of this.#pending.values()) p.wake();
    this.#pending.clear();
    const keys = await this.store.keys(`${prefixOf(this.o.job, this.o.epoch)}/`).catch(() => []);
    if (keys.length > 0) await this.store.delMany(keys).catch(() => {});
  }

  async #anyWorker(): Promise<boolean> {
    try {
      await this.nc.request(ROLLOUT_HELLO_SUBJECT, new Uint8Array(0), { timeout: 2000 });
      return true;
    } catch {
      return false; // no responders (none listens), or none answered in time
    }
  }

  /** The version's tensors (and a LoRA job's base, once) in the store; their keys. */
  async #publish(version: number, weights: () => Promise<PolicyWeights>): Promise<{ policy: string; base: string | null; w: PolicyWeights }> {
    const w = await weights();
    const prefix = prefixOf(this.o.job, this.o.epoch);
    if (this.#base === undefined) {
      this.#base = w.base ? `${prefix}/base` : null;
      if (w.base) await this.store.setMany([[this.#base!, packFrame(w.base)]]);
    }
    let policy = this.#versions.get(version);
    if (!policy) {
      policy = `${prefix}/v${version}`;
      await this.store.setMany([[policy, packFrame(w.tensors)]]);
      this.#versions.set(version, policy);
    }
    return { policy, base: this.#base, w };
  }

  /** Versions no step can still ask for: off the store. */
  #forget(below: number): void {
    const old = [...this.#versions].filter(([v]) => v < below);
    for (const [v] of old) this.#versions.delete(v);
    if (old.length > 0) void this.store.delMany(old.map(([, k]) => k)).catch(() => {});
  }

  async #send(step: number, seed: number, episodes: readonly EpisodeSpec[], version: number, weights: () => Promise<PolicyWeights>): Promise<Pending> {
    const { policy, base, w } = await this.#publish(version, weights);
    // Slices of whole groups, in group order.
    const groups = [...new Set(episodes.map((e) => e.groupId))];
    const per = this.o.sliceGroups ?? Math.max(1, Math.ceil(groups.length / 8));
    const slices: Slice[] = [];
    for (let g = 0; g < groups.length; g += per) {
      const mine = new Set(groups.slice(g, g + per));
      slices.push({ indices: episodes.flatMap((e, k) => (mine.has(e.groupId) ? [k] : [])), heard: Date.now() });
    }
    let wake = () => {};
    const p: Pending = { step, version, slices, settled: Promise.resolve(), wake };
    p.settled = new Promise<void>((r) => (wake = r));
    p.wake = wake;
    this.#pending.set(step, p);
    slices.forEach((s, i) => {
      const task: RolloutTask = {
        format: TASK_FORMAT, job: this.o.job, epoch: this.o.epoch, step, slice: i, version, seed, cfg: w.cfg, lora: w.lora, policy, base,
        agent: this.o.agent, episodes: episodes.map((e) => [e.seed, e.groupId] as const), indices: s.indices,
      };
      this.nc.publish(ROLLOUT_TASK_SUBJECT, packFrame(task), { reply: `${this.#inbox}.${step}.${i}` });
    });
    return p;
  }

  #settle(p: Pending, s: Slice, part: RolloutPart | null): void {
    if (s.part !== undefined) return; // a late answer of a slice sampled here already
    s.part = part;
    if (p.slices.every((x) => x.part !== undefined)) p.wake();
  }

  async #reply(m: Msg): Promise<void> {
    const [step, slice] = m.subject.slice(this.#inbox.length + 1).split('.').map(Number);
    const p = this.#pending.get(step);
    const s = p?.slices[slice];
    if (!p || !s || s.part !== undefined) return;
    // No worker took it (the server's "no responders" status): sample it here.
    if (m.headers?.code === 503 || m.data.length === 0) return this.#settle(p, s, null);
    // A worker's keep-alive thread (lease.ts) says `alive` as JetStream's in-progress token.
    if (m.data.length === 4 && new TextDecoder().decode(m.data) === '+WPI') {
      s.heard = Date.now();
      return;
    }
    let r: TaskReply;
    try {
      r = unpackFrame<TaskReply>(m.data);
    } catch (e) {
      this.o.log?.(`${this.o.job}: step ${step} slice ${slice}: a reply that is not a frame (${(e as Error).message}); sampling it here`);
      return this.#settle(p, s, null);
    }
    s.heard = Date.now();
    s.worker = r.worker;
    if (r.type === 'result') return this.#settle(p, s, r.part);
    if (r.type === 'error') {
      this.o.log?.(`${this.o.job}: step ${step} slice ${slice}: ${r.worker} failed (${r.message}); sampling it here`);
      return this.#settle(p, s, null);
    }
    if (r.type === 'stored') {
      try {
        const bytes = await this.store.get<ArrayBuffer | Uint8Array>(r.key);
        void this.store.delMany([r.key]).catch(() => {});
        return this.#settle(p, s, bytes ? unpackFrame<RolloutPart>(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)) : null);
      } catch (e) {
        this.o.log?.(`${this.o.job}: step ${step} slice ${slice}: its stored part did not load (${(e as Error).message}); sampling it here`);
        return this.#settle(p, s, null);
      }
    }
  }

  #checkSilence(): void {
    const now = Date.now();
    for (const p of this.#pending.values()) {
      p.slices.forEach((s, i) => {
        if (s.part !== undefined || now - s.heard <= this.silenceMs) return;
        this.o.log?.(`${this.o.job}: step ${p.step} slice ${i}: ${s.worker ?? 'no worker'} silent for ${this.silenceMs / 1000} s; sampling it here`);
        this.#settle(p, s, null);
      });
    }
  }
}
