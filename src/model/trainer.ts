/**
 * Trainer — one training job on a shared BaseModel: gradients, AdamW state and the calls the
 * runtime makes (Tinker's forward_backward / optim_step shape).
 *
 * Trainable sets:
 *   'lora' — the adapter's tensors only (and a value head, if the job has one). The base is read,
 *            never written, and its weight gradients are never computed.
 *   'all'  — every parameter of the model, embeddings included (a tied embedding gets both its
 *            input and output-head gradient). The job trains its own f32 copy of the base, owned
 *            by the job, so other jobs on the same BaseModel are unaffected. An adapter given
 *            here is trained too.
 *
 * Each call records all of its work into one Recorder and submits once, reading back only
 * scalars and what was asked for. Gradients accumulate over micro-batches (`forwardBackward`
 * calls) until `optimStep` or `zeroGrad`: the first micro-batch of a step writes them, later ones
 * add. The loss kernel runs with 'sum' aggregation and the batch's tokenScaleBT as token weights
 * (pack.ts), so the micro-batches' losses and gradients add up to the step's exactly.
 *
 * Non-finite steps: the gradient norm is computed on the GPU at the end of every forward/backward
 * recording and read back with the loss; `optimStep` skips (parameters, moments and the step
 * counter untouched, `skipped` counted, gradients discarded) when any loss of the step or the
 * norm is not finite; otherwise it records clipScale → AdamW straight from the GPU-side norm, and
 * the optimizer's guard skips the step, in the same way, when the update itself would make a
 * weight or a moment non-finite (a finite gradient at a huge learning rate).
 *
 * DPO is not a token-level loss: run computeLogprobs, form the pair gradients on the host, and
 * train with importance_sampling (oldLogprobs = those logprobs, advantages = −dL/dlogprob).
 */
