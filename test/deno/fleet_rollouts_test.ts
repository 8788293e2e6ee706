/**
 * Deno suite: RL rollouts across hosts (src/fleet/rollouts.ts, rollout_worker.ts). In this
 * process: frames carry every number bit for bit, and a step's rollout sampled in slices (each
 * under its own episode ids, through the wire, in any order) is the rollout sampled whole — the
 * engine's tokens for a request do not depend on the rest of its batch. Then on a nats-server on
 * loopback, one trainer process (`npm run fleet -- worker`) runs a tiny-gpt2 PPO job with no
 * rollout worker, again with three (`npm run fleet -- rollout-worker`, separate processes), and
 * again while one rollout worker is killed (SIGKILL) as it takes a slice: all three runs end with
 * the same metrics (timings aside) and adapter bytes. A bad rolloutStaleness is refused at submit
 * and dead-lettered at its first delivery.
 */
import { assert } from 'chai';
import { Buffer } from 'node:buffer';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { parseFleetArgs } from '../../src/fleet/cli_args.ts';
import { submitJob } from '../../src/fleet/cli.ts';
import { connectFleet, openStore } from '../../src/fleet/connect.ts';
import { type FleetEvent, foldEvents, replayEvents } from '../../src/fleet/events.ts';
import { EVENTS_STREAM, ensureFleet, JOBS_SUBJECT, makeJob, trainOptionsOf } from '../../src/fleet/jobs.ts';
import { loadResult } from '../../src/fleet/results.ts';
import { packFrame, unpackFrame } from '../../src/fleet/rollout_wire.ts';
import { RolloutWorker } from '../../src/fleet/rollout_worker.ts';
import { agentRecipeOf, FleetRollouts } from '../../src/fleet/rollouts.ts';
import { Rng } from '../../src/util/rng.ts';
import { groupEpisodes } from '../../src/env/batch.ts';
import { ConfigError } from '../../src/errors.ts';
import { jobOptionsFrom } from '../../src/cli/job_args.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import { rollout, rolloutOf, rolloutPart, type RolloutPart } from '../../src/runtime/evaluate.ts';
import { agentSettingsOf } from '../../src/runtime/rl_job.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { type FleetProc, signal, startWorker, stopAll, withoutTimings } from '../shared/fleet_procs.ts';
import { startNatsServer } from '../shared/nats_server.ts';
import { testGpu } from '../shared/gpu.ts';

const FLAGS = { model: 'tiny-gpt2', algo: 'ppo', steps: 2, warmstartSteps: 16, groups: 3, groupSize: 2, evalEpisodes: 0, seed: 5, checkpointEvery: 8 };
const train = trainOptionsOf(FLAGS);

Deno.test('rollout frames: every number comes back with its bits', () => {
  const v = {
    ints: [0, 1, -5, 2 ** 31 - 1], f32: [Math.fround(-1.2345), Math.fround(1e-30), -0], f64: [0.1, Math.PI, 1e300],
    odd: [NaN, Infinity, -Infinity, -0, 0.1, 2 ** 53], scalar: -0, big: 2 ** 60, text: 'x\u0000wt', empty: [], nested: [{ a: 0.30000000000000004, b: [true, null] }],
    tensor: new Float32Array([1.5, -2.25, NaN]), mask: new Uint8Array([0, 1, 1]),
  };
  const back = unpackFrame<typeof v>(packFrame(v));
  const bits = (xs: readonly number[]) => [...new Float64Array(xs)].map((x) => [...new Uint8Array(new Float64Array([x]).buffer)].join(','));
  for (const k of ['ints', 'f32', 'f64', 'odd'] as const) assert.deepEqual(bits(back[k]), bits(v[k]), k);
  assert.isTrue(Object.is(back.scalar, -0));
  assert.strictEqual(back.big, 2 ** 60);
  assert.strictEqual(back.text, v.text);
  assert.deepEqual(back.empty, []);
  assert.strictEqual(back.nested[0].a, 0.30000000000000004);
  assert.instanceOf(back.tensor, Float32Array);
  assert.deepEqual([...new Uint8Array(back.tensor.buffer)], [...new Uint8Array(v.tensor.buffer)]);
  assert.instanceOf(back.mask, Uint8Array);
  // A frame inside a larger buffer, as a Node Buffer (whose slice() is a view): what NATS hands a subscriber.
  const frame = packFrame(v);
  const inner = Buffer.concat([Buffer.from([1, 2, 3]), Buffer.from(frame)]).subarray(3);
  assert.deepEqual(packFrame(unpackFrame(inner)), frame);
  assert.throws(() => unpackFrame(new TextEncoder().encode('{"a":1}')), /not a webtinker rollout frame/);
});

