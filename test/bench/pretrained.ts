/**
 * The `pretrained` part (issue 20 item 6): our engine at the real shapes of SmolLM2-135M and
 * Qwen2.5-0.5B with random weights, beside torch CPU (transformers + peft) on the same cores.
 * Opt-in (`--only pretrained`): on llvmpipe it takes many minutes.
 *
 * Per model, in this order (one model's GPU memory is given back before the next starts):
 *   checkpoint  initParameters (seeded), written as a bf16 model.safetensors with config.json and
 *               tokenizer files into a temporary Hugging Face cache (models--org--name/blobs,
 *               snapshots/<commit>, refs/main — as Python's huggingface_hub lays it out);
 *   torch       test/bench/peers/torch_pretrained.py on that snapshot folder (when a python3 with
 *               torch, transformers and peft is found; else a note): its load, decode and LoRA
 *               step figures, in a process of its own before ours runs;
 *   load        loadPretrained(repo, offline) + BaseModel.load (f16 base where shader-f16 exists):
 *               seconds from the cache to a base on the device (the file is in the OS page cache,
 *               having just been written: a warm cache);
 *   full step   one step of a full-parameter job on the base, for its peak, when its estimate fits
 *               in 80% of the host's available memory (llvmpipe's device memory is host RAM);
 *   LoRA step   forwardBackward + optimStep at B=1 T=256, rank 8 on q k v o up down: the first step
 *               gives the pool's peak, then timed steps (median);
 *   decode      greedy generate of n tokens after P-token prompts at B=1 and B=8 (prefill, then
 *               KV-cache decode): one warm-up generation, then timed ones; tokens/s = B·n / median.
 * Peaks are the pool's peakLiveBytes over the step less what was live before the base was loaded:
 * what estimateTrainingMemory's totalBytes counts (base, its kept texture copies, the job).
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GpuContext } from '../../src/gpu/device.ts';
import { loadPretrained } from '../../src/hub/pretrained.ts';
import { BaseModel } from '../../src/model/base_model.ts';
import type { LoraConfig, ModelConfig } from '../../src/model/config.ts';
import { generate } from '../../src/model/generate.ts';
import { configFromHf } from '../../src/model/hf_config.ts';
import { initParameters } from '../../src/model/init.ts';
import { LoraAdapter } from '../../src/model/lora.ts';
import { estimateTrainingMemory, trainingMemoryDevice } from '../../src/model/memory.ts';
import { countParameters } from '../../src/model/params.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { Trainer } from '../../src/model/trainer.ts';
import { exportHfWeights } from '../../src/model/weight_names.ts';
import { QWEN25_05B_CONFIG, SMOLLM2_135M_CONFIG } from '../shared/pretrained_configs.ts';
import { tokenizerFiles } from '../shared/hub_twin.ts';
import { measure, type TimingOptions } from './harness.ts';
import { benchBatch, benchPrompts } from './model_impl.ts';
import { fullBatch } from './model_ours.ts';
import { type PretrainedModelFigures, type PretrainedReport, pretrainedMarkdown, type TorchFigures } from './pretrained_report.ts';

export { pretrainedMarkdown };

export interface PretrainedShape {
  /** Row label, e.g. "SmolLM2-135M". */
  name: string;
  /** The cache's repo id for it. */
  repo: string;
  config: Record<string, unknown>;
}

export interface PretrainedSettings {
  shapes: readonly PretrainedShape[];
  train: { B: number; T: number; rank: number };
  decode: { P: number; n: number; batches: readonly number[] };
  trainTiming: TimingOptions;
  decodeTiming: TimingOptions;
  /** Timed iterations of the torch script (after one warm-up). */
  torchIters: number;
}

/** HF module names of the LoRA targets (ours: q k v o up down). */
const LORA_TARGETS = ['q', 'k', 'v', 'o', 'up', 'down'] as const;
const HF_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'];