import { ConfigError, ReleasedError, WebtinkerError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { OwnerStats } from '../gpu/pool.ts';
import { Recorder } from '../gpu/recorder.ts';
import { type AnyHostArray, type Tensor, tensorFrom } from '../gpu/tensor.ts';
import type { PackedBatch } from '../algorithms/pack.ts';
import type { LossSpec } from '../algorithms/loss_spec.ts';
import { BaseModel } from './base_model.ts';
import { type GpuBatch, uploadBatch } from './batch.ts';
import type { ModelConfig } from './config.ts';
import { allocActivations, headLogits, modelForward } from './forward.ts';
import { allocBackwardWork, headBackward, modelBackward } from './backward.ts';
import { initParameters } from './init.ts';
import { Arena, type LayerEnv } from './layers.ts';
import type { LoraAdapter } from './lora.ts';
import { AdamWOptimizer, type OptimizerState, type OptimStepOptions } from './optimizer.ts';
import { lossNeeds, recordLoss, type LossReads } from './train_loss.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

export type Trainable = 'lora' | 'all';

export interface TrainerOptions {
  /** Job id; the pool owner of the job's bytes is `job:<id>`. */
  readonly id?: string;
  readonly trainable: Trainable;
  /** The adapter to train ('lora': required). */
  readonly adapter?: LoraAdapter;
  /**
   * A value head for a PPO critic: true (the base's value_head tensors if it has them, else a
   * seeded init: weight ~ N(0, 0.02), bias 0), or host tensors value_head.weight [1, C] and
   * value_head.bias [1]. Always trainable and owned by the job.
   */
  readonly valueHead?: boolean | Readonly<Record<string, Float32Array>>;
  /** Seed of a fresh value head. Default 0. */
  readonly seed?: number;
  /** Per-block recomputation: keep only the residual stream, rerun each block in backward. */
  readonly recompute?: boolean;
}

export interface StepStats {
  readonly clipFraction: number;
  readonly approxKl: number;
  readonly refKl: number;
  readonly entropy: number;
  /** The value loss's share of `loss` and its clip fraction (value head jobs with a value spec). */
  readonly valueLoss?: number;
  readonly valueClipFraction?: number;
}

export interface ForwardBackwardResult {
  /** This micro-batch's share of the step's loss (policy + value). */
  readonly loss: number;
  /** Tokens with a non-zero loss weight. */
  readonly tokens: number;
  readonly stats: StepStats;
  /** ‖accumulated gradients‖₂ after this micro-batch. */
  readonly gradNorm: number;
  /** [B·T] log p(target) when asked. */
  readonly logprobsBT?: Float32Array;
}

export interface LogprobsResult {
  readonly logprobsBT: Float32Array;
  /** [B·T·V] when asked. */
  readonly logits?: Float32Array;
  /** [B·T] when the job has a value head. */
  readonly valuesBT?: Float32Array;
}

export interface TrainerState extends OptimizerState {
  readonly trainable: Trainable;
}

/** ModelWeights of a job: the (shared or copied) base with the job's own value head on top. */
class JobWeights implements ModelWeights {
  constructor(readonly cfg: ModelConfig, readonly base: ModelWeights, readonly own: ReadonlyMap<string, Tensor>) {}
  param(name: string): Tensor {
    return this.own.get(name) ?? this.base.param(name);
  }
  has(name: string): boolean {
    return this.own.has(name) || this.base.has(name);
  }
}

let nextJob = 0;

export class Trainer {
  readonly ctx: GpuContext;
  readonly cfg: ModelConfig;
  readonly id: string;
  readonly owner: string;
  readonly trainable: Trainable;
  readonly recompute: boolean;
  readonly weights: ModelWeights;
  readonly adapter: AdapterWeights | undefined;
  readonly hasValueHead: boolean;
  #copy: BaseModel | null;
  #own: Tensor[];
  #opt: AdamWOptimizer;
  #microBatches = 0;
  #stepLossFinite = true;
  #lastNorm = 0;
  #released = false;

  private constructor(model: BaseModel, opts: TrainerOptions, id: string, owner: string, copy: BaseModel | null, own: Map<string, Tensor>, opt: AdamWOptimizer) {
    this.ctx = model.ctx;
    this.cfg = model.cfg;
    this.id = id;
    this.owner = owner;
    this.trainable = opts.trainable;
    this.recompute = Boolean(opts.recompute);
    this.adapter = opts.adapter;
    this.#copy = copy;
    this.#own = [...own.values()];
    this.weights = new JobWeights(model.cfg, copy ?? model, own);
    this.hasValueHead = own.has('value_head.weight');
    this.#opt = opt;
  }

  /** A job on `model`. 'all' copies the base into job-owned f32 tensors (a GPU copy, or via the host for f16 bases). */
  static async create(model: BaseModel, opts: TrainerOptions): Promise<Trainer> {
    if (opts.trainable !== 'lora' && opts.trainable !== 'all') throw new ConfigError('trainable', `must be 'lora' or 'all', got ${String(opts.trainable)}`);
    if (opts.trainable === 'lora' && !opts.adapter) throw new ConfigError('adapter', "trainable 'lora' needs an adapter");
    if (opts.adapter && opts.adapter.cfg !== model.cfg && JSON.stringify(opts.adapter.cfg) !== JSON.stringify(model.cfg)) {
      throw new ConfigError('adapter', `adapter "${opts.adapter.id}" was made for another model config`);
    }
    const id = opts.id ?? `trainer-${nextJob++}`;
    const owner = `job:${id}`;
    const ctx = model.ctx;
    const own = new Map<string, Tensor>();
    let copy: BaseModel | null = null;
    try {
      if (opts.valueHead) {
        const host = typeof opts.valueHead === 'object' ? opts.valueHead
          : model.hasValueHead ? await model.toHostSubset(['value_head.weight', 'value_head.bias'])
          : initParameters(model.cfg, opts.seed ?? 0, { valueHead: true });
        const C = model.cfg.dModel;
        own.set('value_head.weight', uploadOwned(ctx, host['value_head.weight'], [1, C], owner, 'value_head.weight'));
        own.set('value_head.bias', uploadOwned(ctx, host['value_head.bias'], [1], owner, 'value_head.bias'));
      }
      const params = new Map<string, Tensor>();
      if (opts.trainable === 'all') {
        copy = await model.copy({ owner, f16: false });
        for (const name of copy.names()) if (!own.has(name) && !name.startsWith('value_head.')) params.set(name, copy.param(name));
      }
      if (opts.adapter) for (const name of opts.adapter.names()) params.set(name, opts.adapter.tensor(name));
      for (const [name, t] of own) params.set(name, t);
      const opt = new AdamWOptimizer(ctx, owner, params);
      return new Trainer(model, opts, id, owner, copy, own, opt);
    } catch (e) {
      for (const t of own.values()) t.release();
      copy?.release();
      throw e;
    }
  }

  get step(): number {
    return this.#opt.step;
  }

  get skippedSteps(): number {
    return this.#opt.skipped;
  }

  /** Micro-batches accumulated since the last step or zeroGrad. */
  get pendingMicroBatches(): number {
    return this.#microBatches;
  }

  /** Names of the trainable tensors, canonical order. */
  trainableNames(): string[] {
    return this.#opt.slots.map((s) => s.name);
  }

  /** The job's pool bytes now and at peak (parameters it owns, gradients, moments, activations). */
  memory(): OwnerStats {
    return this.ctx.pool.owner(this.owner);
  }

  #env(b: GpuBatch): LayerEnv {
    return { cfg: this.cfg, weights: this.weights, adapter: this.adapter, ones: b.ones };
  }

  /**
   * Forward and backward of one micro-batch under `spec`; gradients += (= for the step's first).
   * The loss is Σ tokenScale·ℓ over the batch (this micro-batch's share of the step's loss).
   */
  async forwardBackward(batch: PackedBatch, spec: LossSpec, opts: { logprobs?: boolean } = {}): Promise<ForwardBackwardResult> {
    this.#assertLive();
    const needs = lossNeeds(spec, this.hasValueHead);
    // The token weights were packed for one aggregation: a loss of another would train with them silently.
    const agg = (spec as { aggregation?: string }).aggregation;
    if (batch.aggregation !== undefined && agg !== undefined && agg !== batch.aggregation) {
      throw new ConfigError('loss.aggregation', `is ${agg}, but the batch was packed for ${batch.aggregation} (packDatums' aggregation): pack with the loss's aggregation`);
    }
    const arena = new Arena(this.ctx, this.owner);
    try {
      const b = uploadBatch(arena, this.cfg, batch, needs);
      const env = this.#env(b);
      const acts = allocActivations(arena, env, b.B, b.T, { recompute: this.recompute, valueHead: this.hasValueHead });
      const trainEmb = this.trainable === 'all';
      const work = allocBackwardWork(arena, env, b.B, b.T, trainEmb);
      const normScratch = arena.alloc([this.#opt.normScratchSize()], 'f32', 'norm scratch');
      const rec = new Recorder(this.ctx, { label: `${this.id} forward_backward` });
      const acc = this.#microBatches > 0;
      const grads = this.#opt.grads();
      modelForward(rec, env, b, acts);
      const loss: LossReads = recordLoss(rec, arena, b, acts, spec, needs, {
        produce: (r, r0, n) => headLogits(r, env, acts, r0, n),
        consume: (r, r0, n) => headBackward(r, env, grads, acts, work, r0, n, acc),
      });
      modelBackward(rec, env, grads, b, acts, work, loss.dvalues, acc);
      this.#opt.recordGradNorm(rec, normScratch);
      const normRead = rec.read(this.#opt.norm);
      const lpRead = opts.logprobs ? rec.read(loss.logprobs) : null;
      const done = loss.read(rec);
      await rec.submit();
      const r = await done();
      const gradNorm = ((await normRead) as Float32Array)[0];
      this.#microBatches++;
      this.#lastNorm = gradNorm;
      if (!Number.isFinite(r.loss)) this.#stepLossFinite = false;
      return { loss: r.loss, tokens: b.weightedTokens, stats: r.stats, gradNorm, ...(lpRead ? { logprobsBT: (await lpRead) as Float32Array } : {}) };
    } finally {
      arena.releaseAll();
    }
  }

  /**
   * One AdamW step over the accumulated gradients, then the gradients are discarded. Skipped
   * (state untouched, counted) when a loss of the step or the gradient norm is not finite.
   */
  async optimStep(o: OptimStepOptions): Promise<{ gradNorm: number; skipped: boolean }> {
    this.#assertLive();
    if (this.#microBatches === 0) throw new WebtinkerError('no-gradients', `trainer "${this.id}": optimStep without forwardBackward since the last step`);
    const gradNorm = this.#lastNorm;
    const finite = this.#stepLossFinite && Number.isFinite(gradNorm);
    this.#microBatches = 0;
    this.#stepLossFinite = true;
    if (!finite) {
      this.#opt.skipped++;
      return { gradNorm, skipped: true };
    }
    const rec = new Recorder(this.ctx, { label: `${this.id} optim_step` });
    const applied = this.#opt.recordStep(rec, o);
    await rec.submit();
    if (!(await applied())) {
      // The update would have made a weight or a moment non-finite: nothing was written (optimizer.ts).
      this.#opt.skipped++;
      return { gradNorm, skipped: true };
    }
    this.#opt.step++;
    return { gradNorm, skipped: false };
  }

  /** Discard the accumulated gradients (the next forwardBackward writes them afresh). */
  zeroGrad(): void {
    this.#microBatches = 0;
    this.#stepLossFinite = true;
    this.#lastNorm = 0;
  }

  /** Forward only: log p(target) per token (reference / old log-probs), optionally logits and values. */
  async computeLogprobs(batch: PackedBatch, opts: { logits?: boolean } = {}): Promise<LogprobsResult> {
    this.#assertLive();
    const arena = new Arena(this.ctx, this.owner);
    try {
      const b = uploadBatch(arena, this.cfg, batch);
      const env = this.#env(b);
      // Forward only: the per-block save is the same size as a recompute buffer, so share one.
      const acts = allocActivations(arena, env, b.B, b.T, { recompute: true, valueHead: this.hasValueHead });
      const rec = new Recorder(this.ctx, { label: `${this.id} logprobs` });
      modelForward(rec, env, b, acts);
      // The logits of each block of rows, read before the loss overwrites them.
      const blocks: [number, number, Promise<AnyHostArray>][] = [];
      const loss = recordLoss(rec, arena, b, acts, { kind: 'cross_entropy', aggregation: 'token_mean' }, {}, {
        produce: (r, r0, n) => {
          headLogits(r, env, acts, r0, n);
          if (opts.logits) blocks.push([r0, n, r.read(acts.logits)]);
        },
      });
      const lpRead = rec.read(loss.logprobs);
      const vRead = acts.values ? rec.read(acts.values) : null;
      await rec.submit();
      let logits: Float32Array | null = null;
      if (opts.logits) {
        const V = this.cfg.vocabSize;
        logits = new Float32Array(b.N * V);
        for (const [r0, n, p] of blocks) logits.set(((await p) as Float32Array).subarray(0, n * V), r0 * V);
      }
      return {
        logprobsBT: (await lpRead) as Float32Array,
        ...(logits ? { logits } : {}),
        ...(vRead ? { valuesBT: (await vRead) as Float32Array } : {}),
      };
    } finally {
      arena.releaseAll();
    }
  }

  /** The accumulated gradients on the host, by canonical name (tests, diagnostics). */
  async readGradients(): Promise<Record<string, Float32Array>> {
    this.#assertLive();
    const rec = new Recorder(this.ctx, { label: `${this.id} gradients` });
    const reads = this.#opt.slots.map((s) => [s.name, rec.read(s.grad)] as const);
    await rec.submit();
    const out: Record<string, Float32Array> = {};
    for (const [name, p] of reads) out[name] = (await p) as Float32Array;
    return out;
  }

  /** Parameters, moments, step and skipped counts as plain host data (one submission). */
  async exportState(): Promise<TrainerState> {
    this.#assertLive();
    const rec = new Recorder(this.ctx, { label: `${this.id} export` });
    const read = this.#opt.readState(rec);
    await rec.submit();
    return { trainable: this.trainable, ...(await read()) };
  }

  /** Restores an exported state bitwise; pending gradients are discarded. */
  importState(state: TrainerState): void {
    this.#assertLive();
    if (state.trainable !== this.trainable) throw new ConfigError('state.trainable', `state is for '${state.trainable}', this job trains '${this.trainable}'`);
    this.#opt.writeState(state);
    this.zeroGrad();
  }

  /** Frees the job's bytes: gradients, moments, its value head and its copy of the base. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#opt.release();
    for (const t of this.#own) if (!t.released) t.release();
    this.#copy?.release();
  }

  #assertLive(): void {
    if (this.#released) throw new ReleasedError(`trainer "${this.id}"`);
  }
}

function uploadOwned(ctx: GpuContext, data: Float32Array | undefined, shape: number[], owner: string, name: string): Tensor {
  const n = shape.reduce((a, d) => a * d, 1);
  if (!(data instanceof Float32Array) || data.length !== n) throw new ConfigError(`valueHead["${name}"]`, `must be a Float32Array of ${n} values`);
  return tensorFrom(ctx, data, shape, { owner, label: name });
}
