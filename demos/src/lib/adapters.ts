/**
 * The demos' adapters in IndexedDB: each finished run is saved as a LoRA adapter (AdapterStore)
 * plus, under the same name, a checkpoint (CheckpointStore) that holds the base it applies to —
 * the warm-started weights of a from-scratch model, which exist nowhere else — and the run's
 * settings. The adapter is written last, so a run appears in `list()` only once both are durable.
 *
 * Export: PEFT's files (adapter_config.json, adapter_model.safetensors) with the base in Hugging
 * Face layout (base/config.json, base/model.safetensors), zipped into one download.
 */
import { strToU8, zipSync } from 'fflate';
import {
  AdapterStore,
  type AdapterMeta,
  CheckpointStore,
  configToHf,
  engine,
  exportHfWeights,
  exportPeftAdapter,
  type HostParams,
  IdbKv,
  type JobResult,
  type KvStore,
  type LoraConfig,
  type ModelConfig,
  StoreError,
  writeSafetensors,
} from '../../../src/mod.ts';
import type { RunCurves } from '../../../src/plot/run_curves.ts';
import type { DemoSettings } from './job.ts';
import type { CapturedBase } from './tap.ts';

/** What the checkpoint of a run records besides the base tensors. */
export interface RunInfo {
  readonly settings: DemoSettings;
  readonly cfg: ModelConfig;
  readonly lora: LoraConfig;
  readonly successBefore: number;
  readonly successAfter: number;
  readonly rewardCurve: number[];
  /** The RL loss and the warm start's SFT loss per step, and the evaluations' size (runs saved before these were kept lack them). */
  readonly lossCurve?: number[];
  readonly sftLossCurve?: number[];
  readonly evalEpisodes?: number;
  readonly wallSeconds: number;
}

export interface SavedRun {
  readonly name: string;
  readonly meta: AdapterMeta;
  readonly info: RunInfo;
}

export interface LoadedRun extends SavedRun {
  readonly base: HostParams;
  readonly adapter: HostParams;
}

const hostOf = (tensors: readonly { name: string; data: Float32Array | Uint16Array }[]): HostParams =>
  Object.fromEntries(tensors.map((t) => {
    if (!(t.data instanceof Float32Array)) throw new StoreError(`tensor "${t.name}" is not f32`);
    return [t.name, t.data];
  }));

export class DemoStore {
  readonly adapters: AdapterStore;
  readonly bases: CheckpointStore<RunInfo>;
  /** The store both live in (the fleet page copies a fleet job's adapter into it). */
  readonly kv: KvStore;

  constructor(kv: KvStore = new IdbKv('webtinker-demos')) {
    this.kv = kv;
    this.adapters = new AdapterStore(kv);
    this.bases = new CheckpointStore<RunInfo>(kv, { keepLast: 1 });
  }

  /** A name not taken yet: `<env>-<algo>-<k>`. */
  async freshName(prefix: string): Promise<string> {
    const taken = new Set((await this.adapters.list()).map((m) => m.name));
    let k = 1;
    while (taken.has(`${prefix}-${k}`)) k++;
    return `${prefix}-${k}`;
  }

  /** Saves a finished LoRA run; returns its name. */
  async save(settings: DemoSettings, result: JobResult, base: CapturedBase): Promise<string> {
    const { cfg, lora, tensors } = result.trained;
    if (!lora) throw new StoreError('only LoRA runs are saved as adapters');
    const name = await this.freshName(`${settings.env}-${settings.algo}`);
    const baseParams = base.params ?? engine.initParameters(cfg, base.seed ?? 0);
    const info: RunInfo = {
      settings, cfg, lora, successBefore: result.successBefore, successAfter: result.successAfter,
      rewardCurve: [...result.rewardCurve], lossCurve: [...result.lossCurve], sftLossCurve: [...result.sftLossCurve], evalEpisodes: result.evalEpisodes,
      wallSeconds: result.wallSeconds,
    };
    await this.bases.save(name, engine.parameterSpecs(cfg).map((s) => ({ name: s.name, shape: [...s.shape], dtype: 'f32' as const, data: baseParams[s.name] })), { step: settings.warmstart, state: info });
    try {
      await this.adapters.save(name, engine.loraSpecs(cfg, lora).map((s) => ({ name: s.name, shape: [...s.shape], dtype: 'f32' as const, data: tensors[s.name] })), {
        baseModel: `${cfg.name ?? cfg.family}+warmstart:${name}`,
        rank: lora.rank,
        alpha: lora.alpha,
        targetModules: [...lora.targets],
        step: settings.steps,
        metrics: { successBefore: result.successBefore, successAfter: result.successAfter, rewardAfter: result.rewardAfter, wallSeconds: result.wallSeconds },
      });
    } catch (e) {
      await this.bases.delete(name).catch(() => {});
      throw e;
    }
    return name;
  }

