/**
 * Host memory while loading a checkpoint through the Hub loader: a Qwen3-shaped twin (C=512, 4
 * layers, vocab 8192, F32: about 44 MB) served by the tests' fake Hub on 127.0.0.1, downloaded into
 * a fresh cache (the server runs in a child process), then loaded offline, then imported. RSS is sampled every 5 ms (Deno.memoryUsage)
 * during each phase; the figures are the baseline before and the peak above it, per phase:
 *   download  — loadPretrained online: the body streams to blobs/<etag>.incomplete, hashed from disk
 *   open      — loadPretrained offline: config, tokenizer, safetensors headers only
 *   stream    — readHfImport one tensor at a time, each dropped (what a streaming upload holds)
 *   import    — importHfWeights: every tensor as f32 at once (what BaseModel.upload takes today)
 * HUB_BENCH_VOCAB=40000 makes the twin 123 MiB (its embedding 78 MiB) to see what grows with size.
 * Run: npx deno run --allow-read --allow-write --allow-env --allow-net=127.0.0.1 --allow-run --v8-flags=--expose-gc test/bench/hub_load_memory.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPretrained } from '../../src/hub/pretrained.ts';
import { configFromHf, configToHf } from '../../src/model/hf_config.ts';
import { initParameters } from '../../src/model/init.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { exportHfWeights, importHfWeights, readHfImport } from '../../src/model/weight_names.ts';
import { FakeHub } from '../deno/fake_hub.ts';
import { tokenizerFiles } from '../shared/hub_twin.ts';

const MB = 2 ** 20;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** JS heap + ArrayBuffers outside it: what the loader itself holds (RSS also keeps freed pages). */
const live = () => {
  const m = Deno.memoryUsage();
  return m.heapUsed + m.external;
};

async function phase<T>(name: string, f: () => Promise<T>): Promise<T> {
  gc();
  const base = Deno.memoryUsage().rss;
  const liveBase = live();
  let peak = base;
  let livePeak = liveBase;
  const sample = () => {
    peak = Math.max(peak, Deno.memoryUsage().rss);
    livePeak = Math.max(livePeak, live());
  };
  const timer = setInterval(sample, 5);
  try {
    const out = await f();
    sample();
    console.log(`${name.padEnd(9)} rss ${(base / MB).toFixed(1)} MiB, peak +${((peak - base) / MB).toFixed(1)} MiB; heap+external peak +${((livePeak - liveBase) / MB).toFixed(1)} MiB`);
    return out;
  } finally {
    clearInterval(timer);
  }
}

const repo = 'bench/qwen3-61m';
if (Deno.args[0] === '--serve') {
  // The twin is built and served by a process of its own, so its copies are not counted.
  const golden = JSON.parse(await Deno.readTextFile(new URL('../goldens/qwen3/config.json', import.meta.url)));
  const cfg = configFromHf({ ...golden, hidden_size: 512, intermediate_size: 1408, num_hidden_layers: 4, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 64, vocab_size: Number(Deno.env.get('HUB_BENCH_VOCAB') ?? 8192) });
  const params = initParameters(cfg, 0);
  const weights = writeSafetensors(exportHfWeights(cfg, params));
  const largest = Math.max(...Object.values(params).map((p) => p.byteLength));
  const files = {
    ...tokenizerFiles(),
    'config.json': new TextEncoder().encode(JSON.stringify({ ...configToHf(cfg), bos_token_id: 386, eos_token_id: 388 })),
    'model.safetensors': weights,
  };
  console.log(`twin: ${(weights.byteLength / MB).toFixed(1)} MiB of F32 weights, largest tensor ${(largest / MB).toFixed(1)} MiB`);
  const hub = new FakeHub();
  await hub.start();
  hub.commit(repo, files);
  console.log(hub.url);
  await new Promise(() => {}); // until killed
}
if (Deno.args[0] === '--phase') {
  const [, name, endpoint, cacheDir] = Deno.args;
  if (name === 'download') (await phase(name, () => loadPretrained(repo, { endpoint, cacheDir }))).close();
  else {
    const p = await loadPretrained(repo, { cacheDir, offline: true });
    if (name === 'open') await phase(name, () => loadPretrained(repo, { cacheDir, offline: true }).then((q) => q.close()));
    if (name === 'stream') {
      await phase(name, async () => {
        for await (const t of readHfImport(p.plan)) void t; // each tensor dropped once read
      });
    }
    if (name === 'import') await phase(name, () => importHfWeights(p.config, p.weights));
    await p.close();
  }
  Deno.exit(0);
}
const server = new Deno.Command(Deno.execPath(), {
  args: ['run', '--allow-read', '--allow-env', '--allow-net=127.0.0.1', new URL(import.meta.url).pathname, '--serve'], stdout: 'piped', stderr: 'inherit',
}).spawn();
const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
let out = '';
while (!/http:\/\/\S+\n/.test(out)) out += (await lines.read()).value ?? '';
console.log(out.split('\n')[0]);
const endpoint = /http:\/\/\S+/.exec(out)![0];
const cacheDir = await mkdtemp(join(tmpdir(), 'hub-mem-'));
try {
  // Each phase in a fresh process: RSS freed by one phase and reused by the next would hide its cost.
  for (const name of ['download', 'open', 'stream', 'import']) {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ['run', '--allow-read', '--allow-write', '--allow-env', '--allow-net=127.0.0.1', '--v8-flags=--expose-gc', new URL(import.meta.url).pathname, '--phase', name, endpoint, cacheDir],
      stdout: 'inherit', stderr: 'inherit',
    }).output();
    if (!r.success) throw new Error(`phase ${name} failed`);
  }
} finally {
  server.kill();
  await server.status;
  await rm(cacheDir, { recursive: true, force: true });
}
