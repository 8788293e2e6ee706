// Deno suite: the file store shared by several processes (needs --allow-run). Writers started
// with Deno.Command save one adapter name at once; every save that resolved must be listed and
// load its own tensors. A writer killed with SIGKILL mid-save, and the leftovers of a dead
// process (temporary files, tensors never committed), are cleaned by the next save and block
// nothing; a live writer's leftovers are kept.
import { assert } from 'chai';
import { join } from 'node:path';
import { AdapterStore, type AdapterTensor } from '../../src/runtime/store/adapter_store.ts';
import { FileKv } from '../../src/runtime/store/fs_kv.ts';
import { OWNER_TAG } from '../../src/runtime/store/owner.ts';
import { writerTensors } from './store_writer.ts';

const SCRIPT = new URL('./store_writer.ts', import.meta.url).pathname;

interface Writer {
  child: Deno.ChildProcess;
  /** Every line printed so far. */
  lines: string[];
  /** Resolves when a line equal to `want` has been printed. */
  printed(want: string): Promise<void>;
  done: Promise<void>;
}

function startWriter(args: string[]): Writer {
  const child = new Deno.Command(Deno.execPath(), {
    args: ['run', '--allow-read', '--allow-write', '--allow-env', SCRIPT, ...args],
    stdout: 'piped',
    stderr: 'inherit',
  }).spawn();
  const lines: string[] = [];
  const waiters: { want: string; resolve: () => void }[] = [];
  const done = (async () => {
    let buf = '';
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        for (const w of waiters.filter((w) => w.want === line)) w.resolve();
      }
    }
  })();
  const printed = (want: string) => lines.includes(want) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ want, resolve }));
  return { child, lines, printed, done };
}

function assertSame(got: AdapterTensor[], want: AdapterTensor[], what: string): void {
  assert.deepEqual(got.map((t) => t.name), want.map((t) => t.name), what);
  got.forEach((t, i) => assert.isTrue(t.data.every((x, j) => x === want[i].data[j]), `${what}: tensor ${t.name}`));
}

/** Every file under `dir`, relative. */
async function filesUnder(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(join(dir, rel))) {
    if (e.isDirectory) out.push(...(await filesUnder(dir, join(rel, e.name))));
    else out.push(join(rel, e.name));
  }
  return out;
}