Deno.test('a rollout sampled in slices, through the wire and in any order, is the rollout sampled whole, bitwise', async () => {
  const gpu = await testGpu();
  const tok = new ByteTokenizer();
  const service = new LocalService(gpu, { decode: (ids) => tok.decode(ids) });
  try {
    const o = jobOptionsFrom(train);
    const agent = agentSettingsOf(o, null);
    const modelId = await service.createModel(o.model, { seed: 7 });
    const sampler = await service.createSamplingClient(modelId);
    const episodes = groupEpisodes(3, 2, 1234);
    const whole = await rollout(o.env, sampler.sample, episodes, 99, agent);
    assert.isAbove(whole.sampledTokens, 0);
    const slices = [[4, 5], [0, 1], [2, 3]];
    const parts: RolloutPart[] = [];
    for (const idx of slices) parts.push(unpackFrame<RolloutPart>(packFrame(await rolloutPart(o.env, sampler.sample, episodes, 99, agent, idx))));
    const spread = rolloutOf(o.env, episodes, parts);
    assert.deepEqual(packFrame(spread), packFrame(whole), 'the same rollout, bit for bit');
    // Slices of uneven sizes (other batch compositions) too.
    const uneven = rolloutOf(o.env, episodes, [await rolloutPart(o.env, sampler.sample, episodes, 99, agent, [3]), await rolloutPart(o.env, sampler.sample, episodes, 99, agent, [0, 1, 2, 4, 5])]);
    assert.deepEqual(packFrame(uneven), packFrame(whole));
    assert.throws(() => rolloutOf(o.env, episodes, [...parts, parts[0]]), /episodes twice/);
    await sampler.close();
  } finally {
    await service.close();
  }
});

Deno.test('staleness 1: the next step is sampled ahead by a rollout worker with the current version, and trained as it is', async () => {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  const gpu = await testGpu();
  const tok = new ByteTokenizer();
  const service = new LocalService(gpu, { decode: (ids) => tok.decode(ids) });
  const worker = new RolloutWorker(nc, { name: 'W', gpu });
  let fr: FleetRollouts | null = null;
  try {
    await worker.start();
    const o = jobOptionsFrom(train);
    const agent = agentSettingsOf(o, null);
    const modelId = await service.createModel(o.model, { seed: 7 });
    const base = await service.modelWeights(modelId);
    const policy = await service.createTrainingClient({ modelId, trainable: 'lora', lora: o.lora!, seed: 7 });
    // Versions 0 and 1: the adapter as initialised (B = 0), then one with every tensor moved (what a step would do, larger).
    const v0 = await policy.weights();
    const rng = new Rng(11, 1);
    const v1 = Object.fromEntries(Object.entries(v0).map(([k, t]) => [k, t.map((x) => x + 0.5 * (rng.nextFloat() - 0.5))]));
    const samplers = [await service.createSamplingClient(modelId, { lora: o.lora!, tensors: v0 }), await service.createSamplingClient(modelId, { lora: o.lora!, tensors: v1 })];
    const plan = (k: number) => (k < 2 ? { seed: 100 + k, episodes: groupEpisodes(3, 2, 100 + k) } : null);
    fr = new FleetRollouts(nc, await openStore(nc), { job: 'j', epoch: 1, agent: agentRecipeOf(o), staleness: 1, silenceMs: 120_000 });
    const request = (step: number) => {
      const { seed, episodes } = plan(step)!;
      const tensors = [v0, v1][step];
      return {
        step, seed, episodes, plan,
        local: (idx: readonly number[]) => rolloutPart(o.env, samplers[step].sample, episodes, seed, agent, idx),
        weights: () => Promise.resolve({ cfg: o.model, lora: o.lora, tensors, base }),
      };
    };
    const frame = (step: number, parts: readonly RolloutPart[]) => packFrame(rolloutOf(o.env, plan(step)!.episodes, parts));
    const at = async (step: number, version: number) => frame(step, [await rolloutPart(o.env, samplers[version].sample, plan(step)!.episodes, plan(step)!.seed, agent)]);
    assert.deepEqual(frame(0, await fr.rollout(request(0))), await at(0, 0));
    // Step 1 trains version 1 on what the worker sampled ahead with version 0: off-policy by one
    // version, its trajectories carrying version 0's log-probs (the losses' importance ratios use them).
    const step1 = frame(1, await fr.rollout(request(1)));
    assert.deepEqual(step1, await at(1, 0));
    assert.notDeepEqual(step1, await at(1, 1), 'the versions sample differently (else this test shows nothing)');
    assert.deepEqual(fr.history, [{ step: 0, version: 0, remote: 3, local: 0 }, { step: 1, version: 0, remote: 3, local: 0 }]);
    assert.strictEqual(worker.counts.served, 6);
    for (const sm of samplers) await sm.close();
    await policy.close();
  } finally {
    await fr?.close();
    await worker.stop();
    await service.close();
    await nc.close();
    await server.stop();
  }
});