export const PRETRAINED_RUN: PretrainedSettings = {
  shapes: [
    { name: 'SmolLM2-135M', repo: 'bench/SmolLM2-135M-random', config: SMOLLM2_135M_CONFIG },
    { name: 'Qwen2.5-0.5B', repo: 'bench/Qwen2.5-0.5B-random', config: QWEN25_05B_CONFIG },
  ],
  train: { B: 1, T: 256, rank: 8 },
  decode: { P: 16, n: 16, batches: [1, 8] },
  // Measured here (llvmpipe, 2 cores): a Qwen2.5-0.5B LoRA step takes ~57 s, so few iterations.
  trainTiming: { warmup: 0, iters: 2, minIters: 1, budgetMs: 60_000 },
  decodeTiming: { warmup: 0, iters: 2, minIters: 1, budgetMs: 30_000 },
  torchIters: 3,
};

/** The smoke run: the same code on a Qwen2.5-shaped model of a few MB. */
export const PRETRAINED_QUICK: PretrainedSettings = {
  shapes: [{
    name: 'Qwen2.5-shaped (tiny)', repo: 'bench/qwen25-tiny-random',
    config: { ...QWEN25_05B_CONFIG, hidden_size: 128, intermediate_size: 256, num_attention_heads: 2, num_hidden_layers: 2, vocab_size: 2048 },
  }],
  train: { B: 1, T: 32, rank: 4 },
  decode: { P: 4, n: 4, batches: [1, 8] },
  trainTiming: { warmup: 0, iters: 1, minIters: 1, budgetMs: 0 },
  decodeTiming: { warmup: 0, iters: 1, minIters: 1, budgetMs: 0 },
  torchIters: 1,
};

const errText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).split('\n')[0];
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Writes files as one commit of `repo` in a Hugging Face cache under `cacheDir`; returns the snapshot folder. */
async function writeCacheSnapshot(cacheDir: string, repo: string, files: Record<string, Uint8Array>): Promise<string> {
  const root = join(cacheDir, `models--${repo.replace('/', '--')}`);
  const commit = sha256(new TextEncoder().encode(repo)).slice(0, 40);
  const snapshot = join(root, 'snapshots', commit);
  await mkdir(join(root, 'blobs'), { recursive: true });
  await mkdir(snapshot, { recursive: true });
  await mkdir(join(root, 'refs'), { recursive: true });
  await writeFile(join(root, 'refs', 'main'), commit);
  for (const [f, b] of Object.entries(files)) {
    const blob = sha256(b);
    await writeFile(join(root, 'blobs', blob), b);
    await Deno.symlink(`../../blobs/${blob}`, join(snapshot, f));
  }
  return snapshot;
}

