/**
 * The training forward pass (llm.c style): every tensor the backward pass needs is saved in
 * `Activations`, allocated up front from the call's arena (the job's pool owner pays for it); each
 * block is the one block forward of block.ts, whose steps the architecture record picks.
 * backward.ts replays this file in reverse.
 *
 * Legend: B rows, T positions, N = B·T, C width, Hq/Hkv heads, D head dim, Q = Hq·D, K = Hkv·D,
 * F MLP width, V vocab, R LoRA rank, L layers.
 *
 *   x0 = tok_emb[ids] (· √C, embedScale) (+ pos_emb[positions], learned)        resid[0]  [N, C]
 *   per block l: resid[l+1] = block(resid[l]) (block.ts), attention causal within a packed
 *     segment, the layer's window, lse [B, Hq, T] saved
 *   lnf = final_norm(resid[L]);
 *   values = lnf·value_head.weightᵀ + value_head.bias [N, 1] when the job has a value head.
 *   logits = lnf·headᵀ (head = tok_emb when tied), a block of rows at a time: `headLogits` fills
 *   acts.logits [Nb, V] with rows r0 .. r0+n of the logits when the loss asks for them
 *   (train_loss.ts), so logits [N, V] need not fit one storage binding (Nb = logitsBlockRows).
 *   The head weight itself may be larger than a binding: matmul splits it over V.
 *
 * Per-block recomputation (`recompute`): only the residual stream resid[0..L] is kept for every
 * block; one block's worth of activations is shared, and backward.ts reruns each block's forward
 * into it just before that block's backward — about one extra forward pass of compute for
 * L−1 blocks' activations less.
 */
import type { GpuContext } from '../gpu/device.ts';
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { attentionForward } from '../ops/attention.ts';
import { matmul, matrixBlock } from '../ops/matmul.ts';
import { embedInputs } from './embed.ts';
import { archOf, attentionScale } from './arch.ts';
import type { GpuBatch } from './batch.ts';
import { type BlockActs, blockForward, type BlockPass, heads, normForward, type NormSaved } from './block.ts';
import type { LoraTarget, ModelConfig } from './config.ts';
import { type Arena, type LayerEnv, view } from './layers.ts';
import { logitsRowLimit } from './infer_block.ts';
import { blockLinears, moduleName } from './params.ts';

export type { BlockActs } from './block.ts';

export interface Activations {
  readonly recompute: boolean;
  /** resid[l] is block l's input; resid[L] the last block's output. [N, C] each. */
  readonly resid: readonly Tensor[];
  /** One per block, or a single shared one with recompute. */
  readonly blocks: readonly BlockActs[];
  readonly lnf: Tensor; // [N, C]
  readonly nf: NormSaved;
  /** [Nb, V]: one block of rows of the logits at a time (headLogits); the fused loss overwrites it with dlogits. */
  readonly logits: Tensor;
  /** [N, 1] when the job has a value head. */
  readonly values: Tensor | null;
  /** [N, C] scratch for the o and down projections before their residual add. */
  readonly proj: Tensor;
  /** [N, C] scratch for a sandwich norm's output (sandwich families). */
  readonly post: Tensor | null;
}

/** Block l's saved activations (the shared one under recompute). */
export function blockActs(acts: Activations, l: number): BlockActs {
  return acts.blocks[acts.recompute ? 0 : l];
}

/** Stats of a norm over `rows` rows: mean (LayerNorm only) and rstd. */
export function allocNorm(arena: Arena, cfg: ModelConfig, rows: number, label: string): NormSaved {
  const ln = archOf(cfg).norm === 'layernorm';
  return { mean: ln ? arena.alloc([rows], 'f32', `${label}.mean`) : null, rstd: arena.alloc([rows], 'f32', `${label}.rstd`) };
}

function allocBlock(arena: Arena, env: LayerEnv, B: number, T: number, l: number): BlockActs {
  const { cfg, adapter } = env;
  const arch = archOf(cfg);
  const N = B * T;
  const C = cfg.dModel, Q = cfg.nHead * cfg.headDim, K = cfg.nKvHead * cfg.headDim, F = cfg.dFF;
  const gated = arch.mlp !== 'gelu';
  const a = (shape: number[], label: string) => arena.alloc(shape, 'f32', `block${l}.${label}`);
  const norm = (rows: number, label: string) => allocNorm(arena, cfg, rows, `block${l}.${label}`);
  const u = new Map<LoraTarget, Tensor>();
  for (const t of blockLinears(cfg)) {
    const m = adapter?.module(moduleName(l, t));
    if (m) u.set(t, a([N, m.a.shape[0]], `${t}.u`));
  }
  const qk = arch.qkNorm, sw = arch.sandwichNorms;
  return {
    ln1: a([N, C], 'ln1'), n1: norm(N, 'ln1'),
    qRaw: qk ? a([N, Q], 'q_raw') : null, kRaw: qk ? a([N, K], 'k_raw') : null,
    nq: qk ? norm(N * cfg.nHead, 'q_norm') : null, nk: qk ? norm(N * cfg.nKvHead, 'k_norm') : null,
    q: a([N, Q], 'q'), k: a([N, K], 'k'), v: a([N, K], 'v'), att: a([N, Q], 'att'), lse: a([B, cfg.nHead, T], 'lse'),
    attnOut: sw ? a([N, C], 'attn_out') : null, npa: sw ? norm(N, 'attn_post_norm') : null,
    mid: a([N, C], 'mid'), ln2: a([N, C], 'ln2'), n2: norm(N, 'ln2'),
    h: a([N, F], 'h'), up: gated ? a([N, F], 'up') : null, act: a([N, F], 'act'),
    mlpOut: sw ? a([N, C], 'mlp_out') : null, npm: sw ? norm(N, 'mlp_post_norm') : null, u,
  };
}

