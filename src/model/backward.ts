/**
 * The training backward pass: forward.ts replayed in reverse, layer by layer (llm.c style), from
 * dlogits (which the fused loss wrote over the logits) and, with a value head, dvalues.
 *
 * Legend as in forward.ts. `dresid` [N, C] carries dL/d(residual stream) down the blocks:
 *
 *   dln = dlogits·head; d(head) += dlogitsᵀ·lnf              (head trainable; tied: tok_emb)
 *     — a block of rows at a time, `headBackward`, called by the loss (train_loss.ts) right after
 *     it wrote the block's dlogits over its logits; modelBackward starts from the dln it left
 *   value head: dln += dvalues·w_v; dw_v += dvaluesᵀ·lnf; db_v += Σ dvalues
 *   dresid = final_norm_backward(dln)
 *   per block l = L−1 .. 0 (recompute: rerun block l's forward first):
 *     dact = dresid·W_down (+ LoRA)           d(down) from dresid and act
 *     gpt2:  dh = gelu'(h)·dact;             dln = dh·W_up
 *     llama: dgate, dup = swiglu'(dact);     dln = dgate·W_gate + dup·W_up
 *     dresid += mlp_norm_backward(dln)       (now dL/dmid)
 *     datt = dresid·W_o
 *     dq, dk, dv = attention_backward(datt); llama: un-rotate dq, dk in place (RoPE backward)
 *     dln = dq·W_q + dk·W_k + dv·W_v
 *     dresid += attn_norm_backward(dln)      (now dL/dxin)
 *   d(tok_emb) += scatter(dresid, ids); gpt2: d(pos_emb) += scatter(dresid, positions)
 *
 * Parameter gradients go only to names present in `grads` (see layers.ts): with a frozen base the
 * weight-gradient products are never recorded. `acc` false writes (=) every gradient (the first
 * micro-batch of a step), true adds (+=). A tied embedding gets both of its contributions.
 */
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { attentionBackward } from '../ops/attention.ts';
import { embeddingBackward, embeddingScratchSize } from '../ops/embedding.ts';
import { geluBackward } from '../ops/gelu.ts';
import { matmul, matrixBlock } from '../ops/matmul.ts';
import { residualAddInPlace } from '../ops/residual.ts';
import { swigluBackward } from '../ops/swiglu.ts';
import type { LoraTarget } from './config.ts';
import type { GpuBatch } from './batch.ts';
import { type Activations, blockActs, blockForward, headName, heads } from './forward.ts';
import { type Arena, type Grads, type LayerEnv, linearBackward, normBackward, normScratchSize, type NormWork, view } from './layers.ts';
import { moduleName } from './params.ts';
import { ropeQK } from './rope.ts';

/** Scratch of the backward pass, shared by every block (dispatches run in recording order). */
export interface BackwardWork {
  readonly dresid: Tensor; // [N, C]
  readonly dtmp: Tensor; // [N, C] a norm's dinp before it joins dresid
  readonly dln: Tensor; // [N, C]
  readonly datt: Tensor; // [N, Q]
  readonly dq: Tensor; // [N, Q]
  readonly dk: Tensor; // [N, K]
  readonly dv: Tensor; // [N, K]
  readonly dact: Tensor; // [N, F]
  readonly dh: Tensor; // [N, F]
  readonly dup: Tensor | null; // [N, F] llama
  readonly attWork: Tensor; // [B, Hq, T, 2]
  readonly norm: NormWork;
  readonly embScratch: Tensor | null; // u32, when an embedding is trainable
}

export function allocBackwardWork(arena: Arena, env: LayerEnv, B: number, T: number, trainEmbeddings: boolean): BackwardWork {
  const { cfg } = env;
  const N = B * T;
  const C = cfg.dModel, Q = cfg.nHead * cfg.headDim, K = cfg.nKvHead * cfg.headDim, F = cfg.dFF;
  const llama = cfg.family === 'llama';
  const a = (shape: number[], label: string) => arena.alloc(shape, 'f32', label);
  const embRows = Math.max(cfg.vocabSize, cfg.family === 'gpt2' ? cfg.maxSeqLen : 0);
  return {
    dresid: a([N, C], 'dresid'), dtmp: a([N, C], 'dtmp'), dln: a([N, C], 'dln'),
    datt: a([N, Q], 'datt'), dq: a([N, Q], 'dq'), dk: a([N, K], 'dk'), dv: a([N, K], 'dv'),
    dact: a([N, F], 'dact'), dh: a([N, F], 'dh'), dup: llama ? a([N, F], 'dup') : null,
    attWork: a([B, cfg.nHead, T, 2], 'attention work'),
    norm: { scratch: a([normScratchSize(cfg, N)], 'norm scratch'), sinkW: a([C], 'frozen norm dweight'), sinkB: a([C], 'frozen norm dbias') },
    embScratch: trainEmbeddings ? arena.alloc([embeddingScratchSize(N, embRows)], 'u32', 'embedding scratch') : null,
  };
}

