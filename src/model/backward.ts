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
 *   per block l = L−1 .. 0 (recompute: rerun block l's forward first), the record's steps:
 *     sandwich: dm = post_norm_backward(dresid), else dm = dresid
 *     dact = dm·W_down (+ LoRA)               d(down) from dm and act
 *     gelu:   dh = gelu'(h)·dact;             dln = dh·W_up
 *     gated:  dgate, dup = act'(dact);        dln = dgate·W_gate + dup·W_up
 *     dresid += mlp_norm_backward(dln)       (now dL/dmid)
 *     sandwich: do = post_norm_backward(dresid), else do = dresid;  datt = do·W_o
 *     dq, dk, dv = attention_backward(datt); rope: un-rotate dq, dk in place (RoPE backward)
 *     qkNorm: dq, dk = per-head rmsnorm_backward(dq, dk)
 *     dln = dq·W_q + dk·W_k + dv·W_v
 *     dresid += attn_norm_backward(dln)      (now dL/dxin)
 *   embedScale: dresid ·= √C; d(tok_emb) += scatter(dresid, ids); learned: d(pos_emb) += scatter(dresid, positions)
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
import { residualAddInPlace, scaleInPlace } from '../ops/residual.ts';
import { swigluBackward } from '../ops/swiglu.ts';
import { archOf, attentionScale, layerPlan } from './arch.ts';
import type { GpuBatch } from './batch.ts';
import { heads } from './block.ts';
import type { LoraTarget } from './config.ts';
import { embeddingScale } from './embed.ts';
import { type Activations, blockActs, headName, trainingPass } from './forward.ts';
import { blockForward } from './block.ts';
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
  readonly dqRaw: Tensor | null; // [N, Q] qkNorm: gradient of q before its per-head norm
  readonly dkRaw: Tensor | null; // [N, K]
  readonly dproj: Tensor | null; // [N, C] sandwich: gradient of a projection before its norm
  readonly dact: Tensor; // [N, F]
  readonly dh: Tensor; // [N, F]
  readonly dup: Tensor | null; // [N, F] gated MLPs
  readonly attWork: Tensor; // [B, Hq, T, 2]
  readonly norm: NormWork;
  readonly embScratch: Tensor | null; // u32, when an embedding is trainable
}

export function allocBackwardWork(arena: Arena, env: LayerEnv, B: number, T: number, trainEmbeddings: boolean): BackwardWork {
  const { cfg } = env;
  const arch = archOf(cfg);
  const N = B * T;
  const C = cfg.dModel, Q = cfg.nHead * cfg.headDim, K = cfg.nKvHead * cfg.headDim, F = cfg.dFF, D = cfg.headDim;
  const a = (shape: number[], label: string) => arena.alloc(shape, 'f32', label);
  const embRows = Math.max(cfg.vocabSize, arch.positions === 'learned' ? cfg.maxSeqLen : 0);
  const qk = arch.qkNorm;
  const scratch = Math.max(normScratchSize(cfg, N), qk ? normScratchSize(cfg, N * cfg.nHead, D) : 0, qk ? normScratchSize(cfg, N * cfg.nKvHead, D) : 0);
  return {
    dresid: a([N, C], 'dresid'), dtmp: a([N, C], 'dtmp'), dln: a([N, C], 'dln'),
    datt: a([N, Q], 'datt'), dq: a([N, Q], 'dq'), dk: a([N, K], 'dk'), dv: a([N, K], 'dv'),
    dqRaw: qk ? a([N, Q], 'dq_raw') : null, dkRaw: qk ? a([N, K], 'dk_raw') : null,
    dproj: arch.sandwichNorms ? a([N, C], 'dproj') : null,
    dact: a([N, F], 'dact'), dh: a([N, F], 'dh'), dup: arch.mlp !== 'gelu' ? a([N, F], 'dup') : null,
    attWork: a([B, cfg.nHead, T, 2], 'attention work'),
    norm: { scratch: a([scratch], 'norm scratch'), sinkW: a([C], 'frozen norm dweight'), sinkB: a([C], 'frozen norm dbias'), sinkD: qk ? a([D], 'frozen qk-norm dweight') : null },
    embScratch: trainEmbeddings ? arena.alloc([embeddingScratchSize(N, embRows)], 'u32', 'embedding scratch') : null,
  };
}