/** The random checkpoint in bf16, as a Hub repo holds it, and its parameter count. */
function checkpointFiles(shape: PretrainedShape, cfg: ModelConfig, log: (s: string) => void): Record<string, Uint8Array> {
  const t0 = performance.now();
  const tensors = exportHfWeights(cfg, initParameters(cfg, 7)).map((t) => ({ ...t, dtype: 'BF16' as const }));
  const weights = writeSafetensors(tensors, { metadata: { format: 'pt' } });
  log(`  ${shape.name}: ${countParameters(cfg)} parameters, random bf16 checkpoint ${(weights.byteLength / 2 ** 20).toFixed(1)} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { ...tokenizerFiles(), 'config.json': new TextEncoder().encode(JSON.stringify(shape.config)), 'model.safetensors': weights };
}

/** The torch script's figures per model name, or why there are none. */
async function runTorch(specs: unknown[], log: (s: string) => void): Promise<{ figures: Record<string, TorchFigures>; versions: string } | { why: string }> {
  const script = new URL('./peers/torch_pretrained.py', import.meta.url).pathname;
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command('python3', { args: [script, JSON.stringify(specs)], stdout: 'piped', stderr: 'piped' }).output();
  } catch (e) {
    return { why: `no python3 to run torch (${errText(e)})` };
  }
  const stderr = new TextDecoder().decode(out.stderr).trim();
  for (const line of stderr.split('\n')) if (line.startsWith('torch_pretrained:')) log(`  ${line}`);
  if (!out.success) return { why: `the torch script failed (exit ${out.code}): ${stderr.split('\n').slice(-1)[0]}` };
  const res = JSON.parse(new TextDecoder().decode(out.stdout).trim().split('\n').at(-1)!);
  if (res.unavailable) return { why: `torch not run: ${res.unavailable}` };
  return { figures: res.models, versions: `torch ${res.torch}, transformers ${res.transformers}, peft ${res.peft}, ${res.threads} threads` };
}

/** Bytes of host memory available now, or null where Deno may not read it. */
function availableMemory(): number | null {
  try {
    return Deno.systemMemoryInfo().available;
  } catch {
    return null;
  }
}

/** First step (peak) and timed steps of one job on `model`; the peak counts from `live0`. */
async function trainSteps(ctx: GpuContext, model: BaseModel, mode: 'lora' | 'full', s: PretrainedSettings, lora: LoraConfig, live0: number, timed: boolean) {
  const cfg = model.cfg;
  const { B, T } = s.train;
  const adapter = mode === 'lora' ? LoraAdapter.init(ctx, cfg, lora, 13, { id: `bench-${mode}`, owner: 'job:pretrained' }) : undefined;
  try {
    const trainer = await Trainer.create(model, { id: `pretrained-${mode}`, trainable: mode === 'lora' ? 'lora' : 'all', ...(adapter ? { adapter } : {}) });
    try {
      const { inputsBT, targetsBT } = benchBatch(cfg, B, T, 11);
      const batch = fullBatch(B, T, inputsBT, targetsBT);
      const step = async () => {
        const r = await trainer.forwardBackward(batch, { kind: 'cross_entropy', aggregation: 'token_mean' });
        const o = await trainer.optimStep({ lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 });
        if (o.skipped || !Number.isFinite(r.loss)) throw new Error(`${mode} step skipped (loss ${r.loss})`);
      };
      // The peak as on a fresh device: no scratch texture cached by earlier work serving a smaller copy (texture_cache.ts).
      ctx.textureCache.trim();
      ctx.pool.resetPeaks();
      const t0 = performance.now();
      await step();
      const firstS = (performance.now() - t0) / 1000;
      const peak = ctx.pool.stats().peakLiveBytes - live0;
      const stats = timed ? await measure(() => step(), s.trainTiming) : null;
      return { peak, firstS, medianS: stats ? stats.median_ms / 1000 : null, n: stats?.n ?? 0 };
    } finally {
      trainer.release();
    }
  } finally {
    adapter?.release();
  }
}

async function oursFor(ctx: GpuContext, shape: PretrainedShape, cfg: ModelConfig, cacheDir: string, s: PretrainedSettings, log: (s: string) => void): Promise<PretrainedModelFigures> {
  const lora: LoraConfig = { rank: s.train.rank, alpha: 2 * s.train.rank, targets: [...LORA_TARGETS] };
  const device = trainingMemoryDevice(ctx);
  const notes: string[] = [];
  const live0 = ctx.pool.stats().liveBytes;
  const t0 = performance.now();
  const p = await loadPretrained(shape.repo, { cacheDir, offline: true });
  let model: BaseModel;
  try {
    model = await BaseModel.load(ctx, p.config, p.weights, { f16: 'auto', owner: 'model:pretrained' });
  } finally {
    await p.close();
  }
  const loadS = (performance.now() - t0) / 1000;
  log(`    ours load from the cache ${loadS.toFixed(2)} s (${model.f16 ? 'f16' : 'f32'} base, ${model.byteLength} B)`);
  const baseBytes = model.f16 ? 2 : 4;
  const est = (mode: 'lora' | 'full') => estimateTrainingMemory(cfg, { batch: s.train.B, seqLen: s.train.T, mode, lora, baseWeightBytes: baseBytes, device }).totalBytes;
  try {
    // The full step first, on a base no job has read yet: the base's kept texture copies (made by
    // LoRA steps and decoding, reserved with the base) are not part of a full job, which reads its own copy.
    let full: { peak: number; firstS: number } | null = null;
    const avail = availableMemory();
    const fullEst = est('full');
    if (avail === null) notes.push('full step not run: the host\'s available memory is unknown (needs --allow-sys=systemMemoryInfo)');
    else if (fullEst > 0.8 * avail) notes.push(`full step not run: its estimate, ${fullEst} B, is over 80% of the host's available memory (${avail} B; llvmpipe's device memory is host RAM)`);
    else {
      full = await trainSteps(ctx, model, 'full', s, lora, live0, false);
      log(`    ours full step ${full.firstS.toFixed(2)} s (one step), peak ${full.peak} B, estimate ${fullEst} B`);
    }
    const l = await trainSteps(ctx, model, 'lora', s, lora, live0, true);
    log(`    ours LoRA step ${l.medianS?.toFixed(2)} s (median of ${l.n}; first ${l.firstS.toFixed(2)} s), peak ${l.peak} B, estimate ${est('lora')} B`);
    const decode: Record<string, number> = {};
    for (const B of s.decode.batches) {
      const prompts = benchPrompts(cfg, B, s.decode.P, 17);
      let tokens = 0;
      const gen = async () => {
        const r = await generate(ctx, model, null, prompts, { maxTokens: s.decode.n, temperature: 0, seed: 0, owner: 'bench:pretrained-decode' });
        tokens = r.tokens.reduce((a, t) => a + t.length, 0);
      };
      await gen(); // warm-up: pipelines, kept texture copies
      const stats = await measure(() => gen(), s.decodeTiming);
      decode[`b${B}`] = (1000 * tokens) / stats.median_ms;
      log(`    ours decode B=${B}: ${decode[`b${B}`].toFixed(2)} tokens/s (${tokens} tokens, median of ${stats.n})`);
    }
    return {
      model: shape.name, params: countParameters(cfg), f16Base: model.f16, loadS,
      lora: { stepS: l.medianS, firstStepS: l.firstS, peakBytes: l.peak, estimateBytes: est('lora') },
      full: { stepS: full?.firstS ?? null, peakBytes: full?.peak ?? null, estimateBytes: fullEst },
      decodeTokS: decode, torch: null, notes,
    };
  } finally {
    model.release();
  }
}

/** Run the part. A model that fails gets a note and no figures; `failures` says so. */
export async function runPretrained(opts: { ctx: GpuContext; quick: boolean; log: (s: string) => void; settings?: PretrainedSettings }): Promise<PretrainedReport> {
  const s = opts.settings ?? (opts.quick ? PRETRAINED_QUICK : PRETRAINED_RUN);
  const { log } = opts;
  const cacheDir = await mkdtemp(join(tmpdir(), 'wt-pretrained-'));
  const models: PretrainedModelFigures[] = [];
  const failures: string[] = [];
  let torchVersions: string | null = null;
  let torchWhy: string | null = null;
  try {
    for (const shape of s.shapes) {
      log(`  ${shape.name}`);
      const cfg = configFromHf(shape.config);
      try {
        const snapshot = await writeCacheSnapshot(cacheDir, shape.repo, checkpointFiles(shape, cfg, log));
        const torch = await runTorch([{
          name: shape.name, folder: snapshot, iters: s.torchIters, decode: { P: s.decode.P, n: s.decode.n, batches: s.decode.batches },
          lora: { B: s.train.B, T: s.train.T, rank: s.train.rank, alpha: 2 * s.train.rank, targets: HF_TARGETS },
        }], log);
        const ours = await oursFor(opts.ctx, shape, cfg, cacheDir, s, log);
        if ('why' in torch) torchWhy = torch.why;
        else torchVersions = torch.versions;
        models.push({ ...ours, torch: 'why' in torch ? null : torch.figures[shape.name] ?? null });
      } catch (e) {
        log(`    FAILED: ${errText(e)}`);
        failures.push(`pretrained ${shape.name}: ${errText(e)}`);
      }
    }
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
  return { settings: { train: s.train, decode: s.decode, loraTargets: HF_TARGETS }, models, torchVersions, torchWhy, failures };
}
