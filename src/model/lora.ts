/**
 * LoraAdapter — one LoRA adapter's tensors on the GPU (AdapterWeights): per adapted module M
 * (e.g. `layers.3.attn.q`) A = M.lora_a [R, in] and B = M.lora_b [out, R]; the module computes
 * y = x·Wᵀ + b + (α/R)·(x·Aᵀ)·Bᵀ. Many adapters live on one BaseModel at once; each owns its own
 * bytes (`owner`, default `adapter:<id>`), and a training job updates its adapter in place.
 *
 * Created from a seeded init (PEFT's: A ~ U(−1/√in, 1/√in), B = 0; init.ts) or from host tensors
 * (a checkpoint, a PEFT import through peft.ts). `toHost()` gives the canonical host dict back for
 * saving or PEFT export. Creation is all or nothing: a failure releases what was uploaded.
 */
import { ReleasedError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { type Tensor, tensorFrom } from '../gpu/tensor.ts';
import { type LoraConfig, loraScale, type ModelConfig, validateLora } from './config.ts';
import { WeightsError } from './errors.ts';
import { initLora } from './init.ts';
import { loraSpecs, numel, type ParamSpec } from './params.ts';
import type { AdapterWeights, LoraModule } from './weights_view.ts';

export interface LoraAdapterOptions {
  /** Adapter id (names it in logs and the adapter store). Default `lora-<n>`. */
  readonly id?: string;
  /** Pool owner of the adapter's bytes. Default `adapter:<id>`. */
  readonly owner?: string;
  /** Name of the source in error messages. */
  readonly source?: string;
}

let nextAdapter = 0;

/** Checks host adapter tensors against the config; returns the specs. Throws WeightsError. */
export function checkLoraHost(cfg: ModelConfig, lora: LoraConfig, tensors: Readonly<Record<string, Float32Array>>, source = '<adapter>'): ParamSpec[] {
  const specs = loraSpecs(cfg, lora);
  const known = new Set(specs.map((s) => s.name));
  for (const name of Object.keys(tensors)) {
    if (!known.has(name)) throw new WeightsError('unexpected', source, name, `not a tensor of this adapter (targets ${lora.targets.join(', ')}, rank ${lora.rank})`);
  }
  for (const s of specs) {
    const data = tensors[s.name];
    if (!Object.hasOwn(tensors, s.name) || data === undefined) throw new WeightsError('missing', source, s.name, `needed with shape [${s.shape.join(', ')}]`);
    if (!(data instanceof Float32Array)) throw new WeightsError('dtype', source, s.name, 'must be a Float32Array');
    if (data.length !== numel(s.shape)) throw new WeightsError('shape', source, s.name, `has ${data.length} values, want [${s.shape.join(', ')}]`);
  }
  return specs;
}

export class LoraAdapter implements AdapterWeights {
  readonly ctx: GpuContext;
  readonly cfg: ModelConfig;
  readonly id: string;
  readonly lora: LoraConfig;
  readonly owner: string;
  /** lora_a / lora_b specs in canonical order. */
  readonly specs: readonly ParamSpec[];
  #tensors: Map<string, Tensor>;
  #modules = new Map<string, LoraModule>();
  #released = false;

  private constructor(ctx: GpuContext, cfg: ModelConfig, id: string, lora: LoraConfig, owner: string, specs: ParamSpec[], tensors: Map<string, Tensor>) {
    this.ctx = ctx;
    this.cfg = cfg;
    this.id = id;
    this.lora = lora;
    this.owner = owner;
    this.specs = Object.freeze(specs);
    this.#tensors = tensors;
    const scale = loraScale(lora);
    for (const s of specs) {
      if (s.kind !== 'lora-a') continue;
      const m = s.name.slice(0, -'.lora_a'.length);
      this.#modules.set(m, Object.freeze({ a: tensors.get(`${m}.lora_a`)!, b: tensors.get(`${m}.lora_b`)!, scale }));
    }
  }

  /** A fresh adapter from `seed` (A uniform, B zero: the model's outputs are unchanged). */
  static init(ctx: GpuContext, cfg: ModelConfig, lora: LoraConfig, seed: number, opts: LoraAdapterOptions = {}): LoraAdapter {
    return LoraAdapter.fromHost(ctx, cfg, lora, initLora(cfg, lora, seed), opts);
  }

  /** Upload host tensors (canonical `<module>.lora_a` / `.lora_b` names). All or nothing. */
  static fromHost(ctx: GpuContext, cfg: ModelConfig, loraIn: LoraConfig, tensors: Readonly<Record<string, Float32Array>>, opts: LoraAdapterOptions = {}): LoraAdapter {
    const lora = validateLora(cfg, loraIn);
    const specs = checkLoraHost(cfg, lora, tensors, opts.source);
    const id = opts.id ?? `lora-${nextAdapter++}`;
    const owner = opts.owner ?? `adapter:${id}`;
    const out = new Map<string, Tensor>();
    try {
      for (const s of specs) out.set(s.name, tensorFrom(ctx, tensors[s.name], s.shape, { owner, label: `${id}/${s.name}` }));
    } catch (e) {
      for (const t of out.values()) t.release();
      throw e;
    }
    return new LoraAdapter(ctx, cfg, id, lora, owner, specs, out);
  }

  get released(): boolean {
    return this.#released;
  }

  module(name: string): LoraModule | undefined {
    if (this.#released) throw new ReleasedError(`adapter "${this.id}"`);
    return this.#modules.get(name);
  }

  /** The tensor of a canonical adapter name (`layers.0.attn.q.lora_a`). */
  tensor(name: string): Tensor {
    if (this.#released) throw new ReleasedError(`adapter "${this.id}"`);
    const t = this.#tensors.get(name);
    if (!t) throw new WeightsError('missing', this.id, name, 'not a tensor of this adapter');
    return t;
  }

  names(): string[] {
    return this.specs.map((s) => s.name);
  }

  /** Bytes of the adapter's tensors. */
  get byteLength(): number {
    let n = 0;
    for (const t of this.#tensors.values()) n += t.byteLength;
    return n;
  }

  /** The adapter's tensors on the host, canonical names (for saving, PEFT export). One submission. */
  async toHost(): Promise<Record<string, Float32Array>> {
    if (this.#released) throw new ReleasedError(`adapter "${this.id}"`);
    const rec = new Recorder(this.ctx, { label: `${this.id} toHost` });
    const reads = this.specs.map((s) => [s.name, rec.read(this.#tensors.get(s.name)!)] as const);
    await rec.submit();
    const out: Record<string, Float32Array> = {};
    for (const [name, p] of reads) out[name] = (await p) as Float32Array;
    return out;
  }

  /** Free every buffer of the adapter. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    for (const t of this.#tensors.values()) t.release();
    this.#tensors.clear();
    this.#modules.clear();
  }
}