/** Block l's backward: on entry work.dresid = dL/d(resid[l+1]); on exit dL/d(resid[l]) (block 0: only when something below is trainable). */
export function blockBackward(rec: Recorder, env: LayerEnv, grads: Grads, b: GpuBatch, acts: Activations, w: BackwardWork, l: number, acc: boolean): void {
  const { cfg } = env;
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = cfg;
  const s = blockActs(acts, l);
  const xin = acts.resid[l];
  const m = (t: LoraTarget) => moduleName(l, t);
  const lin = (dx: Tensor | null, dy: Tensor, x: Tensor, t: LoraTarget, accumulateDx: boolean) =>
    linearBackward(rec, env, grads, dx, dy, x, m(t), s.u.get(t), accumulateDx, acc);
  // MLP half: resid[l+1] = mid + down(act)
  lin(w.dact, w.dresid, s.act, 'down', false);
  if (cfg.family === 'gpt2') {
    geluBackward(rec, w.dh, s.h, w.dact);
    lin(w.dln, w.dh, s.ln2, 'up', false);
  } else {
    swigluBackward(rec, w.dh, w.dup!, w.dact, s.h, s.up!);
    lin(w.dln, w.dh, s.ln2, 'gate', false);
    lin(w.dln, w.dup!, s.ln2, 'up', true);
  }
  normBackward(rec, env, grads, w.norm, w.dtmp, w.dln, s.mid, s.n2, `layers.${l}.mlp_norm`, acc);
  residualAddInPlace(rec, w.dresid, w.dtmp);
  // attention half: mid = xin + o(att)
  lin(w.datt, w.dresid, s.att, 'o', false);
  attentionBackward(rec, heads(w.dq, b, Hq, D), heads(w.dk, b, Hkv, D), heads(w.dv, b, Hkv, D), w.attWork,
    heads(w.datt, b, Hq, D), heads(s.q, b, Hq, D), heads(s.k, b, Hkv, D), heads(s.v, b, Hkv, D), heads(s.att, b, Hq, D), s.lse,
    { segments: b.segments });
  if (cfg.family === 'llama') ropeQK(rec, cfg, heads(w.dq, b, Hq, D), heads(w.dk, b, Hkv, D), view(b.positions, [b.B, b.T]), -1);
  // Below block 0 lie only the embeddings: with those and attn_norm frozen (LoRA), nothing needs
  // dL/dxin, so the q/k/v input gradients and the norm's backward are not recorded at all.
  const needDx = l > 0 || grads.has('tok_emb.weight') || grads.has('pos_emb.weight') || grads.has(`layers.${l}.attn_norm.weight`);
  lin(needDx ? w.dln : null, w.dq, s.ln1, 'q', false);
  lin(needDx ? w.dln : null, w.dk, s.ln1, 'k', true);
  lin(needDx ? w.dln : null, w.dv, s.ln1, 'v', true);
  if (!needDx) return;
  normBackward(rec, env, grads, w.norm, w.dtmp, w.dln, xin, s.n1, `layers.${l}.attn_norm`, acc);
  residualAddInPlace(rec, w.dresid, w.dtmp);
}

/**
 * The output head's backward for tokens [r0, r0 + n), whose gradient dlogits is in acts.logits
 * rows [0, n): writes (=) w.dln rows [r0, r0 + n) = dlogits·head, and d(head) (= for the first
 * block of the step's first micro-batch, else +=) += dlogitsᵀ·lnf rows [r0, r0 + n).
 */
export function headBackward(rec: Recorder, env: LayerEnv, grads: Grads, acts: Activations, w: BackwardWork, r0: number, n: number, acc: boolean): void {
  const head = headName(env);
  const dlogits = matrixBlock(acts.logits, [0, n]);
  matmul(rec, matrixBlock(w.dln, [r0, n]), dlogits, env.weights.param(head));
  const dHead = grads.get(head);
  if (dHead) matmul(rec, dHead, dlogits, matrixBlock(acts.lnf, [r0, n]), { transA: true, accumulate: acc || r0 > 0 });
}

/**
 * The whole backward pass below the output head: on entry w.dln = dL/dlnf from the head
 * (headBackward, every block of rows); `dvalues` [N] is the value loss's gradient, when the job
 * has a value head.
 */
export function modelBackward(rec: Recorder, env: LayerEnv, grads: Grads, b: GpuBatch, acts: Activations, w: BackwardWork,
  dvalues: Tensor | null, acc: boolean): void {
  const { cfg, weights } = env;
  const L = cfg.nLayer;
  const dHead = grads.get(headName(env));
  // value head: values = lnf·w_vᵀ + b_v
  if (dvalues) {
    const dv2 = view(dvalues, [b.N, 1]);
    matmul(rec, w.dln, dv2, weights.param('value_head.weight'), { accumulate: true });
    const dw = grads.get('value_head.weight');
    const db = grads.get('value_head.bias');
    if (dw) matmul(rec, dw, dv2, acts.lnf, { transA: true, accumulate: acc });
    if (db) matmul(rec, view(db, [1, 1]), env.ones, dv2, { accumulate: acc });
  }
  normBackward(rec, env, grads, w.norm, w.dresid, w.dln, acts.resid[L], acts.nf, 'final_norm', acc);
  for (let l = L - 1; l >= 0; l--) {
    if (acts.recompute) blockForward(rec, env, b, blockActs(acts, l), acts.proj, l, acts.resid[l], acts.resid[l + 1]);
    blockBackward(rec, env, grads, b, acts, w, l, acc);
  }
  // embeddings: x0 = tok_emb[ids] (+ pos_emb[positions])
  const dTok = grads.get('tok_emb.weight');
  if (dTok) embeddingBackward(rec, dTok, w.dresid, b.ids, w.embScratch!, { accumulate: acc || (cfg.tieEmbeddings && Boolean(dHead)) });
  const dPos = grads.get('pos_emb.weight');
  if (dPos) embeddingBackward(rec, dPos, w.dresid, b.positions, w.embScratch!, { accumulate: acc });
}