/** Allocates the activations of a [B, T] forward pass (all blocks, or one shared under recompute). */
export function allocActivations(arena: Arena, env: LayerEnv, B: number, T: number, opts: { recompute?: boolean; valueHead?: boolean } = {}): Activations {
  const { cfg } = env;
  const N = B * T;
  const recompute = Boolean(opts.recompute);
  const Nb = logitsBlockRows(arena.ctx, cfg, N);
  const resid = Array.from({ length: cfg.nLayer + 1 }, (_, l) => arena.alloc([N, cfg.dModel], 'f32', `resid${l}`));
  const blocks = Array.from({ length: recompute ? 1 : cfg.nLayer }, (_, l) => allocBlock(arena, env, B, T, l));
  return {
    recompute, resid, blocks,
    lnf: arena.alloc([N, cfg.dModel], 'f32', 'lnf'), nf: allocNorm(arena, cfg, N, 'lnf'),
    logits: arena.alloc([Nb, cfg.vocabSize], 'f32', 'logits'),
    values: opts.valueHead ? arena.alloc([N, 1], 'f32', 'values') : null,
    proj: arena.alloc([N, cfg.dModel], 'f32', 'proj'),
    post: archOf(cfg).sandwichNorms ? arena.alloc([N, cfg.dModel], 'f32', 'post') : null,
  };
}

/** The training pass over batch b: attention within each packed segment, saving the lse. */
export function trainingPass(env: LayerEnv, b: GpuBatch, acts: Activations): BlockPass {
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = env.cfg;
  const scale = attentionScale(env.cfg);
  return {
    B: b.B, T: b.T, positions: view(b.positions, [b.B, b.T]), inPlace: false, proj: acts.proj, post: acts.post,
    attend: (rec, _l, settings, s) => {
      const h = (t: Tensor, H: number) => heads(t, b.B, b.T, H, D);
      attentionForward(rec, h(s.att, Hq), s.lse!, h(s.q, Hq), h(s.k, Hkv), h(s.v, Hkv), { segments: b.segments, window: settings.window, scale });
    },
  };
}

/** The output head's weight: tok_emb when tied, else lm_head. */
export function headName(env: LayerEnv): string {
  return env.cfg.tieEmbeddings ? 'tok_emb.weight' : 'lm_head.weight';
}

/** Rows of each block of the logits: at most N, as many as one storage binding holds. */
export function logitsBlockRows(ctx: GpuContext, cfg: ModelConfig, N: number): number {
  return Math.max(1, Math.min(N, logitsRowLimit(ctx, cfg)));
}

/** The whole forward pass up to the head: embeddings, every block (saving), final norm, values. */
export function modelForward(rec: Recorder, env: LayerEnv, b: GpuBatch, acts: Activations): void {
  const { cfg, weights } = env;
  embedInputs(rec, weights, acts.resid[0], b.ids, b.positions);
  const pass = trainingPass(env, b, acts);
  for (let l = 0; l < cfg.nLayer; l++) blockForward(rec, env, pass, blockActs(acts, l), l, acts.resid[l], acts.resid[l + 1]);
  normForward(rec, env, acts.lnf, acts.nf, acts.resid[cfg.nLayer], 'final_norm');
  if (acts.values) {
    matmul(rec, acts.values, acts.lnf, weights.param('value_head.weight'), { transB: true, bias: weights.param('value_head.bias') });
  }
}

/** Logits rows [0, n) of acts.logits (=) = lnf rows [r0, r0 + n)·headᵀ: one block of the logits. */
export function headLogits(rec: Recorder, env: LayerEnv, acts: Activations, r0: number, n: number): void {
  matmul(rec, matrixBlock(acts.logits, [0, n]), matrixBlock(acts.lnf, [r0, n]), env.weights.param(headName(env)), { transB: true });
}
