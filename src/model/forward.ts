/**
 * The training forward pass, written out layer by layer for both families (llm.c style): every
 * tensor the backward pass needs is saved in `Activations`, allocated up front from the call's
 * arena (the job's pool owner pays for it). backward.ts replays this file in reverse.
 *
 * Legend: B rows, T positions, N = B·T, C width, Hq/Hkv heads, D head dim, Q = Hq·D, K = Hkv·D,
 * F MLP width, V vocab, R LoRA rank, L layers.
 *
 *   x0 = tok_emb[ids] (+ pos_emb[positions], gpt2)                               resid[0]  [N, C]
 *   per block l (input xin = resid[l]):
 *     ln1 = norm1(xin)                                                             [N, C]
 *     q, k, v = linear(ln1) (+ LoRA); llama: rope(q), rope(k) in place at `positions` [N, Q], [N, K]
 *     att = attention(q, k, v) causal within a segment                             [N, Q], lse [B, Hq, T]
 *     mid = xin + o(att)                                                           [N, C]
 *     ln2 = norm2(mid)
 *     gpt2:  h = up(ln2), act = gelu(h)                                            [N, F]
 *     llama: h = gate(ln2), up = up(ln2), act = silu(h)·up
 *     resid[l+1] = mid + down(act)
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
import { embeddingForward } from '../ops/embedding.ts';
import { geluForward } from '../ops/gelu.ts';
import { matmul, matrixBlock } from '../ops/matmul.ts';
import { residualAdd } from '../ops/residual.ts';
import { swigluForward } from '../ops/swiglu.ts';
import type { LoraTarget, ModelConfig } from './config.ts';
import type { GpuBatch } from './batch.ts';
import { allocNorm, type Arena, type LayerEnv, linearForward, normForward, type NormSaved, view } from './layers.ts';
import { logitsRowLimit } from './infer_block.ts';
import { blockLinears, moduleName } from './params.ts';
import { ropeQK } from './rope.ts';

/** What one block saves for its backward. */
export interface BlockActs {
  readonly ln1: Tensor; // [N, C]
  readonly n1: NormSaved;
  readonly q: Tensor; // [N, Q] as attention read it (llama: rotated in place)
  readonly k: Tensor; // [N, K]
  readonly v: Tensor; // [N, K]
  readonly att: Tensor; // [N, Q]
  readonly lse: Tensor; // [B, Hq, T]
  readonly mid: Tensor; // [N, C]
  readonly ln2: Tensor; // [N, C]
  readonly n2: NormSaved;
  readonly h: Tensor; // [N, F] gpt2: up's output (pre-GELU); llama: gate's output
  readonly up: Tensor | null; // [N, F] llama: up's output
  readonly act: Tensor; // [N, F]
  /** LoRA's x·Aᵀ [N, R] per adapted target of this block. */
  readonly u: ReadonlyMap<LoraTarget, Tensor>;
}

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
}

/** Block l's saved activations (the shared one under recompute). */
export function blockActs(acts: Activations, l: number): BlockActs {
  return acts.blocks[acts.recompute ? 0 : l];
}

function allocBlock(arena: Arena, env: LayerEnv, B: number, T: number, l: number): BlockActs {
  const { cfg, adapter } = env;
  const N = B * T;
  const C = cfg.dModel, Q = cfg.nHead * cfg.headDim, K = cfg.nKvHead * cfg.headDim, F = cfg.dFF;
  const llama = cfg.family === 'llama';
  const a = (shape: number[], label: string) => arena.alloc(shape, 'f32', `block${l}.${label}`);
  const u = new Map<LoraTarget, Tensor>();
  for (const t of blockLinears(cfg)) {
    const m = adapter?.module(moduleName(l, t));
    if (m) u.set(t, a([N, m.a.shape[0]], `${t}.u`));
  }
  return {
    ln1: a([N, C], 'ln1'), n1: allocNorm(arena, cfg, N, `block${l}.ln1`),
    q: a([N, Q], 'q'), k: a([N, K], 'k'), v: a([N, K], 'v'), att: a([N, Q], 'att'), lse: a([B, cfg.nHead, T], 'lse'),
    mid: a([N, C], 'mid'), ln2: a([N, C], 'ln2'), n2: allocNorm(arena, cfg, N, `block${l}.ln2`),
    h: a([N, F], 'h'), up: llama ? a([N, F], 'up') : null, act: a([N, F], 'act'), u,
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
  };
}

