/**
 * What the inference passes (prefill, decode) need around the one block forward (block.ts):
 * scratch tensors shared by every layer (dispatches run in order, so layer l+1 may overwrite what
 * layer l is done with), the in-place pass, and the output head. Prefill and decode differ only
 * in how attention reaches the keys and values, which they pass in as `attend`.
 *
 * Legend: N rows (B·T in a prefill, B in a decode step), C dModel, Hq/Hkv heads, D head dim,
 * F dFF, R LoRA rank, V vocab.
 */
import { LimitError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { matmul } from '../ops/matmul.ts';
import { archOf } from './arch.ts';
import { type BlockActs, type BlockPass, normForward, type NormSaved } from './block.ts';
import type { LoraTarget, ModelConfig } from './config.ts';
import { blockLinears } from './params.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

export { view } from './block.ts';

/** Scratch of one recording for N rows; every tensor is a `rec.temp` (released at submit). */
export interface BlockScratch {
  readonly N: number;
  /** [N, C] residual stream, updated in place by every block */
  readonly x: Tensor;
  /** [N, C] normalized input of a sub-block (ln1 and ln2 of every block) */
  readonly h: Tensor;
  /** The block's tensors, sharing the scratch above. */
  readonly acts: BlockActs;
  /** [N, C] projection before its norm, and the norm's output (sandwich families) */
  readonly proj: Tensor;
  readonly post: Tensor | null;
}

export function blockScratch(rec: Recorder, cfg: ModelConfig, N: number, adapter: AdapterWeights | null, label: string, lse: Tensor | null = null): BlockScratch {
  const { dModel: C, nHead: Hq, nKvHead: Hkv, headDim: D, dFF: F } = cfg;
  const arch = archOf(cfg);
  const t = (shape: number[], name: string) => rec.temp(shape, 'f32', `${label}/${name}`);
  const rows = arch.qkNorm ? N * Math.max(Hq, Hkv) : N; // the widest norm's rows
  const stats: NormSaved = { mean: arch.norm === 'layernorm' ? t([rows], 'mean') : null, rstd: t([rows], 'rstd') };
  const gated = arch.mlp !== 'gelu';
  const h = t([N, C], 'h');
  const proj = t([N, C], 'proj');
  // One LoRA x·Aᵀ scratch of the adapter's rank serves every module (linearForward views its
  // first R columns for a module of rank R).
  const uAll = adapter ? t([N, adapter.lora.rank], 'lora_u') : null;
  const u = new Map<LoraTarget, Tensor>();
  if (uAll && adapter) {
    for (const tg of blockLinears(cfg)) if (adapter.lora.targets.includes(tg)) u.set(tg, uAll);
  }
  const act = t([N, F], 'act');
  const acts: BlockActs = {
    ln1: h, n1: stats, ln2: h, n2: stats,
    qRaw: arch.qkNorm ? t([N, Hq * D], 'q_raw') : null, kRaw: arch.qkNorm ? t([N, Hkv * D], 'k_raw') : null,
    nq: arch.qkNorm ? stats : null, nk: arch.qkNorm ? stats : null,
    q: t([N, Hq * D], 'q'), k: t([N, Hkv * D], 'k'), v: t([N, Hkv * D], 'v'), att: t([N, Hq * D], 'att'), lse,
    attnOut: null, npa: arch.sandwichNorms ? stats : null,
    mid: h, // unused in place: the stream itself is mid
    // GELU MLPs write act straight from the up product's epilogue in place (block.ts), so they
    // never touch h: it shares act's buffer rather than taking another [N, F] scratch.
    h: gated ? t([N, F], 'gate') : act, up: gated ? t([N, F], 'up') : null, act,
    mlpOut: null, npm: arch.sandwichNorms ? stats : null,
    u,
  };
  return { N, x: t([N, C], 'x'), h, acts, proj, post: arch.sandwichNorms ? t([N, C], 'post') : null };
}

/**
 * The in-place pass of an inference recording over B sequences of T rows at `positions` [B, T],
 * with `attend` reaching the keys (prefill: the prompt itself; decode: the cache).
 */
export function inferencePass(ws: BlockScratch, B: number, T: number, positions: Tensor, attend: BlockPass['attend']): BlockPass {
  return { B, T, positions, inPlace: true, proj: ws.proj, post: ws.post, attend };
}

/** logits [B, V] = finalNorm(hidden [B, C])·Headᵀ; `normed` [B, C] is scratch. A head over the binding limit is split over V by matmul. */
export function headForward(rec: Recorder, ws: BlockScratch, weights: ModelWeights, logits: Tensor, hidden: Tensor, normed: Tensor): void {
  const cfg = weights.cfg;
  normForward(rec, { cfg, weights }, normed, ws.acts.n1, hidden, 'final_norm');
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
