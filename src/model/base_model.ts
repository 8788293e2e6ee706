/**
 * BaseModel — a model's canonical parameters (params.ts) on the GPU, uploaded once and shared by
 * every adapter, training job and generation request that runs on it. It implements
 * ModelWeights, the interface the training and inference passes read.
 *
 * Byte accounting: every tensor is owned by `owner` (default `model:<name>`), so the pool reports
 * what the base costs apart from the jobs on it. Frozen linear weights ([out, in] matrices of the
 * blocks and an untied lm_head) may be stored as f16 (`f16: true`) where the device has
 * shader-f16; embeddings, norms, biases and the value head stay f32 (the kernels read those in
 * f32, and the embedding doubles as the tied output head). Without shader-f16 the request falls
 * back to f32, which always works.
 *
 * A full-parameter job must not write into weights others read: the Trainer copies the base into
 * its own tensors for trainable 'all' (see trainer.ts), so a BaseModel is never modified.
 *
 * Upload is all or nothing: when a tensor is missing, misshaped or an allocation fails, every
 * buffer created so far is released before the error propagates.
 */
import { ReleasedError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { Recorder } from '../gpu/recorder.ts';
import { emptyTensor, type Tensor, tensorFrom } from '../gpu/tensor.ts';
import type { ModelConfig } from './config.ts';
import { WeightsError } from './errors.ts';
import { f16ToF32Array, f32ToF16Array } from './f16.ts';
import { numel, type ParamSpec, parameterSpecs } from './params.ts';
import { planHfImport, readHfImport, type TensorSource } from './weight_names.ts';
import type { ModelWeights } from './weights_view.ts';

export interface BaseModelOptions {
  /** Pool owner of the parameter bytes. Default `model:<cfg.name ?? family>`. */
  readonly owner?: string;
  /** Store frozen linear weights as f16 where the device has shader-f16. Default false. */
  readonly f16?: boolean;
  /** Name of the source in error messages (a file, a URL). Default '<params>'. */
  readonly source?: string;
}

/** Whether a parameter may be stored in f16: the blocks' linear weights and an untied lm_head. */
export function f16Eligible(spec: ParamSpec): boolean {
  return spec.kind === 'linear' && !spec.name.startsWith('value_head.');
}

/**
 * Checks a host parameter dict against the config: every canonical tensor present with the right
 * element count, nothing unknown. value_head.{weight,bias} are optional (both or neither).
 * Returns the specs in canonical order. Throws WeightsError naming the tensor.
 */
export function checkHostParams(cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, source = '<params>'): ParamSpec[] {
  const valueHead = Object.hasOwn(params, 'value_head.weight') || Object.hasOwn(params, 'value_head.bias');
  const specs = parameterSpecs(cfg, { valueHead });
  const known = new Set(specs.map((s) => s.name));
  for (const name of Object.keys(params)) {
    if (!known.has(name)) throw new WeightsError('unexpected', source, name, `not a parameter of this ${cfg.family} config`);
  }
  for (const s of specs) {
    const data = params[s.name];
    if (!Object.hasOwn(params, s.name) || data === undefined) throw new WeightsError('missing', source, s.name, `needed with shape [${s.shape.join(', ')}]`);
    if (!(data instanceof Float32Array)) throw new WeightsError('dtype', source, s.name, 'must be a Float32Array');
    if (data.length !== numel(s.shape)) {
      throw new WeightsError('shape', source, s.name, `has ${data.length} values, want [${s.shape.join(', ')}] = ${numel(s.shape)}`);
    }
  }
  return specs;
}

let nextModel = 0;

export class BaseModel implements ModelWeights {
  readonly ctx: GpuContext;
  readonly cfg: ModelConfig;
  readonly owner: string;
  /** True when the linear weights are stored as f16. */
  readonly f16: boolean;
  /** Canonical specs of the parameters held, in order. */
  readonly specs: readonly ParamSpec[];
  #tensors: Map<string, Tensor>;
  #released = false;

  private constructor(ctx: GpuContext, cfg: ModelConfig, owner: string, f16: boolean, specs: ParamSpec[], tensors: Map<string, Tensor>) {
    this.ctx = ctx;
    this.cfg = cfg;
    this.owner = owner;
    this.f16 = f16;
    this.specs = Object.freeze(specs);
    this.#tensors = tensors;
    // Weights are read by every step and written by an optimizer step at most: where the matmul
    // reads through texture copies (llvmpipe) the copies are kept (Recorder.texels).
    for (const t of tensors.values()) t.keepTexels = true;
  }

  /** Upload host parameters (canonical names, f32) once. All or nothing. */
  static upload(ctx: GpuContext, cfg: ModelConfig, params: Readonly<Record<string, Float32Array>>, opts: BaseModelOptions = {}): BaseModel {
    const specs = checkHostParams(cfg, params, opts.source);
    const owner = opts.owner ?? `model:${cfg.name ?? cfg.family}#${nextModel++}`;
    const f16 = Boolean(opts.f16) && ctx.hasF16;
    const tensors = new Map<string, Tensor>();
    try {
      for (const s of specs) {
        const data = params[s.name];
        const host = f16 && f16Eligible(s) ? f32ToF16Array(data) : data;
        tensors.set(s.name, tensorFrom(ctx, host, s.shape, { owner, label: s.name, exact: true }));
      }
    } catch (e) {
      for (const t of tensors.values()) t.release();
      throw e;
    }
    return new BaseModel(ctx, cfg, owner, f16, specs, tensors);
  }

  /**
   * A Hugging Face checkpoint (one file, or shards as one TensorSource) streamed into a new
   * BaseModel one tensor at a time: names, shapes and dtypes are checked from the headers first
   * (planHfImport: nothing is read or allocated for a bad checkpoint), then each HF tensor is read
   * as f32, split into its canonical parts (GPT-2's fused c_attn), narrowed to f16 where asked,
   * uploaded at its exact size and dropped — so the host holds about one tensor at a time, never a
   * copy of the model. `f16: 'auto'` stores the linear weights as f16 when the checkpoint's are
   * 16-bit (BF16 or F16) and the device has shader-f16. All or nothing, as `upload`.
   */
  static async load(ctx: GpuContext, cfg: ModelConfig, source: TensorSource, opts: Omit<BaseModelOptions, 'f16'> & { f16?: boolean | 'auto' } = {}): Promise<BaseModel> {
    const plan = planHfImport(cfg, source);
    const specs = parameterSpecs(cfg);
    const bySpec = new Map(specs.map((s) => [s.name, s]));
    const sixteen = plan.entries.filter((e) => e.hfShape.length === 2).every((e) => ['BF16', 'F16'].includes(source.info(e.hf).dtype));
    const f16 = (opts.f16 === 'auto' ? sixteen : Boolean(opts.f16)) && ctx.hasF16;
    const owner = opts.owner ?? `model:${cfg.name ?? cfg.family}#${nextModel++}`;
    const tensors = new Map<string, Tensor>();
    try {
      for await (const t of readHfImport(plan)) {
        const s = bySpec.get(t.name)!;
        const host = f16 && f16Eligible(s) ? f32ToF16Array(t.data) : t.data;
        tensors.set(t.name, tensorFrom(ctx, host, s.shape, { owner, label: s.name, exact: true }));
      }
    } catch (e) {
      for (const t of tensors.values()) t.release();
      throw e;
    }
    return new BaseModel(ctx, cfg, owner, f16, specs, tensors);
  }

  get released(): boolean {
    return this.#released;
  }

  /** Whether the value head (value_head.weight, value_head.bias) was uploaded. */
  get hasValueHead(): boolean {
    return this.#tensors.has('value_head.weight');
  }

  param(name: string): Tensor {
    if (this.#released) throw new ReleasedError(`base model "${this.owner}"`);
    const t = this.#tensors.get(name);
    if (!t) throw new WeightsError('missing', this.owner, name, `not held by this ${this.cfg.family} model`);
    return t;
  }

  has(name: string): boolean {
    return !this.#released && this.#tensors.has(name);
  }

  /** Canonical names held, in order. */
  names(): string[] {
    return this.specs.map((s) => s.name);
  }

  /** Bytes of the parameters (element bytes, without the pool's rounding). */
  get byteLength(): number {
    let n = 0;
    for (const t of this.#tensors.values()) n += t.byteLength;
    return n;
  }

  /** Every parameter back on the host as f32 (f16 weights widened exactly). One submission. */
  toHost(): Promise<Record<string, Float32Array>> {
    return this.toHostSubset(this.names());
  }

  /** Some parameters back on the host as f32. One submission. */
  async toHostSubset(names: readonly string[]): Promise<Record<string, Float32Array>> {
    if (this.#released) throw new ReleasedError(`base model "${this.owner}"`);
    const rec = new Recorder(this.ctx, { label: `${this.owner} toHost` });
    const reads = names.map((name) => [name, rec.read(this.param(name))] as const);
    await rec.submit();
    const out: Record<string, Float32Array> = {};
    for (const [name, p] of reads) {
      const a = await p;
      out[name] = a instanceof Uint16Array ? f16ToF32Array(a) : (a as Float32Array);
    }
    return out;
  }

  /**
   * A copy with its own buffers under `opts.owner` (a full-parameter job's weights). An f32 model
   * is copied on the GPU in one submission; an f16 one goes through the host to be widened.
   */
  async copy(opts: BaseModelOptions = {}): Promise<BaseModel> {
    if (this.#released) throw new ReleasedError(`base model "${this.owner}"`);
    const f16 = Boolean(opts.f16) && this.ctx.hasF16;
    if (this.f16 || f16) return BaseModel.upload(this.ctx, this.cfg, await this.toHost(), opts);
    const owner = opts.owner ?? `${this.owner}/copy#${nextModel++}`;
    const tensors = new Map<string, Tensor>();
    try {
      const rec = new Recorder(this.ctx, { label: `${this.owner} copy` });
      for (const s of this.specs) {
        // Exact size, as every BaseModel tensor (long-lived: a size class would waste up to a third).
        const t = emptyTensor(this.ctx, s.shape, 'f32', { owner, label: s.name, exact: true });
        tensors.set(s.name, t);
        rec.copy(this.param(s.name), t);
      }
      await rec.submit();
    } catch (e) {
      for (const t of tensors.values()) t.release();
      throw e;
    }
    return new BaseModel(this.ctx, this.cfg, owner, false, [...this.specs], tensors);
  }

  /** Free every buffer. Jobs and adapters on this model must be done with it. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    for (const t of this.#tensors.values()) t.release();
    this.#tensors.clear();
  }
}
