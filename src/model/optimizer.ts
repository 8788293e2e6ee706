/**
 * AdamW over a job's trainable tensors, with global-norm clipping on the GPU.
 *
 * Every trainable tensor has a gradient buffer and the moments m, v (f32, zero at start), all
 * owned by the job. A step records, in one recording:
 *   clipScale(scale, norm, maxGradNorm)     scale = min(1, maxGradNorm / (‖g‖ + 1e-6)), on the GPU
 *   adamwGuardReset(guard)                  guard = 0
 *   adamwCheck(param, m, v, grad, scale)    per tensor: guard |= 1 if the update would make any
 *                                           weight or moment NaN or ±Inf
 *   adamw(param, m, v, grad, scale, guard)  per tensor, in canonical order, skipped when guard ≠ 0
 * where `norm` [1] = ‖all gradients‖₂ was computed by globalL2Norm at the end of the last
 * forward/backward recording (its value was read back with the loss, so the host can refuse a
 * non-finite step without a readback between the norm and the update). A finite gradient can still
 * make a non-finite update (a huge learning rate: p·(1 − lr·wd) overflows; v overflows from g²):
 * the guard refuses such a step for every tensor at once, on the GPU, and its 4-byte readback tells
 * the caller the step was skipped. Weight decay applies to every trainable tensor (as
 * torch.optim.AdamW given all parameters).
 *
 * State for exact resume: parameters, m, v, the step counter and the skipped-step count, as plain
 * host arrays; importing writes the same bits back.
 */
