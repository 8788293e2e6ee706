/**
 * Deno suite: the fleet end to end on one machine — nats-server on loopback, three worker
 * processes (`npm run fleet -- worker`, ack wait 2 s), tiny-gpt2 jobs (16 SFT steps checkpointed
 * every 4, then 2 LoRA GRPO steps). One job runs undisturbed (its adapter stored, its events
 * replayable, a resubmission dropped); a bad job is dead-lettered at once without blocking the
 * queue; the same job as the undisturbed one loses its worker to SIGKILL after its first
 * checkpoint and resumes on another; and again with its worker SIGSTOPped instead, whose late
 * write is refused once another took over (it abandons the job). Both disturbed jobs end with the
 * undisturbed job's metrics (timings aside) and adapter bytes, bitwise.
 */
import { assert } from 'chai';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectFleet, openStore } from '../../src/fleet/connect.ts';
import { cancelJob, submitJob } from '../../src/fleet/cli.ts';
import { type FleetEvent, foldEvents, replayEvents } from '../../src/fleet/events.ts';
import { DEAD_STREAM, EVENTS_STREAM, ensureFleet, JOBS_STREAM, JOBS_SUBJECT, makeJob, trainOptionsOf } from '../../src/fleet/jobs.ts';
import { loadResult } from '../../src/fleet/results.ts';
import { AdapterStore } from '../../src/runtime/store/adapter_store.ts';
import { startNatsServer } from '../shared/nats_server.ts';
import { fleetCli, type FleetProc, signal, startWorker, stopAll, withoutTimings } from '../shared/fleet_procs.ts';
import { qwen3ToolTwin } from '../shared/hub_twin.ts';

const TRAIN = fileURLToPath(new URL('../../src/cli/train.ts', import.meta.url));
const FLAGS = { model: 'tiny-gpt2', steps: 2, warmstartSteps: 16, groups: 2, groupSize: 2, evalEpisodes: 0, seed: 3, checkpointEvery: 4 };
const train = trainOptionsOf(FLAGS);
type Worker = FleetProc;

