/**
 * The scheduler under load (issue 22 item 7): two LoRA training jobs loop forwardBackward +
 * optimStep on one base while `callers` concurrent callers send `requests` interactive sampling
 * requests, spread over about `durationMs`, through the GPU worker (WorkerService). Shared by the
 * bench part (test/bench/scheduler.ts, full size) and the Deno load test (scaled down), which
 * asserts on what this returns; nothing here is timed against a bound.
 *
 * What it records:
 *   - every request's id, and how many answers each got — and whether each answer is the one its
 *     request gets alone: the same requests are sampled first with no load (a request's tokens do
 *     not depend on which requests share its batch or when its chunks run), so an answer given to
 *     the wrong caller shows up as a mismatch, not only a lost or doubled one;
 *   - first-token latency of each request under load (a 1-token request: prefill and one sampled
 *     token — the service answers a call whole, so this is its wall time), and alone;
 *   - the pool (ServiceMemory) after warm-up, sampled during the run, and after it (the training
 *     jobs and the sampler still open);
 *   - admission, mid-run: a training job and a base model whose estimates exceed the budget are
 *     refused with AdmissionError before the worker sees them (no pool owner of theirs appears),
 *     and no device loss is reported.
 */
import { crossEntropyLoss } from '../../src/algorithms/loss_spec.ts';
import { packDatums, type PackedBatch } from '../../src/algorithms/pack.ts';
import { sftDatumsFromPairs } from '../../src/algorithms/sft.ts';
import type { SampleRequest } from '../../src/env/types.ts';
import type { LoraConfig, ModelConfig } from '../../src/model/config.ts';
import { adapterMemoryDevice, estimateTrainingMemory } from '../../src/model/memory.ts';
import { countParameters } from '../../src/model/params.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import type { ServiceMemory } from '../../src/runtime/protocol.ts';
import type { WorkerService, WorkerTrainingClient } from '../../src/runtime/worker_service.ts';
import { Rng } from '../../src/util/rng.ts';

export interface LoadOptions {
  model: ModelConfig;
  /** A base the budget cannot hold (its create must be refused). */
  oversizeModel: ModelConfig;
  lora: LoraConfig;
  /** Training micro-batch of each job. */
  rows: number;
  seqLen: number;
  callers: number;
  /** Interactive requests in all (split evenly over the callers; the rest to the first ones). */
  requests: number;
  /** Over about how long the callers spread their requests (mean think time = durationMs / per-caller requests). */
  durationMs: number;
  seed?: number;
  log?: (s: string) => void;
}

export interface AdmissionProbe {
  what: string;
  /** The error's name ('AdmissionError' expected) or 'none' when it was not refused. */
  error: string;
  message: string;
  /** Pool owners named after the refused job or model right after the refusal (none expected). */
  ownersAfter: string[];
}

export interface LoadRaw {
  requestIds: string[];
  /** Answers per request id. */
  answers: Record<string, number>;
  /** Request ids whose answer under load differs from the one alone. */
  mismatched: string[];
  /** First-token latency under load, ms, in completion order. */
  latenciesMs: number[];
  /** The same requests alone (no training), ms. */
  aloneMs: number[];
  windowMs: number;
  trainingSteps: { a: number; b: number };
  warm: ServiceMemory;
  /** Pool samples during the loaded window. */
  samples: { t: number; liveBytes: number; cachedBytes: number }[];
  /** The pool at the largest sample (which owners hold the transient bytes). */
  peak: ServiceMemory;
  after: ServiceMemory;
  admission: AdmissionProbe[];
  deviceLosses: number;
}

/** Micro-batch rows of the full training job the budget must refuse. */
const HUGE_BATCH = 64;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Two training jobs stepping (forward/backward on `batch`, then an optimizer step) until
 * `stop()`; `steps` counts each one's steps. `start()` (again) returns the loops to await.
 */