  /** Every saved run, newest first. */
  async list(): Promise<SavedRun[]> {
    const out: SavedRun[] = [];
    for (const meta of await this.adapters.list()) {
      const ck = await this.bases.latest(meta.name);
      if (ck) out.push({ name: meta.name, meta, info: ck.state });
    }
    return out.sort((a, b) => b.meta.createdAt.localeCompare(a.meta.createdAt));
  }

  async load(name: string): Promise<LoadedRun> {
    const a = await this.adapters.load(name);
    const b = await this.bases.load(name);
    return { name, meta: a.meta, info: b.meta.state, base: hostOf(b.tensors), adapter: hostOf(a.tensors) };
  }

  async delete(name: string): Promise<void> {
    await this.adapters.delete(name);
    await this.bases.delete(name).catch(() => {});
  }

  /** PEFT adapter + its base in HF layout, as one zip. */
  async exportZip(name: string): Promise<{ filename: string; blob: Blob }> {
    const run = await this.load(name);
    const { cfg, lora, settings } = run.info;
    const baseId = `webtinker/${cfg.name ?? cfg.family}-${settings.env}-warmstart`;
    const peft = exportPeftAdapter(cfg, lora, run.adapter, baseId);
    const readme = [
      `# ${name}`,
      '',
      `A LoRA adapter trained by the webtinker demos: ${settings.algo} on the ${settings.env} environment, ${settings.steps} RL steps`,
      `after a ${settings.warmstart}-step SFT warm start of a from-scratch ${cfg.name ?? cfg.family} (byte-level tokenizer: bytes 0-255, then <pad> <bos> <eos>).`,
      '',
      '- adapter_config.json, adapter_model.safetensors: the adapter in PEFT format',
      `- base/: the warm-started base model it applies to (Hugging Face ${cfg.family} layout); base_model_name_or_path names it "${baseId}"`,
      '',
      `Held-out success: ${run.info.successBefore} before RL, ${run.info.successAfter} after.`,
      '',
    ].join('\n');
    const files: Record<string, Uint8Array> = {
      'adapter_config.json': strToU8(JSON.stringify(peft.adapterConfig, null, 2) + '\n'),
      'adapter_model.safetensors': writeSafetensors(peft.tensors, { metadata: peft.metadata }),
      'base/config.json': strToU8(JSON.stringify(configToHf(cfg), null, 2) + '\n'),
      'base/model.safetensors': writeSafetensors(exportHfWeights(cfg, run.base), { metadata: { format: 'pt' } }),
      'README.md': strToU8(readme),
    };
    const zip = zipSync({ [`${name}-peft`]: files });
    return { filename: `${name}-peft.zip`, blob: new Blob([zip as Uint8Array<ArrayBuffer>], { type: 'application/zip' }) };
  }
}

/** Offers a blob as a download. */
export function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A saved run's curves in the run-curves specification (curve.svg's). */
export function savedCurves(r: SavedRun): RunCurves {
  const s = r.info.settings;
  const from = s.base === 'shipped' ? 'the shipped warm start' : `${s.warmstart} warm-start steps`;
  return {
    title: r.name,
    subtitle: `${s.env} · ${s.algo} · ${r.info.cfg.name ?? r.info.cfg.family} · from ${from} · ${s.steps} RL steps of ${s.groups} × ${s.groupSize}`,
    reward: r.info.rewardCurve,
    loss: r.info.lossCurve ?? [],
    ...(r.info.sftLossCurve ? { sftLoss: r.info.sftLossCurve } : {}),
    ...(s.evalEpisodes > 0 ? { evaluation: { before: r.info.successBefore, after: r.info.successAfter, episodes: r.info.evalEpisodes ?? s.evalEpisodes } } : {}),
  };
}