Deno.test('a bad rolloutStaleness is refused at submit, naming the field', () => {
  for (const bad of [-1, 1.5, 17, '1']) {
    assert.throws(() => makeJob(train, { rolloutStaleness: bad as number }), ConfigError, /job\.rolloutStaleness/);
  }
  assert.strictEqual(makeJob(train, { rolloutStaleness: 2 }).rolloutStaleness, 2);
  assert.strictEqual(makeJob(train).rolloutStaleness, 0);
  for (const bad of ['-1', 'x', '17']) {
    assert.throws(() => parseFleetArgs(['submit', '--nats', 'nats://127.0.0.1:1', '--rollout-staleness', bad]), ConfigError, /--rollout-staleness/);
  }
});

Deno.test('fleet rollouts: 3 rollout workers, or one killed mid-step, give the single-host run bitwise', async (t) => {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  const procs: FleetProc[] = [];
  const events: FleetEvent[] = [];
  let wake: () => void = () => {};
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await ensureFleet(jsm);
    const all = await (await js.consumers.get(EVENTS_STREAM, { filter_subjects: 'wt.events.>', deliver_policy: DeliverPolicy.All })).consume();
    void (async () => {
      for await (const m of all) {
        events.push(m.json<FleetEvent>());
        wake();
      }
    })();
    const logs = () => procs.map((w) => `${w.name}: ${w.log}`).join('\n');
    /** Wait (bounded: a hang fails, nothing is timed) for an event, or for a condition on the logs. */
    const waitFor = async <T>(what: string, probe: () => T | undefined, limitMs = 300_000): Promise<T> => {
      const until = Date.now() + limitMs;
      for (;;) {
        const hit = probe();
        if (hit !== undefined) return hit;
        if (Date.now() > until) throw new Error(`no ${what} within ${limitMs / 1000} s; processes said:\n${logs()}`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 200);
        });
      }
    };
    const done = (id: string) => waitFor(`${id} done`, () => events.find((e) => e.job === id && (e.type === 'done' || e.type === 'dead')));
    const history = async (id: string) => {
      const h: FleetEvent[] = [];
      await replayEvents(js, jsm, id, (e) => h.push(e));
      return h;
    };
    const store = await openStore(nc);
    // One trainer; a rollout worker silent for 10 s on a slice has it sampled by the trainer.
    const trainer = startWorker(server.url, 'T', ['--rollout-silence', '10']);
    procs.push(trainer);

    await t.step('a job with a bad rolloutStaleness is dead-lettered at its first delivery, before any work', async () => {
      const bad = { ...makeJob(train, { id: 'stale' }), rolloutStaleness: -2 };
      await js.publish(`${JOBS_SUBJECT}.stale`, JSON.stringify(bad), { msgID: 'stale' });
      const dead = await done('stale');
      assert.strictEqual(dead.type, 'dead');
      assert.strictEqual(dead.type === 'dead' && dead.epoch, 1);
      assert.match(dead.type === 'dead' ? dead.reason : '', /job\.rolloutStaleness: expected an integer from 0 to 16/);
      assert.notInclude((await history('stale')).map((e) => e.type), 'started', 'no work was started');
    });

    await t.step('no rollout worker: the trainer samples every step itself', async () => {
      await submitJob({ nc, js, jsm }, makeJob(train, { id: 'alone' }));
      assert.strictEqual((await done('alone')).type, 'done');
      assert.strictEqual(trainer.log.match(/alone: RL step \d+'s rollout: no rollout worker answered, all sampled here/g)?.length, 2, trainer.log);
    });
    const alone = foldEvents(await history('alone'));
    const aloneResult = await loadResult(store, 'alone');
    const rl = withoutTimings(alone.metrics).filter((m) => (m as { phase: string }).phase === 'rl') as { datums: number; reward: number }[];
    assert.strictEqual(rl.length, 2);
    assert.isTrue(rl.some((m) => m.datums > 0), `the RL steps trained on something: ${JSON.stringify(rl)}`);

    const sameAsAlone = async (id: string) => {
      const f = foldEvents(await history(id));
      assert.strictEqual(f.state, 'done');
      assert.deepEqual(withoutTimings(f.metrics), withoutTimings(alone.metrics), `${id}: the metrics of the run without rollout workers`);
      const r = await loadResult(store, id);
      assert.deepEqual(Object.keys(r.trained.tensors), Object.keys(aloneResult.trained.tensors));
      for (const [k, v] of Object.entries(r.trained.tensors)) assert.deepEqual(new Uint8Array(v.buffer), new Uint8Array(aloneResult.trained.tensors[k].buffer), `${id}: tensor ${k}`);
    };

    const rollers = ['R1', 'R2', 'R3'].map((n) => startWorker(server.url, n, [], 'rollout-worker'));
    procs.push(...rollers);
    await waitFor('rollout workers up', () => (rollers.every((w) => /sampling rollout tasks/.test(w.log)) ? true : undefined), 120_000);

    await t.step('three rollout workers (separate processes): the same run, bitwise', async () => {
      await submitJob({ nc, js, jsm }, makeJob(train, { id: 'spread' }));
      assert.strictEqual((await done('spread')).type, 'done');
      await sameAsAlone('spread');
      // Where each step's slices were sampled (a step whose probe no worker answered in time has none remote).
      const remote = [...trainer.log.matchAll(/spread: RL step \d+'s rollout: (?:(\d) of 3 slices from rollout workers|no rollout worker answered)/g)].map((m) => Number(m[1] ?? 0));
      assert.strictEqual(remote.length, 2, trainer.log);
      assert.isAbove(remote[0] + remote[1], 0, `slices came from rollout workers:\n${logs()}`);
      assert.match(rollers.map((w) => w.log).join('\n'), /spread: step \d slice \d \(2 episodes, version \d\) sampled/);
    });

    await t.step('a rollout worker killed as it takes a slice: the trainer samples that slice itself, and the run is the same, bitwise', async () => {
      await submitJob({ nc, js, jsm }, makeJob(train, { id: 'killed' }));
      const victim = await waitFor('a rollout worker taking a slice of killed', () => rollers.find((w) => /killed: step \d slice \d taken/.test(w.log)));
      signal(victim, 'SIGKILL');
      assert.strictEqual((await done('killed')).type, 'done');
      await sameAsAlone('killed');
      assert.match(trainer.log, new RegExp(`killed: step \\d slice \\d: ${victim.name} silent for 10 s; sampling it here`));
      // Long after its ack wait, the bad job was still dead-lettered once: terminated, not redelivered.
      assert.strictEqual((await history('stale')).filter((e) => e.type === 'dead').length, 1);
    });
    // For the record: where each step's slices were sampled.
    console.log(trainer.log.split('\n').filter((l) => /rollout: |silent/.test(l)).join('\n'));
  } finally {
    await stopAll(procs);
    await nc.close();
    await server.stop();
  }
});
