/**
 * The transformer block as the inference passes (prefill, decode) run it: forward only, nothing
 * saved, one set of scratch tensors reused by every layer (dispatches run in order, so layer l+1
 * may overwrite what layer l is done with). Prefill and decode differ only in how attention
 * reaches the keys and values, which they pass in as `attend`.
 *
 * Legend: N rows (B·T in a prefill, B in a decode step), C dModel, Hq/Hkv heads, D head dim,
 * F dFF, R LoRA rank, V vocab.
 *
 *   h   = norm1(x)                                  LayerNorm (gpt2) or RMSNorm (llama)
 *   q,k,v = h·Wᵀ (+ b) (+ s·(h·Aᵀ)·Bᵀ)              one matmul each, LoRA term fused in
 *   a   = attend(q, k, v)                           writes the cache; [N, Hq·D]
 *   x  += a·Woᵀ (+ b) (+ LoRA)                      accumulated straight into the residual
 *   h   = norm2(x)
 *   x  += act(h)·Wdownᵀ (+ b) (+ LoRA)              act: gelu(up(h)) (in the up product's epilogue)
 *                                                   or silu(gate(h))·up(h)
 */
import { LimitError, ShapeError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { layernormForward } from '../ops/layernorm.ts';
import { matmul } from '../ops/matmul.ts';
import { rmsnormForward } from '../ops/rmsnorm.ts';
import { swigluForward } from '../ops/swiglu.ts';
import type { LoraTarget, ModelConfig } from './config.ts';
import { moduleName } from './params.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

/** A tensor sharing `t`'s buffer with another shape of at most as many elements (never release it). */
export function view(t: Tensor, shape: readonly number[], label = t.label): Tensor {
  return t.view(shape, label);
}

/** Scratch of one recording for N rows; every tensor is a `rec.temp` (released at submit). */
export interface BlockScratch {
  readonly N: number;
  /** [N, C] residual stream */
  readonly x: Tensor;
  /** [N, C] normalized input of a sub-block */
  readonly h: Tensor;
  /** [N, Hq·D], [N, Hkv·D], [N, Hkv·D] */
  readonly q: Tensor;
  readonly k: Tensor;
  readonly v: Tensor;
  /** [N, Hq·D] attention output */
  readonly att: Tensor;
  /** [N, F] ×3: up, gate (llama), activation */
  readonly up: Tensor | null;
  readonly gate: Tensor | null;
  readonly act: Tensor;
  /** [N] statistics the norm kernels write (unused here) */
  readonly mean: Tensor;
  readonly rstd: Tensor;
  /** [N, R] LoRA x·Aᵀ, or null without an adapter */
  readonly u: Tensor | null;
}

export function blockScratch(rec: Recorder, cfg: ModelConfig, N: number, adapter: AdapterWeights | null, label: string): BlockScratch {
  const { dModel: C, nHead: Hq, nKvHead: Hkv, headDim: D, dFF: F } = cfg;
  const t = (shape: number[], name: string) => rec.temp(shape, 'f32', `${label}/${name}`);
  return {
    N,
    x: t([N, C], 'x'),
    h: t([N, C], 'h'),
    q: t([N, Hq * D], 'q'),
    k: t([N, Hkv * D], 'k'),
    v: t([N, Hkv * D], 'v'),
    att: t([N, Hq * D], 'att'),
    up: cfg.family === 'llama' ? t([N, F], 'up') : null,
    gate: cfg.family === 'llama' ? t([N, F], 'gate') : null,
    act: t([N, F], 'act'),
    mean: t([N], 'mean'),
    rstd: t([N], 'rstd'),
    u: adapter ? t([N, adapter.lora.rank], 'lora_u') : null,
  };
}

/** y = x·Wᵀ (+ b) (+ s·(x·Aᵀ)·Bᵀ) for module `name`; `accumulate`: y += the same; `activation`: of the result. */
export function linear(rec: Recorder, ws: BlockScratch, weights: ModelWeights, adapter: AdapterWeights | null,
  y: Tensor, x: Tensor, name: string, accumulate = false, activation?: 'gelu'): void {
  const w = weights.param(`${name}.weight`);
  const bias = weights.has(`${name}.bias`) ? weights.param(`${name}.bias`) : undefined;
  const lora = adapter?.module(name);
  if (lora && ws.u) {
    const R = lora.a.shape[0];
    if (lora.a.shape.length !== 2 || R > ws.u.shape[1]) {
      throw new ShapeError('lora', `module ${name}: a (${lora.a}) must be [R, in] with R ≤ the adapter's rank ${ws.u.shape[1]}`);
    }
    const u = view(ws.u, [x.shape[0], R], `${ws.u.label}/${name}`);
    matmul(rec, u, x, lora.a, { transB: true });
    matmul(rec, y, x, w, { transB: true, bias, accumulate, activation, lowRank: { u, v: lora.b, transV: true, scale: lora.scale } });
  } else {
    matmul(rec, y, x, w, { transB: true, bias, accumulate, activation });
  }
}

/** out = norm(inp) with the weights under `prefix` (LayerNorm for gpt2, RMSNorm for llama). */
export function norm(rec: Recorder, ws: BlockScratch, weights: ModelWeights, out: Tensor, inp: Tensor, prefix: string): void {
  const cfg = weights.cfg;
  const rows = inp.shape[0];
  const mean = view(ws.mean, [rows]);
  const rstd = view(ws.rstd, [rows]);
  if (cfg.family === 'gpt2') {
    layernormForward(rec, out, mean, rstd, inp, weights.param(`${prefix}.weight`), weights.param(`${prefix}.bias`), cfg.normEps);
  } else {
    rmsnormForward(rec, out, rstd, inp, weights.param(`${prefix}.weight`), cfg.normEps);
  }
}

/** How a block's attention reaches its keys and values: writes `ws.att` from ws.q/k/v. */
export type Attend = (layer: number) => void;

/** One transformer block over ws.x (in place). */
export function blockForward(rec: Recorder, ws: BlockScratch, weights: ModelWeights, adapter: AdapterWeights | null, layer: number, attend: Attend): void {
  const cfg = weights.cfg;
  const lin = (y: Tensor, x: Tensor, t: LoraTarget, acc = false, act?: 'gelu') => linear(rec, ws, weights, adapter, y, x, moduleName(layer, t), acc, act);
  norm(rec, ws, weights, ws.h, ws.x, `layers.${layer}.attn_norm`);
  lin(ws.q, ws.h, 'q');
  lin(ws.k, ws.h, 'k');
  lin(ws.v, ws.h, 'v');
  attend(layer);
  lin(ws.x, ws.att, 'o', true);
  norm(rec, ws, weights, ws.h, ws.x, `layers.${layer}.mlp_norm`);
  if (cfg.family === 'gpt2') {
    lin(ws.act, ws.h, 'up', false, 'gelu'); // the GELU in the product's epilogue
  } else {
    lin(ws.up as Tensor, ws.h, 'up');
    lin(ws.gate as Tensor, ws.h, 'gate');
    swigluForward(rec, ws.act, ws.gate as Tensor, ws.up as Tensor);
  }
  lin(ws.x, ws.act, 'down', true);
}

/** logits [B, V] = finalNorm(hidden [B, C])·Headᵀ; `normed` [B, C] is scratch. A head over the binding limit is split over V by matmul. */
export function headForward(rec: Recorder, ws: BlockScratch, weights: ModelWeights, logits: Tensor, hidden: Tensor, normed: Tensor): void {
  const cfg = weights.cfg;
  norm(rec, ws, weights, normed, hidden, 'final_norm');
  const head = weights.param(cfg.tieEmbeddings ? 'tok_emb.weight' : 'lm_head.weight');
  matmul(rec, logits, normed, head, { transB: true });
}

/**
 * Most rows of logits [rows, V] (f32) one storage binding holds — B sequences of a generation,
 * a block of rows of a training call. LimitError when not even one row fits.
 */
export function logitsRowLimit(ctx: GpuContext, cfg: ModelConfig): number {
  const max = ctx.limit('maxStorageBufferBindingSize');
  const rows = Math.floor((max - 16) / (4 * cfg.vocabSize)); // 16: vec4 views round up
  if (rows < 1) throw new LimitError('logits', `one row of logits (V = ${cfg.vocabSize}, f32) is over the device's maxStorageBufferBindingSize of ${max}`);
  return rows;
}

/** Context of a model's weights (for allocations outside a recording). */
export function weightsCtx(weights: ModelWeights): GpuContext {
  return weights.param('tok_emb.weight').ctx;
}