export function trainingLoops(a: WorkerTrainingClient, b: WorkerTrainingClient, batch: PackedBatch) {
  const steps = { a: 0, b: 0 };
  let stopped = false;
  const loop = async (j: WorkerTrainingClient, key: 'a' | 'b') => {
    while (!stopped) {
      await j.forwardBackward(batch, crossEntropyLoss());
      await j.optimStep({ lr: 1e-3 });
      steps[key]++;
    }
  };
  return {
    steps,
    start: () => {
      stopped = false;
      return [loop(a, 'a'), loop(b, 'b')];
    },
    stop: () => {
      stopped = true;
    },
  };
}

/** Run the load on `service` (its budget decides admission; see the probes). */
export async function runSchedulerLoad(service: WorkerService, o: LoadOptions): Promise<LoadRaw> {
  const log = o.log ?? (() => {});
  const tok = new ByteTokenizer();
  const pairs = Array.from({ length: o.rows }, (_, i) => ({ prompt: `${i}+${i}=`.repeat(Math.max(1, o.seqLen / 8)), completion: `${2 * i}`.repeat(3) }));
  const batch: PackedBatch = packDatums(sftDatumsFromPairs(pairs, tok), { rows: o.rows, seqLen: o.seqLen, seed: 1, padId: tok.padId, aggregation: 'token_mean', shuffle: false }).batches[0];
  let deviceLosses = 0;
  const offLoss = service.on((e) => {
    if (e.type === 'device-lost' || e.type === 'worker-crashed') deviceLosses++;
  });

  // Each caller's requests: distinct prompts and seeds, so every answer is its own request's.
  const perCaller = Array.from({ length: o.callers }, (_, c) => Math.floor(o.requests / o.callers) + (c < o.requests % o.callers ? 1 : 0));
  const byCaller: { id: string; req: SampleRequest }[][] = perCaller.map((n, c) =>
    Array.from({ length: n }, (_, k) => ({
      id: `c${c}r${k}`,
      req: { promptTokens: tok.encode(`caller ${c}, request ${k}: `), maxTokens: 1, stopStrings: [], stopTokens: [], temperature: 1, seed: 1000 * c + k },
    }))
  );
  const all = byCaller.flat();

  // The probes must be refused outright: one that fits the budget but not the space left would wait.
  const budget = service.scheduler.memoryBudgetBytes;
  const huge = estimateTrainingMemory(o.model, { batch: HUGE_BATCH, seqLen: o.model.maxSeqLen, mode: 'full', device: adapterMemoryDevice(service.adapter) }).jobBytes;
  if (huge <= budget) throw new RangeError(`runSchedulerLoad: the full job's ${huge} B fit the ${budget} B budget; lower memoryBudgetBytes`);
  if (4 * countParameters(o.oversizeModel) <= budget) throw new RangeError(`runSchedulerLoad: oversizeModel fits the ${budget} B budget`);

  const modelId = await service.createModel(o.model, { seed: o.seed ?? 1 });
  const inf = await service.createSamplingClient(modelId, undefined, { priority: 'interactive', requestsPerQuantum: 1 });
  const jobs: WorkerTrainingClient[] = [];
  for (let i = 0; i < 2; i++) {
    jobs.push(await service.createTrainingClient({ modelId, trainable: 'lora', lora: o.lora, seed: i, id: `load-job${i}`, schedule: { batch: o.rows, seqLen: o.seqLen, weight: 2 - i } }));
  }
  const [a, b] = jobs;

  // Alone: each request once, one at a time (this warms up the sampler too) — the reference answers.
  const reference = new Map<string, string>();
  const aloneMs: number[] = [];
  await inf.sample([all[0].req]); // compile
  for (const { id, req } of all) {
    const t = performance.now();
    const [r] = await inf.sample([req]);
    aloneMs.push(performance.now() - t);
    reference.set(id, JSON.stringify(r.tokens) + JSON.stringify(r.logprobs));
  }
  log(`load: ${all.length} requests alone done`);

  // Warm-up: both jobs make two steps (their moments exist, every kernel and kept weight copy is
  // made), then stop; the pool, read with nothing in flight, is the level the run must come back to.
  const training = trainingLoops(a, b, batch);
  const steps = training.steps;
  let loops = training.start();
  while ((steps.a < 2 || steps.b < 2) && deviceLosses === 0) await sleep(20);
  training.stop();
  await Promise.all(loops);
  const warm = await service.memory();
  const steps0 = { ...steps };
  loops = training.start();
  log(`load: warm, live ${warm.liveBytes} B`);

  // The loaded window: callers, a pool sampler, and the admission probes partway.
  const answers: Record<string, number> = Object.fromEntries(all.map((r) => [r.id, 0]));
  const mismatched: string[] = [];
  const latenciesMs: number[] = [];
  const samples: LoadRaw['samples'] = [];
  let peak = warm;
  let callersDone = false;
  const t0 = performance.now();
  const sampling = (async () => {
    while (!callersDone) {
      const m = await service.memory();
      samples.push({ t: performance.now() - t0, liveBytes: m.liveBytes, cachedBytes: m.cachedBytes });
      if (m.liveBytes > peak.liveBytes) peak = m;
      await sleep(Math.max(50, o.durationMs / 100));
    }
  })();
  const caller = async (list: { id: string; req: SampleRequest }[], c: number) => {
    const rng = new Rng((o.seed ?? 1) * 7919 + c);
    const think = o.durationMs / Math.max(1, list.length);
    for (const { id, req } of list) {
      await sleep(2 * think * rng.nextFloat());
      const t = performance.now();
      const res = await inf.sample([req]);
      latenciesMs.push(performance.now() - t);
      answers[id] += res.length === 1 ? 1 : res.length; // a batch of one must come back as one
      if (JSON.stringify(res[0]?.tokens) + JSON.stringify(res[0]?.logprobs) !== reference.get(id)) mismatched.push(id);
    }
  };
  const probes = (async () => {
    await sleep(o.durationMs / 3);
    const probe = async (what: string, owner: string, f: () => Promise<unknown>): Promise<AdmissionProbe> => {
      try {
        await f();
        return { what, error: 'none', message: '', ownersAfter: [] };
      } catch (e) {
        const m = await service.memory();
        return { what, error: (e as Error).name, message: (e as Error).message, ownersAfter: Object.keys(m.owners).filter((k) => k.includes(owner)) };
      }
    };
    return [
      // Full fine-tuning at a batch the budget cannot hold (weights, gradients, moments, activations).
      await probe('full training job past the budget', 'load-huge', () =>
        service.createTrainingClient({ modelId, trainable: 'all', id: 'load-huge', schedule: { batch: HUGE_BATCH, seqLen: o.model.maxSeqLen } })),
      await probe('base model past the budget', 'load-big-base', () => service.createModel(o.oversizeModel, { seed: 1, id: 'load-big-base' })),
    ];
  })();
  await Promise.all(byCaller.map((list, c) => caller(list, c)));
  const admission = await probes;
  // Both jobs must have trained in the window (no starvation), however long that takes.
  while ((steps.a === steps0.a || steps.b === steps0.b) && deviceLosses === 0) await sleep(20);
  const windowMs = performance.now() - t0;
  callersDone = true;
  await sampling;
  training.stop();
  await Promise.all(loops);
  const after = await service.memory();
  log(`load: window ${(windowMs / 1000).toFixed(1)} s, steps a ${steps.a - steps0.a} b ${steps.b - steps0.b}, live after ${after.liveBytes} B`);
  offLoss();
  await inf.close();
  for (const j of jobs) await j.close();
  await service.releaseModel(modelId);
  return {
    requestIds: all.map((r) => r.id), answers, mismatched, latenciesMs, aloneMs, windowMs,
    trainingSteps: { a: steps.a - steps0.a, b: steps.b - steps0.b }, warm, samples, peak, after, admission, deviceLosses,
  };
}

/** Pool owners whose bytes differ between two readings (owner → [before, after]). */
export function ownerGrowth(before: ServiceMemory, after: ServiceMemory): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const k of new Set([...Object.keys(before.owners), ...Object.keys(after.owners)])) {
    const x = before.owners[k]?.currentBytes ?? 0;
    const y = after.owners[k]?.currentBytes ?? 0;
    if (y > x) out[k] = [x, y];
  }
  return out;
}