Deno.test('fleet: jobs on a work queue, dead letters, and jobs surviving a killed and a stopped worker', async (t) => {
  const server = await startNatsServer();
  const nc = await connectFleet(server.url);
  const workers: Worker[] = [];
  const events: FleetEvent[] = [];
  let wake: () => void = () => {};
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await ensureFleet(jsm, { ackWaitMs: 2000, maxDeliver: 3 });
    // Every event as it is stored, for waiting on (each wait is bounded: a hang fails, it is not timed).
    const all = await (await js.consumers.get(EVENTS_STREAM, { filter_subjects: 'wt.events.>', deliver_policy: DeliverPolicy.All })).consume();
    void (async () => {
      for await (const m of all) {
        events.push(m.json<FleetEvent>());
        wake();
      }
    })();
    const waitFor = async (what: string, pred: (e: FleetEvent) => boolean, limitMs = 120_000): Promise<FleetEvent> => {
      const until = Date.now() + limitMs;
      for (;;) {
        const hit = events.find(pred);
        if (hit) return hit;
        if (Date.now() > until) throw new Error(`no ${what} within ${limitMs / 1000} s; workers said:\n${workers.map((w) => `${w.name}: ${w.log}`).join('\n')}`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 500);
        });
      }
    };
    const workerOf = (e: FleetEvent) => workers.find((w) => 'host' in e && w.name === e.host)!;
    const history = async (id: string) => {
      const h: FleetEvent[] = [];
      await replayEvents(js, jsm, id, (e) => h.push(e));
      return h;
    };
    const store = await openStore(nc);
    for (const name of ['A', 'B', 'C']) workers.push(startWorker(server.url, name));

    await t.step('a bad job is dead-lettered at once, with its reason, and a job behind it runs; a resubmission is dropped', async () => {
      // A message no `npm run fleet -- submit` would send: an unknown model preset.
      const bad = { ...makeJob(train, { id: 'bad' }), settings: { ...makeJob(train).settings, model: 'gpt2-nope' } };
      await js.publish(`${JOBS_SUBJECT}.bad`, JSON.stringify(bad), { msgID: 'bad' });
      const alone = makeJob(train, { id: 'alone' });
      assert.isFalse((await submitJob({ nc, js, jsm }, alone)).duplicate);
      assert.isTrue((await submitJob({ nc, js, jsm }, alone)).duplicate, 'the same id within the duplicate window is dropped');
      const dead = await waitFor('dead letter', (e) => e.job === 'bad' && e.type === 'dead');
      assert.strictEqual(dead.type === 'dead' && dead.epoch, 1, 'dead-lettered on its first delivery');
      const letter = await jsm.streams.getMessage(DEAD_STREAM, { last_by_subj: 'wt.dead.bad' });
      assert.match(letter!.json<{ reason: string }>().reason, /--model: unknown preset "gpt2-nope"/);
      await waitFor('alone done', (e) => e.job === 'alone' && e.type === 'done');
      const h = await history('alone');
      assert.strictEqual(h.filter((e) => e.type === 'submitted').length, 1);
      const f = foldEvents(h);
      assert.strictEqual(f.state, 'done');
      assert.strictEqual(withoutTimings(f.metrics).length, 16 + 2, 'one metrics line per step');
      // The adapter was stored before the ack: it loads from the shared store.
      const adapter = await new AdapterStore(store).load('alone');
      assert.strictEqual(adapter.meta.rank, 8);
      assert.isAbove(adapter.tensors.length, 0);
    });

    await t.step('the commands: status and watch replay a finished job, fetch writes its run folder, bad flags are refused', async () => {
      const st = await fleetCli(['status', '--nats', server.url, 'alone']);
      assert.strictEqual(st.code, 0, st.stderr);
      assert.match(st.stdout, /state\s+done/);
      const list = await fleetCli(['status', '--nats', server.url]);
      assert.match(list.stdout, /alone\s+done/);
      assert.match(list.stdout, /bad\s+dead/);
      const w = await fleetCli(['watch', '--nats', server.url, 'alone']);
      assert.strictEqual(w.code, 0, w.stderr);
      assert.match(w.stderr, /started on [ABC] \(delivery 1\)/);
      assert.match(w.stdout, /model\s+tiny-gpt2/);
      assert.strictEqual((await fleetCli(['watch', '--nats', server.url, 'bad'])).code, 1, 'a dead job is not a success');
      const out = await Deno.makeTempDir({ prefix: 'wt-fetch-' });
      const f = await fleetCli(['fetch', '--nats', server.url, 'alone', '--out', out]);
      assert.strictEqual(f.code, 0, f.stderr);
      assert.strictEqual(await readFile(join(out, 'metrics.jsonl'), 'utf8'), foldEvents(await history('alone')).metrics);
      for (const file of ['summary.json', 'adapter.safetensors', 'peft/adapter_model.safetensors', 'base/model.safetensors', 'curve.svg', 'run.json']) {
        assert.isAbove((await Deno.stat(join(out, file))).size, 0, file);
      }
      assert.deepEqual(JSON.parse(await readFile(join(out, 'run.json'), 'utf8')).settings, makeJob(train).settings);
      // The same job run alone with `npm run train`: the same metrics (timings aside) and adapter file, byte for byte.
      const local = await Deno.makeTempDir({ prefix: 'wt-train-' });
      const flags = ['--model', 'tiny-gpt2', '--steps', '2', '--warmstart-steps', '16', '--groups', '2', '--group-size', '2', '--eval-episodes', '0', '--seed', '3', '--checkpoint-every', '4'];
      const r = await new Promise<string>((resolve, reject) => execFile(Deno.execPath(), ['run', '--allow-read', '--allow-write', '--allow-env', TRAIN, ...flags, '--out', local, '-q'], (err, _o, e) => (err ? reject(new Error(String(e))) : resolve(String(e)))));
      assert.strictEqual(r, '');
      assert.deepEqual(withoutTimings(await readFile(join(out, 'metrics.jsonl'), 'utf8')), withoutTimings(await readFile(join(local, 'metrics.jsonl'), 'utf8')));
      assert.deepEqual(await readFile(join(out, 'adapter.safetensors')), await readFile(join(local, 'adapter.safetensors')));
      assert.deepEqual(await readFile(join(out, 'base/model.safetensors')), await readFile(join(local, 'base/model.safetensors')));
      await Deno.remove(out, { recursive: true });
      await Deno.remove(local, { recursive: true });
      const bad = await fleetCli(['submit', '--nats', server.url, '--json', 'x.json']);
      assert.strictEqual(bad.code, 2);
      assert.match(bad.stderr, /--json: is about local outputs/);
    });

    await t.step('a pretrained model (a folder in the Hub layout): submit reads its config, a worker trains LoRA on it, fetch writes the PEFT files naming it, with its tokenizer', async () => {
      const dir = await Deno.makeTempDir({ prefix: 'wt-twin-' });
      const files = await qwen3ToolTwin();
      for (const [f, b] of Object.entries(files)) await Deno.writeFile(join(dir, f), b);
      const s = await fleetCli(['submit', '--nats', server.url, '--id', 'pretrained', '--model', dir, '--steps', '1', '--groups', '2', '--group-size', '2', '--eval-episodes', '0', '--lora-targets', 'q_proj,v_proj']);
      assert.strictEqual(s.code, 0, s.stderr);
      const submitted = (await history('pretrained')).find((e) => e.type === 'submitted');
      assert.isAbove(submitted?.type === 'submitted' ? submitted.spec.memoryBytes : 0, 0, 'estimated from its config.json');
      await waitFor('pretrained done', (e) => e.job === 'pretrained' && e.type === 'done');
      const out = await Deno.makeTempDir({ prefix: 'wt-fetch-' });
      const f = await fleetCli(['fetch', '--nats', server.url, 'pretrained', '--out', out]);
      assert.strictEqual(f.code, 0, f.stderr);
      const cfg = JSON.parse(await readFile(join(out, 'peft', 'adapter_config.json'), 'utf8'));
      assert.strictEqual(cfg.base_model_name_or_path, dir);
      assert.deepEqual(cfg.target_modules, ['q_proj', 'v_proj']);
      for (const file of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) assert.deepEqual(new Uint8Array(await readFile(join(out, 'peft', file))), files[file], file);
      assert.isFalse(await Deno.stat(join(out, 'base')).then(() => true, () => false), 'no base folder: the base is the pretrained checkpoint');
      await Deno.remove(out, { recursive: true });
      await Deno.remove(dir, { recursive: true });
    });

    const alone = foldEvents(await history('alone'));
    const aloneResult = await loadResult(store, 'alone');

    const sameAsAlone = async (id: string) => {
      const f = foldEvents(await history(id));
      assert.strictEqual(f.state, 'done');
      assert.deepEqual(withoutTimings(f.metrics), withoutTimings(alone.metrics), `${id}: the metrics of the undisturbed run`);
      const r = await loadResult(store, id);
      assert.deepEqual(Object.keys(r.trained.tensors), Object.keys(aloneResult.trained.tensors));
      for (const [k, v] of Object.entries(r.trained.tensors)) assert.deepEqual(new Uint8Array(v.buffer), new Uint8Array(aloneResult.trained.tensors[k].buffer), `${id}: tensor ${k}`);
      return f;
    };

    /** The latest delivery epoch `host` started `id` with (a lease lapsed under load may have given it a second one). */
    const epochOf = (id: string, host: string) => Math.max(...events.filter((e) => e.job === id && e.type === 'started' && e.host === host).map((e) => (e as { epoch: number }).epoch));

    await t.step('a worker killed (SIGKILL) after a checkpoint: the job is redelivered and resumes from it on another', async () => {
      await submitJob({ nc, js, jsm }, makeJob(train, { id: 'killed' }));
      const ck = await waitFor('killed: first checkpoint', (e) => e.job === 'killed' && e.type === 'checkpoint');
      const victim = workerOf(ck);
      signal(victim, 'SIGKILL');
      const held = epochOf('killed', victim.name);
      const again = await waitFor('killed: redelivery', (e) => e.job === 'killed' && e.type === 'started' && e.epoch > held && e.host !== victim.name);
      // Resumed from the checkpoint seen before the kill (or a later one): at most one interval is redone.
      const from = again.type === 'started' ? again.from : null;
      assert.isNotNull(from, 'resumed from a checkpoint, not from the start');
      assert.isTrue(ck.type === 'checkpoint' && from!.phase === ck.phase && from!.step >= ck.step, `resumed from ${JSON.stringify(from)}`);
      await waitFor('killed done', (e) => e.job === 'killed' && e.type === 'done');
      const f = await sameAsAlone('killed');
      assert.isAtLeast(f.starts, 2);
    });

    await t.step('a worker stopped (SIGSTOP) and continued: its late write is refused and it abandons the job', async () => {
      await submitJob({ nc, js, jsm }, makeJob(train, { id: 'stopped' }));
      const ck = await waitFor('stopped: first checkpoint', (e) => e.job === 'stopped' && e.type === 'checkpoint');
      const zombie = workerOf(ck);
      signal(zombie, 'SIGSTOP');
      const held = epochOf('stopped', zombie.name);
      try {
        // The new owner has claimed the job's manifests (at its start) and saved a checkpoint of its own.
        await waitFor('stopped: taken over', (e) => e.job === 'stopped' && e.type === 'checkpoint' && e.epoch > held);
      } finally {
        signal(zombie, 'SIGCONT');
      }
      const gone = await waitFor('stopped: abandoned', (e) => e.job === 'stopped' && e.type === 'abandoned' && e.epoch === held);
      assert.strictEqual(gone.type === 'abandoned' && gone.host, zombie.name);
      assert.match(gone.type === 'abandoned' ? gone.reason : '', new RegExp(`refused: it belongs to delivery epoch \\d+, this writer holds epoch ${held}`));
      const done = await waitFor('stopped done', (e) => e.job === 'stopped' && e.type === 'done');
      assert.notStrictEqual(done.type === 'done' && done.host, zombie.name);
      await sameAsAlone('stopped');
    });

    await t.step('a running job is cancelled at its next step; every job has left the queue', async () => {
      await submitJob({ nc, js, jsm }, makeJob(trainOptionsOf({ ...FLAGS, warmstartSteps: 400 }), { id: 'cancelme' }));
      await waitFor('cancelme: a step', (e) => e.job === 'cancelme' && e.type === 'step');
      assert.strictEqual(await cancelJob({ nc, js, jsm }, 'cancelme'), 'sent');
      await waitFor('cancelme: cancelled', (e) => e.job === 'cancelme' && e.type === 'cancelled');
      const f = foldEvents(await history('cancelme'));
      assert.strictEqual(f.state, 'cancelled');
      assert.isBelow(withoutTimings(f.metrics).length, 400);
      assert.strictEqual(await cancelJob({ nc, js, jsm }, 'cancelme'), 'ended');
      assert.strictEqual((await jsm.streams.info(JOBS_STREAM)).state.messages, 0, 'done, dead-lettered and cancelled jobs are all off the work queue');
    });
  } finally {
    await stopAll(workers);
    await nc.close();
    await server.stop();
  }
});