/** The 4-D attention layout of an [N, H·D] tensor: [B, T, H, D]. */
export function heads(t: Tensor, b: GpuBatch, H: number, D: number): Tensor {
  return view(t, [b.B, b.T, H, D]);
}

/** Block l: xin → xout, saving into `s`. Writes (=) every tensor of `s`, xout and proj. */
export function blockForward(rec: Recorder, env: LayerEnv, b: GpuBatch, s: BlockActs, proj: Tensor, l: number, xin: Tensor, xout: Tensor): void {
  const { cfg } = env;
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = cfg;
  const m = (t: LoraTarget) => moduleName(l, t);
  // attention half
  normForward(rec, env, s.ln1, s.n1, xin, `layers.${l}.attn_norm`);
  linearForward(rec, env, s.q, s.ln1, m('q'), s.u.get('q'));
  linearForward(rec, env, s.k, s.ln1, m('k'), s.u.get('k'));
  linearForward(rec, env, s.v, s.ln1, m('v'), s.u.get('v'));
  if (cfg.family === 'llama') ropeQK(rec, cfg, heads(s.q, b, Hq, D), heads(s.k, b, Hkv, D), view(b.positions, [b.B, b.T]));
  attentionForward(rec, heads(s.att, b, Hq, D), s.lse, heads(s.q, b, Hq, D), heads(s.k, b, Hkv, D), heads(s.v, b, Hkv, D), { segments: b.segments });
  linearForward(rec, env, proj, s.att, m('o'), s.u.get('o'));
  residualAdd(rec, s.mid, xin, proj);
  // MLP half
  normForward(rec, env, s.ln2, s.n2, s.mid, `layers.${l}.mlp_norm`);
  if (cfg.family === 'gpt2') {
    linearForward(rec, env, s.h, s.ln2, m('up'), s.u.get('up'));
    geluForward(rec, s.act, s.h);
  } else {
    linearForward(rec, env, s.h, s.ln2, m('gate'), s.u.get('gate'));
    linearForward(rec, env, s.up!, s.ln2, m('up'), s.u.get('up'));
    swigluForward(rec, s.act, s.h, s.up!);
  }
  linearForward(rec, env, proj, s.act, m('down'), s.u.get('down'));
  residualAdd(rec, xout, s.mid, proj);
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
  const tok = weights.param('tok_emb.weight');
  const pos = cfg.family === 'gpt2' ? { wpe: weights.param('pos_emb.weight'), pos: b.positions } : undefined;
  embeddingForward(rec, acts.resid[0], b.ids, tok, pos);
  for (let l = 0; l < cfg.nLayer; l++) blockForward(rec, env, b, blockActs(acts, l), acts.proj, l, acts.resid[l], acts.resid[l + 1]);
  normForward(rec, env, acts.lnf, acts.nf, acts.resid[cfg.nLayer], 'final_norm');
  if (acts.values) {
    matmul(rec, acts.values, acts.lnf, weights.param('value_head.weight'), { transB: true, bias: weights.param('value_head.bias') });
  }
}

/** Logits rows [0, n) of acts.logits (=) = lnf rows [r0, r0 + n)·headᵀ: one block of the logits. */
export function headLogits(rec: Recorder, env: LayerEnv, acts: Activations, r0: number, n: number): void {
  matmul(rec, matrixBlock(acts.logits, [0, n]), matrixBlock(acts.lnf, [r0, n]), env.weights.param(headName(env)), { transB: true });
}