/** Block l's backward: on entry work.dresid = dL/d(resid[l+1]); on exit dL/d(resid[l]) (block 0: only when something below is trainable). */
export function blockBackward(rec: Recorder, env: LayerEnv, grads: Grads, b: GpuBatch, acts: Activations, w: BackwardWork, l: number, acc: boolean): void {
  const { cfg } = env;
  const arch = archOf(cfg);
  const settings = layerPlan(cfg)[l];
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = cfg;
  const s = blockActs(acts, l);
  const xin = acts.resid[l];
  const m = (t: LoraTarget) => moduleName(l, t);
  const lin = (dx: Tensor | null, dy: Tensor, x: Tensor, t: LoraTarget, accumulateDx: boolean) =>
    linearBackward(rec, env, grads, dx, dy, x, m(t), s.u.get(t), accumulateDx, acc);
  const h = (t: Tensor, H: number) => heads(t, b.B, b.T, H, D);
  // Through a sandwich norm: dL/d(projection) from dL/d(its normed output), which is dresid.
  const branch = (saved: Tensor | null, stats: typeof s.npa, prefix: string): Tensor => {
    if (!arch.sandwichNorms) return w.dresid;
    normBackward(rec, env, grads, w.norm, w.dproj!, w.dresid, saved!, stats!, prefix, acc);
    return w.dproj!;
  };
  // MLP half: resid[l+1] = mid + [norm](down(act))
  lin(w.dact, branch(s.mlpOut, s.npm, `layers.${l}.mlp_post_norm`), s.act, 'down', false);
  if (arch.mlp === 'gelu') {
    geluBackward(rec, w.dh, s.h, w.dact);
    lin(w.dln, w.dh, s.ln2, 'up', false);
  } else {
    swigluBackward(rec, w.dh, w.dup!, w.dact, s.h, s.up!, { act: arch.mlp === 'geglu' ? 'gelu' : 'silu' });
    lin(w.dln, w.dh, s.ln2, 'gate', false);
    lin(w.dln, w.dup!, s.ln2, 'up', true);
  }
  normBackward(rec, env, grads, w.norm, w.dtmp, w.dln, s.mid, s.n2, `layers.${l}.mlp_norm`, acc);
  residualAddInPlace(rec, w.dresid, w.dtmp);
  // attention half: mid = xin + [norm](o(att))
  lin(w.datt, branch(s.attnOut, s.npa, `layers.${l}.attn_post_norm`), s.att, 'o', false);
  attentionBackward(rec, h(w.dq, Hq), h(w.dk, Hkv), h(w.dv, Hkv), w.attWork,
    h(w.datt, Hq), h(s.q, Hq), h(s.k, Hkv), h(s.v, Hkv), h(s.att, Hq), s.lse!,
    { segments: b.segments, window: settings.window, scale: attentionScale(cfg) });
  if (settings.invFreq) ropeQK(rec, settings.invFreq, h(w.dq, Hq), h(w.dk, Hkv), view(b.positions, [b.B, b.T]), -1);
  let dQ = w.dq, dK = w.dk;
  if (arch.qkNorm) {
    const N = b.N;
    normBackward(rec, env, grads, w.norm, view(w.dqRaw!, [N * Hq, D]), view(w.dq, [N * Hq, D]), view(s.qRaw!, [N * Hq, D]), s.nq!, `layers.${l}.attn.q_norm`, acc);
    normBackward(rec, env, grads, w.norm, view(w.dkRaw!, [N * Hkv, D]), view(w.dk, [N * Hkv, D]), view(s.kRaw!, [N * Hkv, D]), s.nk!, `layers.${l}.attn.k_norm`, acc);
    dQ = w.dqRaw!;
    dK = w.dkRaw!;
  }
  // Below block 0 lie only the embeddings: with those and attn_norm frozen (LoRA), nothing needs
  // dL/dxin, so the q/k/v input gradients and the norm's backward are not recorded at all.
  const needDx = l > 0 || grads.has('tok_emb.weight') || grads.has('pos_emb.weight') || grads.has(`layers.${l}.attn_norm.weight`);
  lin(needDx ? w.dln : null, dQ, s.ln1, 'q', false);
  lin(needDx ? w.dln : null, dK, s.ln1, 'k', true);
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
  const pass = trainingPass(env, b, acts);
  for (let l = L - 1; l >= 0; l--) {
    if (acts.recompute) blockForward(rec, env, pass, blockActs(acts, l), l, acts.resid[l], acts.resid[l + 1]);
    blockBackward(rec, env, grads, b, acts, w, l, acc);
  }
  // embeddings: x0 = tok_emb[ids] (· √C) (+ pos_emb[positions])
  const dTok = grads.get('tok_emb.weight');
  if (archOf(cfg).embedScale && dTok) scaleInPlace(rec, w.dresid, embeddingScale(cfg));
  if (dTok) embeddingBackward(rec, dTok, w.dresid, b.ids, w.embScratch!, { accumulate: acc || (cfg.tieEmbeddings && Boolean(dHead)) });
  const dPos = grads.get('pos_emb.weight');
  if (dPos) embeddingBackward(rec, dPos, w.dresid, b.positions, w.embScratch!, { accumulate: acc });
}