import { ConfigError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import { type Tensor, zerosTensor } from '../gpu/tensor.ts';
import { adamw, adamwCheck, adamwGuardReset, clipScale } from '../ops/adamw.ts';
import { globalL2Norm, reduceScratchSize } from '../ops/reduce.ts';

export interface OptimStepOptions {
  readonly lr: number;
  readonly beta1?: number; // default 0.9
  readonly beta2?: number; // default 0.999
  readonly eps?: number; // default 1e-8
  readonly weightDecay?: number; // default 0.01 (decoupled)
  /** Clip the global gradient norm to this; absent or Infinity: no clipping. */
  readonly maxGradNorm?: number;
}

/** One trainable tensor with its gradient and moments. */
export interface TrainableSlot {
  readonly name: string;
  readonly param: Tensor;
  readonly grad: Tensor;
  readonly m: Tensor;
  readonly v: Tensor;
}

/** Host copy of the optimizer's state (plain data: structured-clone and JSON-able arrays). */
export interface OptimizerState {
  /** Completed (applied) steps: the next step is step + 1. */
  readonly step: number;
  readonly skipped: number;
  readonly params: Record<string, Float32Array>;
  readonly m: Record<string, Float32Array>;
  readonly v: Record<string, Float32Array>;
}

export class AdamWOptimizer {
  readonly ctx: GpuContext;
  readonly owner: string;
  readonly slots: readonly TrainableSlot[];
  /** ‖all gradients‖₂ [1], written by recordGradNorm. */
  readonly norm: Tensor;
  readonly #scale: Tensor;
  /** [1] u32: 1 when the recorded step would make a value non-finite (the step is then not applied). */
  readonly #guard: Tensor;
  step = 0;
  skipped = 0;

  /** Allocates zero gradients and moments for `params` (job-owned). All or nothing. */
  constructor(ctx: GpuContext, owner: string, params: ReadonlyMap<string, Tensor>) {
    this.ctx = ctx;
    this.owner = owner;
    const made: Tensor[] = [];
    const zeros = (shape: readonly number[], label: string) => {
      const t = zerosTensor(ctx, shape, 'f32', { owner, label });
      made.push(t);
      return t;
    };
    try {
      const slots: TrainableSlot[] = [];
      for (const [name, param] of params) {
        if (param.dtype !== 'f32') throw new ShapeError('optimizer', `trainable ${param} must be f32 (master weights), got ${param.dtype}`);
        slots.push({ name, param, grad: zeros(param.shape, `${name}.grad`), m: zeros(param.shape, `${name}.m`), v: zeros(param.shape, `${name}.v`) });
      }
      this.slots = Object.freeze(slots);
      this.norm = zeros([1], 'grad norm');
      this.#scale = zeros([1], 'clip scale');
      this.#guard = zerosTensor(ctx, [1], 'u32', { owner, label: 'non-finite guard' });
      made.push(this.#guard);
    } catch (e) {
      for (const t of made) t.release();
      throw e;
    }
  }

  /** Gradient tensors by name (what the backward pass writes). */
  grads(): Map<string, Tensor> {
    return new Map(this.slots.map((s) => [s.name, s.grad]));
  }

  /** Scratch elements recordGradNorm needs. */
  normScratchSize(): number {
    return reduceScratchSize(...this.slots.map((s) => s.grad.size));
  }

  /** norm = ‖every gradient‖₂ (=). */
  recordGradNorm(rec: Recorder, scratch: Tensor): void {
    globalL2Norm(rec, this.norm, this.slots.map((s) => s.grad), scratch);
  }

  /**
   * Records one AdamW update of every tensor (step this.step + 1), clipped by `norm` when asked,
   * applied to all tensors or — when it would make any weight or moment non-finite — to none.
   * Returns the guard's read: after the submission, whether the step was applied. The caller
   * counts the step (`step++`, or `skipped++`).
   */
  recordStep(rec: Recorder, o: OptimStepOptions): () => Promise<boolean> {
    const clip = o.maxGradNorm !== undefined && o.maxGradNorm !== Number.POSITIVE_INFINITY;
    if (clip && !(Number.isFinite(o.maxGradNorm) && o.maxGradNorm! > 0)) {
      throw new ConfigError('maxGradNorm', `must be a finite number > 0 (or absent), got ${o.maxGradNorm}`);
    }
    const opts = { lr: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: o.weightDecay, step: this.step + 1 };
    for (const k of ['beta1', 'beta2', 'eps', 'weightDecay'] as const) if (opts[k] === undefined) delete opts[k];
    if (clip) clipScale(rec, this.#scale, this.norm, o.maxGradNorm!);
    const scale = clip ? this.#scale : null;
    adamwGuardReset(rec, this.#guard);
    for (const s of this.slots) adamwCheck(rec, s.param, s.m, s.v, s.grad, opts, scale, this.#guard);
    for (const s of this.slots) adamw(rec, s.param, s.m, s.v, s.grad, opts, scale, this.#guard);
    const read = rec.read(this.#guard);
    return async () => ((await read) as Uint32Array)[0] === 0;
  }

  /** Reads parameters, m and v in one recording (the caller submits). */
  readState(rec: Recorder): () => Promise<OptimizerState> {
    const reads = this.slots.map((s) => [s.name, rec.read(s.param), rec.read(s.m), rec.read(s.v)] as const);
    const step = this.step, skipped = this.skipped;
    return async () => {
      const params: Record<string, Float32Array> = {}, m: Record<string, Float32Array> = {}, v: Record<string, Float32Array> = {};
      for (const [name, p, pm, pv] of reads) {
        params[name] = (await p) as Float32Array;
        m[name] = (await pm) as Float32Array;
        v[name] = (await pv) as Float32Array;
      }
      return { step, skipped, params, m, v };
    };
  }

  /** Writes a state back (bitwise). Checks every tensor first, then writes. */
  writeState(state: OptimizerState): void {
    if (!Number.isInteger(state.step) || state.step < 0) throw new ConfigError('state.step', `must be an integer ≥ 0, got ${state.step}`);
    for (const s of this.slots) {
      for (const part of ['params', 'm', 'v'] as const) {
        const a = state[part]?.[s.name];
        if (!(a instanceof Float32Array) || a.length !== s.param.size) {
          throw new ShapeError('importState', `${part}["${s.name}"] must be a Float32Array of ${s.param.size} values`);
        }
      }
    }
    const q = this.ctx.device.queue;
    for (const s of this.slots) {
      for (const [t, a] of [[s.param, state.params[s.name]], [s.m, state.m[s.name]], [s.v, state.v[s.name]]] as const) {
        q.writeBuffer(t.buffer, 0, a.buffer, a.byteOffset, a.byteLength);
        this.ctx.keptTexels.written(t.buffer);
      }
    }
    this.step = state.step;
    this.skipped = state.skipped ?? 0;
  }

  /** Frees the gradients and moments (the parameters belong to whoever passed them). */
  release(): void {
    for (const s of this.slots) for (const t of [s.grad, s.m, s.v]) if (!t.released) t.release();
    for (const t of [this.norm, this.#scale, this.#guard]) if (!t.released) t.release();
  }
}