Deno.test('files: 3 processes × 15 saves of one name, 3 rounds — every resolved save listed with its own tensors', async () => {
  const WRITERS = 3, SAVES = 15, SIZE = 300;
  for (let round = 0; round < 3; round++) {
    const dir = await Deno.makeTempDir({ prefix: 'wt-procs-' });
    const go = join(dir, 'go');
    const store = join(dir, 'store');
    const writers = Array.from({ length: WRITERS }, (_, w) => startWriter([store, 'shared', String(w), String(SAVES), String(SIZE), go]));
    await Promise.all(writers.map((w) => w.printed('ready')));
    await Deno.writeTextFile(go, '');
    const codes = await Promise.all(writers.map(async (w) => (await w.done, (await w.child.status).code)));
    assert.deepEqual(codes, writers.map(() => 0));
    const results = writers.flatMap((w) => w.lines.filter((l) => l !== 'ready').map((l) => JSON.parse(l) as { version?: number; seed?: number; error?: string }));
    assert.deepEqual(results.filter((r) => r.error), [], `round ${round}: no save may fail`);
    assert.strictEqual(results.length, WRITERS * SAVES);
    const versions = results.map((r) => r.version!).sort((a, b) => a - b);
    assert.deepEqual(versions, Array.from({ length: WRITERS * SAVES }, (_, i) => i + 1), `round ${round}: distinct versions 1..${WRITERS * SAVES}`);
    const reader = new AdapterStore(new FileKv(store));
    const listed = await reader.versions('shared');
    assert.deepEqual(listed.map((m) => [m.version, m.step]), results.map((r) => [r.version!, r.seed!]).sort((a, b) => a[0] - b[0]));
    for (const r of results) {
      const { meta, tensors } = await reader.load('shared', r.version);
      assert.strictEqual(meta.step, r.seed);
      assertSame(tensors, writerTensors(r.seed!, SIZE), `round ${round} version ${r.version}`);
    }
    assert.deepEqual((await filesUnder(store)).filter((f) => f.includes('.tmp-')), []);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('files: a writer killed with SIGKILL mid-save leaves tensors that the next save removes; nothing is blocked', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'wt-kill-' });
  const store = join(dir, 'store');
  const go = join(dir, 'go');
  await Deno.writeTextFile(go, '');
  const w = startWriter([store, 'k', '1', '5', '4000', go, '3']);
  await w.printed('stalled'); // two saves done; the third has written one tensor of two
  const pid = w.child.pid;
  w.child.kill('SIGKILL');
  await w.child.status;
  await w.done;
  const deadTag = `${pid.toString(36)}.${OWNER_TAG.split('.')[1]}`;
  const left = (await filesUnder(store)).filter((f) => f.includes(`-${deadTag}/`));
  assert.strictEqual(left.length, 5, `two committed saves' two tensors each, plus the killed one's first: ${left}`);
  const s = new AdapterStore(new FileKv(store));
  assert.deepEqual((await s.versions('k')).map((m) => m.version), [1, 2]);
  const m = await s.save('k', writerTensors(7, 50), { baseModel: 'm', rank: 4, alpha: 8, targetModules: ['q'], step: 7 });
  assert.strictEqual(m.version, 3);
  assert.strictEqual((await filesUnder(store)).filter((f) => f.includes(`-${deadTag}/`)).length, 4, 'only the committed tensors of the dead writer remain');
  for (const v of [1, 2]) assertSame((await s.load('k', v)).tensors, writerTensors(1000 + v - 1, 4000), `version ${v}`);
  assertSame((await s.load('k')).tensors, writerTensors(7, 50), 'version 3');
  await Deno.remove(dir, { recursive: true });
});

Deno.test("files: a dead process's temporary files and uncommitted tensors are swept at once, a live one's kept", async () => {
  const root = await Deno.makeTempDir({ prefix: 'wt-sweep-' });
  const exited = new Deno.Command(Deno.execPath(), { args: ['eval', ''] }).spawn();
  await exited.status; // reaped: its pid is certainly no running process now (until reused)
  const host = OWNER_TAG.split('.')[1];
  assert.notStrictEqual(host, '', 'the host is known here (/etc/hostname)');
  const dead = `${exited.pid.toString(36)}.${host}`;
  const live = `1.${host}`; // pid 1 runs as long as the machine (or container) does
  const now = Date.now().toString(36);
  const put = async (rel: string) => {
    await Deno.mkdir(join(root, rel, '..'), { recursive: true });
    await Deno.writeFile(join(root, rel), new Uint8Array(16));
  };
  const deadFiles = [
    `adapters/s/versions/1.json.tmp-${dead}-0`, // a commit killed between write and link
    `adapters/s/blobs/${now}-aa-${dead}/t0.bin`, // tensors of a save that never committed
    `adapters/s/blobs/${now}-aa-${dead}/t1.bin.tmp-${dead}-1`,
  ];
  const liveFiles = [`adapters/s/blobs/${now}-bb-${live}/t0.bin`, `adapters/s/blobs/${now}-bb-${live}/t1.bin.tmp-${live}-2`];
  for (const f of [...deadFiles, ...liveFiles]) await put(f);
  const s = new AdapterStore(new FileKv(root));
  const m = await s.save('s', writerTensors(3, 20), { baseModel: 'm', rank: 4, alpha: 8, targetModules: ['q'], step: 3 });
  assert.strictEqual(m.version, 1, 'the dead commit attempt does not take version 1');
  const files = await filesUnder(root);
  for (const f of deadFiles) assert.notInclude(files, f);
  for (const f of liveFiles) assert.include(files, f);
  assertSame((await s.load('s')).tensors, writerTensors(3, 20), 'version 1');
  await Deno.remove(root, { recursive: true });
});
